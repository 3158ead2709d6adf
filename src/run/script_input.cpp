// The input loop's Python scripts: discovery in the script's own Python process, then one build
// per selected model (input_loop.h).
#include <fmt/format.h>

#include <csignal>

#include <chrono>
#include <functional>
#include <iostream>
#include <optional>
#include <tuple>

#include "pipeline/first_tool.h"
#include "run/input_loop.h"
#include "run/sweep.h"
#include "turnkey/discovery/protocol_schema.h"
#include "turnkey/discovery/script_end.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/sha256.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void record_model(BuildStats& s, const DiscoveredModel& m, const DiscoveryResult& disc,
                  const std::string& script, const std::string& labels) {
  s.set("script", script);
  s.set("input", script);
  s.set("model_name", m.name);
  s.set("class", m.class_name);
  s.set("class_path", m.class_path);
  s.set("model_type", m.model_type);
  s.set("location", fmt::format("{}, line {}", m.file, m.line));
  s.set("parameters", m.parameters);
  s.set("parameter_bytes", m.parameter_bytes);
  s.set("hash", m.hash8());
  s.set("hash_full", m.hash);
  s.set("inputs", m.inputs);
  s.set("executed", m.executed);
  s.set("depth", m.depth);
  if (m.first_call_s >= 0) s.set("first_call_s", m.first_call_s);
  s.set("labels", labels);
  s.set("torch_version", disc.torch_version);
  s.set("onnx_python_version", disc.onnx_version);
  if (!disc.onnxscript_version.empty()) s.set("onnxscript_version", disc.onnxscript_version);
  s.set("python_version", disc.python_version);
  if (!m.framework_versions.empty()) s.set("keras_versions", m.framework_versions);
}

}  // namespace

void InputLoop::run_script(const InputItem& item) {
  const SweepPlan plan = sweep_plan(ctx_.request.sequence, "discover");
  if (plan.batches.empty()) {
    run_script_once(item, plan, std::nullopt, nullptr);
    return;
  }
  // A batch sweep: one run of the script per batch size, with --batch_size B (what parse()
  // reads). A model the same as at an earlier size (its hash) is not built again.
  ScriptSweep sweep;
  for (const int64_t b : plan.batches) {
    const size_t built_before = sweep.built.size();
    const int repeated_before = sweep.repeated;
    const bool ran = run_script_once(item, plan, b, &sweep);
    if (!ran) break;  // no interpreter: the other sizes would not run either
    if (sweep.built.size() == built_before && sweep.repeated > repeated_before) {
      ctx_.notice(fmt::format(
          "{}: --batch_size {} gave the same models as --batch_size {}: the script does not "
          "read --batch_size (turnkey.parse([\"batch_size\"])); benchmarked once",
          item.given, b, plan.batches.front()));
      break;
    }
  }
  if (!sweep.tables.empty()) {
    std::vector<ModelBlock> blocks;
    for (auto& [name, entry] : sweep.tables) {
      if (entry.second.size() > 1) blocks.push_back(entry.second.block(entry.first));
    }
    if (!blocks.empty()) {
      printer_.print(item.path.filename().string() + " (batch sweep)", blocks);
    }
  }
}

// One run of a script: what every model of it shares.
struct InputLoop::ScriptPass {
  ScriptPass(const InputItem& item, const SweepPlan& plan, std::optional<int64_t> batch,
             ScriptSweep* sweep)
      : item(item), plan(plan), batch(batch), sweep(sweep) {}

  const InputItem& item;
  const SweepPlan& plan;
  std::optional<int64_t> batch;
  ScriptSweep* sweep;
  std::string script_name, forced_name;
  ScriptOptions so;
  std::optional<ScriptSession> session;
  DiscoveryResult disc;
  double discover_s = 0;
  Labels labels;
  std::string discover_log;
  Status ended_status = Status::DiscoveryFailed;
  bool build_anything = false;
  int builds_started = 0;

  // The model is one the input's ::hash filter selects (all without a filter).
  bool selected(const DiscoveredModel& m) const {
    if (item.hashes.empty()) return true;
    for (const std::string& h : item.hashes) {
      if (!h.empty() && m.hash.rfind(h, 0) == 0) return true;
    }
    return false;
  }
};

bool InputLoop::find_script_python(const InputItem& item) {
  // Looked up once per run: every script needs the same interpreter.
  if (python_.empty() && python_error_.empty()) {
    try {
      python_ = find_python(ctx_.request.global.python);
    } catch (const Error& e) {
      python_error_ = e.what();
      input_error(item.given, Status::DiscoveryFailed, python_error_);
      return false;
    }
  }
  if (!python_error_.empty()) {
    input_error(item.given, Status::DiscoveryFailed,
                "skipped: no Python interpreter with torch (see above)");
    return false;
  }
  return true;
}

ScriptOptions InputLoop::script_options(const InputItem& item, const json& discover_opts,
                                        std::optional<int64_t> batch) const {
  ScriptOptions so;
  // --attach (the Python API): the models live in the process that started us.
  const std::string attach = discover_opts.value("attach", "");
  if (!attach.empty()) {
    std::tie(so.attach_event_fd, so.attach_command_fd) = parse_attach_fds(attach);
  }
  so.python = attach.empty() ? python_ : "the calling Python process";
  so.script = fs::absolute(item.path).lexically_normal();
  so.script_args = discover_opts.value("script_args", "");
  if (batch) {
    so.script_args += fmt::format("{}--batch_size {}", so.script_args.empty() ? "" : " ", *batch);
  }
  so.max_depth = discover_opts.value("max_depth", 0);
  so.bind_paths = {ctx_.cache_dir};
  so.sandbox = ctx_.sandbox;
  so.cache_dir = ctx_.cache_dir;
  for (const std::string& p : ctx_.request.global.sandbox_allow) so.sandbox_allow.push_back(p);
  return so;
}

bool InputLoop::run_script_once(const InputItem& item, const SweepPlan& plan,
                                std::optional<int64_t> batch, ScriptSweep* sweep) {
  const json discover_opts = tool_options(ctx_.request.sequence, "discover");
  if (discover_opts.value("attach", "").empty() && !find_script_python(item)) return false;
  ScriptPass pass(item, plan, batch, sweep);
  pass.script_name = item.path.filename().string();
  pass.forced_name = discover_opts.value("build_name", "");
  ctx_.progress(ProgressEvent::stage_started("discover"));
  pass.so = script_options(item, discover_opts, batch);
  std::cout << std::flush;
  std::cerr << std::flush;

  auto t0 = std::chrono::steady_clock::now();
  pass.session.emplace(pass.so);
  pass.disc = pass.session->discover();
  pass.discover_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  pass.labels = read_labels(item.path);
  const DiscoveryResult& disc = pass.disc;
  if (!disc.models.empty()) models_seen_ = true;
  pass.build_anything = !sequence_after(ctx_.request.sequence, "discover").empty();
  pass.discover_log = fmt::format(
      "script {}\npython {} (Python {}, torch {}, onnx {})\nscript status {}{}\n{} models "
      "discovered in {:.3f} s\n",
      pass.so.script.string(), pass.so.python, disc.python_version, disc.torch_version,
      disc.onnx_version, disc.script_status, disc.error.empty() ? "" : ": " + disc.error,
      disc.models.size(), pass.discover_s);
  for (const std::string& w : disc.warnings) pass.discover_log += "warning: " + w + "\n";
  if (disc.warnings_dropped > 0) {
    pass.discover_log += fmt::format(
        "warning: {} more warnings not kept (at most {} warnings, {} bytes, are kept)\n",
        disc.warnings_dropped, protocol::kMaxWarnings, protocol::kMaxWarningBytes);
  }
  if (!disc.traceback.empty()) pass.discover_log += "\n" + disc.traceback;
  pass.ended_status =
      python_end_status(disc.error_status, disc.signal).value_or(Status::DiscoveryFailed);

  std::vector<ModelBlock> blocks;
  for (const DiscoveredModel& m : disc.models) blocks.push_back(model_of_script(pass, m));
  pass.session->close();
  if (pass.session->exit_overdue()) {
    std::cout << std::flush;
    std::cerr << fmt::format(
        "turnkey: {}: the script's process was still running {} s after its last command (an "
        "atexit handler or a thread of the script that does not end): killed; its results "
        "stand\n",
        pass.item.given, ScriptSession::kExitGrace.count()) << std::flush;
  }
  printer_.print(batch ? fmt::format("{} (--batch_size {})", pass.script_name, *batch)
                       : pass.script_name,
                 blocks, script_footer(pass));
  return true;
}

ModelBlock InputLoop::model_of_script(ScriptPass& pass, const DiscoveredModel& m) {
  Build build;
  build.block = discovered_model_block(m);
  if (!pass.build_anything || !pass.selected(m)) return std::move(build.block);
  ScriptSweep* sweep = pass.sweep;
  if (sweep && sweep->built.count(m.hash) > 0) {
    ++sweep->repeated;
    build.block.status = fmt::format(
        "Not built again: the same model as at --batch_size {} (the script does not pass "
        "--batch_size to it)",
        sweep->built[m.hash]);
  } else if (pass.disc.script_status == script_end::kException && m.first_call_s < 0) {
    // The script's exception came out of this model's first call (it never returned): there is
    // nothing to export, and the footer reports the exception once, as the script's.
    build.block.status = "Not built: its first call raised the script's exception (below)";
  } else if (!pass.forced_name.empty() && pass.builds_started > 0) {
    // --build-name names one build: a second model would overwrite the first.
    ctx_.any_failed = true;
    build.block.status = fmt::format(
        "Not built: --build-name {} names one build and {} has more models (select one "
        "with {}::HASH)",
        pass.forced_name, pass.script_name, pass.script_name);
  } else {
    ++pass.builds_started;
    if (sweep) sweep->built[m.hash] = pass.batch.value_or(0);
    return build_points(pass, m);
  }
  return std::move(build.block);
}

// One pass of the model's build per concurrency (sweep.h); a batch sweep's points are the runs,
// each also recorded in the model's table across them.
ModelBlock InputLoop::build_points(ScriptPass& pass, const DiscoveredModel& m) {
  SweepSettings settings{pass.plan.at_batch(pass.batch),
                         fmt::format("{}: {}", pass.item.given, m.name)};
  if (pass.sweep) {
    auto& entry = pass.sweep->tables[m.name + " " + m.class_name];
    if (entry.second.size() == 0) entry.first = discovered_model_block(m);
    settings.also = &entry.second;
  }
  const bool last_use = &m == &pass.disc.models.back() && !settings.plan.is_sweep();
  const ModelSource source{m,           pass.disc,         *pass.session,   pass.so.script.string(),
                           pass.labels, pass.discover_log, pass.discover_s, pass.ended_status,
                           pass.forced_name, last_use};
  Build build;  // the last pass's, reported to the script's process
  ModelBlock block = run_sweep(
      settings,
      [&](const SweepPoint& point, const SweepRecord& record) {
        build = Build{};
        build.block = discovered_model_block(m);
        build_model(pass.item, source, point, build, record);
        return build.block;
      },
      [&](const std::string& text) { ctx_.notice(text); });
  pass.session->report_built(
      m.id, {{"build_name", build.build_name},
             {"build_dir", build.dir ? build.dir->path().string() : ""},
             {"status", build.state.build_status.empty() ? status_name(Status::Failed)
                                                         : build.state.build_status},
             {"error", build.state.error},
             {"failed_tool", build.state.failed_tool}});
  return block;
}

// The script's own end under its models: a failure (with its log), no models, or a hash filter
// that matched none.
ScriptFooter InputLoop::script_footer(ScriptPass& pass) {
  const InputItem& item = pass.item;
  const DiscoveryResult& disc = pass.disc;
  ScriptFooter footer;
  const bool script_failed = disc.script_status == script_end::kException || disc.script_status == script_end::kCrashed ||
                             (disc.script_status == script_end::kExit && disc.exit_code != 0);
  if (script_failed) {
    ctx_.any_failed = true;
    if (disc.error_type == "KeyboardInterrupt" || disc.signal == SIGINT) ctx_.interrupted = true;
    fs::path log = write_script_log(item, pass.discover_log);
    ctx_.note_failure(pass.ended_status, "discover",
                      disc.script_status == script_end::kExit
                          ? fmt::format("the script exited with code {}", disc.exit_code)
                          : disc.error,
                      disc.signal, log);
    footer.status = disc.script_status == script_end::kExit
                        ? fmt::format("Script failed: exited with code {}", disc.exit_code)
                        : "Script failed: " + one_line(disc.error);
    footer.detail = "Log:            " + log.string();
    if (show_tracebacks() && !disc.traceback.empty()) {
      std::cerr << disc.traceback << std::flush;
    }
  }
  if (disc.models.empty() && !script_failed) {
    // A call discovery had to skip (a Keras model whose hash could not be taken) says why.
    footer.status = disc.warnings.empty() ? std::string("No models discovered")
                                          : "No models discovered: " + disc.warnings.front();
  }
  bool filter_matched = item.hashes.empty();
  for (const auto& m : disc.models) filter_matched = filter_matched || pass.selected(m);
  if (!filter_matched) {
    ctx_.any_failed = true;
    ctx_.note_failure(
        Status::InvalidInput, "discover",
        fmt::format("no model matches the hash filter ::{}", fmt::join(item.hashes, ",")));
    footer.status =
        fmt::format("No model matches the hash filter ::{}", fmt::join(item.hashes, ","));
  }
  return footer;
}

void InputLoop::build_model(const InputItem& item, const ModelSource& src, const SweepPoint& point,
                            Build& build, const SweepRecord& record) {
  const DiscoveredModel& m = src.model;
  build.model = &m;
  build.session = src.disc.ready ? &src.session : nullptr;
  if (build.session && src.last_use && !src.session.attached()) {
    // The weights in the script's process are not held while a runtime loads its own copy.
    build.release_script_process = [session = build.session] { return session->close(); };
  }
  apply_point(build, point);
  build.build_name =
      src.forced_name.empty() ? runner_.claim_build_name(item.path, m.hash8()) : src.forced_name;
  const std::string first_key =
      sha256_hex(fmt::format("discover|{}|torch {}", m.hash, src.disc.torch_version));
  std::optional<BuildLock> lock;
  runner_.contain(build, "discover", [&] {
    lock.emplace(ctx_.cache_dir / build.build_name, [&] { waiting_for(build.build_name); });
    runner_.open_build(build, ctx_.cache_dir, item.path, "discover", first_key, src.discover_s);
    build.state.model_name = m.name;
    build.state.hash_full = m.hash;
    record_model(build.stats, m, src.disc, src.script, labels_to_string(src.labels));
    runner_.write_log(build, "discover", src.discover_log);
    build.block.sig_fields.push_back({"Build dir", build.dir->path().string()});
    if (!src.disc.ready) {
      runner_.fail(build, "discover", src.ended_status,
                   "the script's process ended before its models could be built (" +
                       one_line(src.disc.error) + ")",
                   src.disc.signal);
    } else {
      runner_.run_tools(build, "discover");
    }
  });
  record(build, "");
  runner_.finish_build(build);
}

fs::path InputLoop::write_script_log(const InputItem& item, const std::string& text) const {
  std::string path_hash = sha256_hex(fs::absolute(item.path).string()).substr(0, 8);
  fs::path dir = ctx_.cache_dir / "discovery_logs";
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::path log = dir / (make_build_name(item.path.stem().string(), path_hash) + ".txt");
  try {
    write_file_atomic(log, text);
  } catch (const std::exception&) {
  }
  return log;
}

}  // namespace turnkey::engine_internal
