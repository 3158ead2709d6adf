// The input loop's Python scripts: discovery in the script's own Python process, then one build
// per selected model (input_loop.h).
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <optional>
#include <tuple>

#include "first_tool.h"
#include "input_loop.h"
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
  s.set("labels", labels);
  s.set("torch_version", disc.torch_version);
  s.set("onnx_python_version", disc.onnx_version);
  s.set("python_version", disc.python_version);
}

}  // namespace

void InputLoop::run_script(const InputItem& item) {
  const std::string script_name = item.path.filename().string();
  const std::vector<ToolCall>& sequence = ctx_.request.sequence;
  json discover_opts = tool_options(sequence, "discover");
  // --attach (the Python API): the models live in the process that started us.
  const std::string attach = discover_opts.value("attach", "");
  const std::string forced_name = discover_opts.value("build_name", "");
  // Looked up once per run: every script needs the same interpreter.
  if (attach.empty() && python_.empty() && python_error_.empty()) {
    try {
      python_ = find_python(ctx_.request.global.python);
    } catch (const Error& e) {
      python_error_ = e.what();
      input_error(item.given, Status::DiscoveryFailed, python_error_);
      return;
    }
  }
  if (attach.empty() && !python_error_.empty()) {
    input_error(item.given, Status::DiscoveryFailed,
                "skipped: no Python interpreter with torch (see above)");
    return;
  }
  const std::string python = attach.empty() ? python_ : "the calling Python process";
  ctx_.progress({{"e", "stage"}, {"stage", "discover"}});
  ScriptOptions so;
  if (!attach.empty()) {
    std::tie(so.attach_event_fd, so.attach_command_fd) = parse_attach_fds(attach);
  }
  so.python = python;
  so.script = fs::absolute(item.path).lexically_normal();
  so.script_args = discover_opts.value("script_args", "");
  so.max_depth = discover_opts.value("max_depth", 0);
  so.bind_paths = {ctx_.cache_dir};
  so.sandbox = ctx_.sandbox;
  so.cache_dir = ctx_.cache_dir;
  for (const std::string& p : ctx_.request.global.sandbox_allow) so.sandbox_allow.push_back(p);
  std::cout << std::flush;
  std::cerr << std::flush;

  auto t0 = std::chrono::steady_clock::now();
  ScriptSession session(so);
  DiscoveryResult disc = session.discover();
  const double discover_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Labels labels = read_labels(item.path);
  if (!disc.models.empty()) models_seen_ = true;

  auto selected = [&](const DiscoveredModel& m) {
    if (item.hashes.empty()) return true;
    for (const std::string& h : item.hashes) {
      if (!h.empty() && m.hash.rfind(h, 0) == 0) return true;
    }
    return false;
  };
  const bool build_anything = !sequence_after(sequence, "discover").empty();
  std::string discover_log = fmt::format(
      "script {}\npython {} (Python {}, torch {}, onnx {})\nscript status {}{}\n{} models "
      "discovered in {:.3f} s\n",
      so.script.string(), python, disc.python_version, disc.torch_version, disc.onnx_version,
      disc.script_status, disc.error.empty() ? "" : ": " + disc.error, disc.models.size(),
      discover_s);
  for (const std::string& w : disc.warnings) discover_log += "warning: " + w + "\n";
  if (!disc.traceback.empty()) discover_log += "\n" + disc.traceback;
  const Status ended_status =
      python_end_status(disc.error_status, disc.signal).value_or(Status::DiscoveryFailed);

  std::vector<ModelBlock> blocks;
  int builds_started = 0;
  for (const DiscoveredModel& m : disc.models) {
    Build build;
    build.block = discovered_model_block(m);
    if (build_anything && selected(m) && !forced_name.empty() && builds_started > 0) {
      // --build-name names one build: a second model would overwrite the first.
      ctx_.any_failed = true;
      build.block.status = fmt::format(
          "Not built: --build-name {} names one build and {} has more models (select one "
          "with {}::HASH)",
          forced_name, script_name, script_name);
    } else if (build_anything && selected(m)) {
      ++builds_started;
      build.model = &m;
      build.session = disc.ready ? &session : nullptr;
      build.build_name =
          forced_name.empty() ? runner_.claim_build_name(item.path, m.hash8()) : forced_name;
      const std::string first_key =
          sha256_hex(fmt::format("discover|{}|torch {}", m.hash, disc.torch_version));
      std::optional<BuildLock> lock;
      runner_.contain(build, "discover", [&] {
        lock.emplace(ctx_.cache_dir / build.build_name, [&] { waiting_for(build.build_name); });
        runner_.open_build(build, ctx_.cache_dir, item.path, "discover", first_key, discover_s);
        build.state.model_name = m.name;
        build.state.hash_full = m.hash;
        record_model(build.stats, m, disc, so.script.string(), labels_to_string(labels));
        runner_.write_log(build, "discover", discover_log);
        build.block.sig_fields.push_back({"Build dir", build.dir->path().string()});
        if (!disc.ready) {
          runner_.fail(build, "discover", ended_status,
                       "the script's process ended before its models could be built (" +
                           one_line(disc.error) + ")",
                       disc.signal);
        } else {
          runner_.run_tools(build, "discover");
        }
      });
      runner_.finish_build(build);
      lock.reset();
      session.report_built(
          m.id, {{"build_name", build.build_name},
                 {"build_dir", build.dir ? build.dir->path().string() : ""},
                 {"status", build.state.build_status.empty() ? status_name(Status::Failed)
                                                             : build.state.build_status},
                 {"error", build.state.error},
                 {"failed_tool", build.state.failed_tool}});
    }
    blocks.push_back(std::move(build.block));
  }
  session.close();

  ScriptFooter footer;
  const bool script_failed = disc.script_status == "exception" || disc.script_status == "crashed" ||
                             (disc.script_status == "exit" && disc.exit_code != 0);
  if (script_failed) {
    ctx_.any_failed = true;
    fs::path log = write_script_log(item, discover_log);
    ctx_.note_failure(ended_status, "discover",
                      disc.script_status == "exit"
                          ? fmt::format("the script exited with code {}", disc.exit_code)
                          : disc.error,
                      disc.signal, log);
    footer.status = disc.script_status == "exit"
                        ? fmt::format("Script failed: exited with code {}", disc.exit_code)
                        : "Script failed: " + one_line(disc.error);
    footer.detail = "Log:            " + log.string();
    if (show_tracebacks() && !disc.traceback.empty()) {
      std::cerr << disc.traceback << std::flush;
    }
  }
  if (disc.models.empty() && !script_failed) footer.status = "No models discovered";
  bool filter_matched = item.hashes.empty();
  for (const auto& m : disc.models) filter_matched = filter_matched || selected(m);
  if (!filter_matched) {
    ctx_.any_failed = true;
    ctx_.note_failure(
        Status::InvalidInput, "discover",
        fmt::format("no model matches the hash filter ::{}", fmt::join(item.hashes, ",")));
    footer.status =
        fmt::format("No model matches the hash filter ::{}", fmt::join(item.hashes, ","));
  }
  printer_.print(script_name, blocks, footer);
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
