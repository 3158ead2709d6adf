#include "run/input_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>

#include "pipeline/first_tool.h"
#include "pipeline/reuse_policy.h"
#include "run/sweep.h"
#include "turnkey/transforms/batch_variant.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/cache/build_records.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/sha256.h"
#include "turnkey/discovery/sandbox.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

InputOutcome InputLoop::run_item(const InputItem& item) {
  ctx_.outcome = InputOutcome{};
  models_seen_ = false;
  run_contained(item);
  if (!ctx_.outcome.status) {
    ctx_.outcome.status =
        ctx_.outcome.builds.empty() && !models_seen_ ? Status::NoModels : Status::Successful;
  }
  return ctx_.outcome;
}

int InputLoop::run_one(const InputItem& item) {
  ctx_.progress(ProgressEvent::done(run_item(item)));
  return ctx_.any_failed ? 1 : 0;
}

int InputLoop::run() {
  const GlobalOptions& global = ctx_.request.global;
  std::vector<std::string> args = global.inputs;
  if (!global.search_dir.empty()) {
    for (std::string& a : args) {
      if (!fs::path(a).is_absolute()) a = (fs::path(global.search_dir) / a).string();
    }
  }
  std::vector<InputItem> items = expand_inputs(args);
  if (items.empty()) throw Error(ErrorKind::InvalidInput, "no inputs given");
  const json discover_opts = tool_options(ctx_.request.sequence, "discover");
  if (items.size() > 1 && (!discover_opts.value("build_name", "").empty() ||
                           !discover_opts.value("attach", "").empty())) {
    throw Error(ErrorKind::InvalidInput, fmt::format("{}: give one input, not {}",
                                                     discover_opts.value("attach", "").empty()
                                                         ? "--build-name names one build"
                                                         : "--attach serves one script",
                                                     items.size()));
  }
  size_t failed = 0, ran = 0;
  for (const InputItem& item : items) {
    if (ctx_.interrupted) break;
    const bool failed_before = ctx_.any_failed;
    ctx_.any_failed = false;
    json outcome = run_item(item).to_json();
    outcome["input"] = item.given;
    input_outcomes_.push_back(std::move(outcome));
    ++ran;
    if (ctx_.any_failed) ++failed;
    ctx_.any_failed = ctx_.any_failed || failed_before;
  }
  if (!global.labels.empty() && labelled_scripts_ == 0) {
    ctx_.notice(fmt::format("no script matched --labels {}", fmt::join(global.labels, " ")));
  }
  if (ctx_.sandbox) std::cout << kSandboxedLine << "\n";
  std::cout << closing_line(items.size(), failed, ctx_.interrupted, ran) << "\n" << std::flush;
  if (ctx_.interrupted) return 130;  // 128 + SIGINT, as a shell reports a Ctrl-C'd command
  return ctx_.any_failed ? 1 : 0;
}

void InputLoop::run_contained(const InputItem& item) {
  if (!item.error.empty()) {
    input_error(item.given, Status::InvalidInput, item.error);
    return;
  }
  std::string first;
  try {
    first = first_tool_for(ctx_.request.sequence, item.path);
  } catch (const Error& e) {
    input_error(item.given, Status::InvalidInput, e.what());
    return;
  }
  try {
    run_input(item, first);
  } catch (const std::exception& e) {
    // What escaped the builds (they contain their own): the input's start or its end.
    std::cout << std::flush;
    input_error(item.given, status_of_failure(failure_status_of_tool(first), e), e.what());
  }
}

void InputLoop::run_input(const InputItem& item, const std::string& first) {
  if (first == "discover") {
    if (!ctx_.request.global.labels.empty() &&
        !labels_match(read_labels(item.path), ctx_.request.global.labels)) {
      ctx_.note_failure(Status::SkippedByFilter, "inputs", "labels do not match --labels");
      return;  // filtered out by --labels: not an error
    }
    ++labelled_scripts_;
    run_script(item);
  } else if (first == "load-onnx") {
    run_onnx_file(item);
  } else {
    run_load_build(item);
  }
}

void InputLoop::input_error(const std::string& given, Status status, std::string reason) {
  ctx_.any_failed = true;
  ctx_.note_failure(status, "inputs", reason);
  // Lower layers may already name the file; name it once.
  if (reason.rfind(given + ": ", 0) == 0) reason.erase(0, given.size() + 2);
  std::cout << std::flush;
  std::cerr << "turnkey: " << given << ": " << one_line(reason) << "\n" << std::flush;
}

void InputLoop::waiting_for(const std::string& build_name) const {
  ctx_.notice(fmt::format("waiting for another turnkey process building {}", build_name));
}

// ---- ONNX files
// ----------------------------------------------------------------------------------

void InputLoop::run_onnx_file(const InputItem& item) {
  const fs::path path = fs::absolute(item.path).lexically_normal();
  onnx_model::ModelFacts facts;
  try {
    facts = onnx_model::load_facts(path);
  } catch (const std::exception& e) {
    input_error(item.given, Status::InvalidInput, e.what());
    return;
  }
  SweepPlan plan = sweep_plan(ctx_.request.sequence, "load-onnx");
  if (!plan.batches.empty() &&
      std::none_of(facts.inputs.begin(), facts.inputs.end(), onnx_model::has_batch_dim)) {
    ctx_.notice(
        fmt::format("{}: --batch-sizes: no input has a batch dim (rank >= 2, or a "
                    "symbolic first dim): benchmarked at the model's own shapes",
                    item.given));
    plan.batches.clear();
  }
  const SweepSettings settings{plan, item.given};
  printer_.print(item.path.filename().string(),
                 {run_sweep(
                     settings,
                     [&](const SweepPoint& point, const SweepRecord& record) {
                       return run_onnx_point(item, facts, point, record);
                     },
                     [&](const std::string& text) { ctx_.notice(text); })});
}

ModelBlock InputLoop::run_onnx_point(const InputItem& item, const onnx_model::ModelFacts& facts,
                                     const SweepPoint& point, const SweepRecord& record) {
  auto t0 = std::chrono::steady_clock::now();
  Build build;
  build.onnx_path = facts.path;
  build.source_input = build.onnx_path;
  use_facts(build, facts);
  apply_point(build, point);
  const std::vector<ToolCall>& sequence = ctx_.request.sequence;
  build.input_shapes = point.input_shapes;
  // A batch point: every batched input's shape at that batch (and a rewritten model when the
  // file fixes another batch, made once the build dir is open).
  std::optional<onnx_model::BatchShapes> batch;
  std::string batch_error;
  if (point.batch) {
    try {
      batch = onnx_model::batch_input_shapes(
          facts, onnx_model::parse_input_shapes(point.input_shapes), *point.batch);
      build.input_shapes = onnx_model::input_shapes_text(batch->shapes);
    } catch (const Error& e) {
      batch_error = e.what();
    }
  }
  // --input-data is checked against the graph here, before any tool runs (prepare_inputs).
  build.input_data = tool_options(sequence, "benchmark").value("input_data", "");
  const std::string forced_name = tool_options(sequence, "discover").value("build_name", "");
  build.build_name = forced_name.empty()
                         ? runner_.claim_build_name(item.path, facts.sha256.substr(0, 8))
                         : forced_name;
  const std::string first_key =
      sha256_hex(fmt::format("load-onnx|{}|{}", facts.sha256, build.input_shapes));
  const std::string title = item.path.stem().string();
  build.block = onnx_file_block(title, facts, "");
  std::optional<BuildLock> lock;
  runner_.contain(build, "load-onnx", [&] {
    lock.emplace(ctx_.cache_dir / build.build_name, [&] { waiting_for(build.build_name); });
    const double load_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    runner_.open_build(build, ctx_.cache_dir, item.path, "load-onnx", first_key, load_s);
    load_onnx_point(item, facts, point, build, batch ? &*batch : nullptr, batch_error);
    runner_.run_tools(build, "load-onnx");
  });
  std::string why;
  if (build.failed && batch && !batch->fixed.empty() && build.state.failed_tool == "benchmark") {
    // The rewritten model loaded but its graph keeps the file's batch (a Reshape to constant
    // dims): a failed point's notice says that before the runtime's words.
    why = fmt::format(
        "the file fixes the batch of {} at another size and its graph does not run at batch {}: ",
        fmt::join(batch->fixed, ", "), *point.batch);
  }
  record(build, why);
  runner_.finish_build(build);
  lock.reset();
  return std::move(build.block);
}

// load-onnx's work on an opened build: the model's facts recorded, its batch copy made, its
// inputs checked and prepared (a model that cannot be fed fails here, where the user's
// --input-shapes belongs), and the tool's log.
void InputLoop::load_onnx_point(const InputItem& item, const onnx_model::ModelFacts& facts,
                                const SweepPoint& point, Build& build,
                                const onnx_model::BatchShapes* batch,
                                const std::string& batch_error) {
  const std::string title = item.path.stem().string();
  build.stats.set("model_name", title);
  build.stats.set("model_type", "ONNX file");
  build.stats.set("hash", facts.sha256.substr(0, 8));
  build.stats.set("hash_full", facts.sha256);
  build.stats.set("input", build.onnx_path.string());
  build.block = onnx_file_block(title, facts, build.dir->path().string());
  std::string log =
      fmt::format("loaded {}\nsha256 {}\nopset {}, IR {}, {} nodes, {} parameters\n",
                  build.onnx_path.string(), facts.sha256, facts.opset, facts.ir_version,
                  facts.node_count, facts.parameters);
  if (!facts.checker_note.empty()) log += "checker: " + facts.checker_note + "\n";
  // Inputs are checked now so that a model that cannot be fed fails at load-onnx, where the
  // user's --input-shapes belongs.
  try {
    if (!batch_error.empty()) throw Error(ErrorKind::InvalidInput, batch_error);
    if (batch) log += batch_model(build, *batch, *point.batch);
    prepare_inputs(build);
  } catch (const std::exception& e) {
    runner_.write_log(build, "load-onnx", log + "error: " + e.what() + "\n");
    build.state.tools[0].status = status_name(Status::Failed);
    throw;
  }
  log += "inputs: " + build.stats.text("input_source", "?") + "\n";
  const std::string ones =
      batch && !batch->ones_note.empty() ? batch->ones_note : build.ones_note;
  if (!ones.empty()) {
    log += ones + "\n";
    // Once per run of the input, not once per point.
    if (ones != last_ones_note_) ctx_.notice(item.given + ": " + ones);
    last_ones_note_ = ones;
  }
  show_fed_shapes(build);
  runner_.write_log(build, "load-onnx", log);
}

std::string InputLoop::batch_model(Build& build, const onnx_model::BatchShapes& batch,
                                   int64_t size) const {
  std::string log =
      fmt::format("batch {}: inputs {} carry the batch\n", size, fmt::join(batch.batched, ", "));
  if (batch.fixed.empty()) return log;
  // The file fixes another batch: a copy with a symbolic batch dim, made once per model and
  // inputs (the key file says which).
  const fs::path dir = build.dir->path() / "batch";
  const fs::path variant = dir / build.onnx_path.filename();
  const fs::path key_file = dir / (build.onnx_path.filename().string() + ".key");
  const std::string key = fmt::format("{} {}", build.facts->sha256, fmt::join(batch.fixed, ","));
  std::string old_key;
  try {
    old_key = read_file(key_file);
  } catch (const Error&) {
  }
  std::error_code ec;
  if (old_key != key || !fs::is_regular_file(variant, ec)) {
    fs::create_directories(dir);
    transforms::write_batch_variant(build.onnx_path, variant, batch.fixed);
    write_file_atomic(key_file, key);
  }
  build.onnx_path = variant;
  ensure_facts(build);
  return log + fmt::format(
                   "the file fixes the batch of {} at another size: benchmarking {}, a copy with "
                   "a symbolic batch dim (whether the graph runs at batch {} shows when it runs)\n",
                   fmt::join(batch.fixed, ", "), variant.string(), size);
}

// ---- cached builds
// -------------------------------------------------------------------------------

void InputLoop::run_load_build(const InputItem& item) {
  const fs::path state_path = fs::absolute(item.path).lexically_normal();
  json previous;
  try {
    previous = json_from_yaml(read_file(state_path));
  } catch (const Error& e) {
    input_error(item.given, Status::InvalidInput,
                std::string("unreadable build state: ") + e.what());
    return;
  }
  if (!previous.is_object() || !previous.contains("build_name") ||
      !previous["build_name"].is_string()) {
    input_error(item.given, Status::InvalidInput, "not a turnkey build state (no build_name)");
    return;
  }
  if (const std::string damage = state_damage(previous); !damage.empty()) {
    input_error(item.given, Status::InvalidInput, "damaged build state: " + damage);
    return;
  }
  const std::string build_name = previous["build_name"].get<std::string>();
  if (!is_safe_build_name(build_name) || state_path.filename() != build_name + "_state.yaml") {
    input_error(item.given, Status::InvalidInput, "build state does not match its file name");
    return;
  }
  if (!is_success(previous.value("build_status", "")) || !previous.contains("onnx_path")) {
    input_error(item.given, Status::InvalidInput,
                fmt::format("build {} has no finished ONNX model to continue from (status {})",
                            build_name, previous.value("build_status", "?")));
    return;
  }
  // A cached build has its inputs: only the benchmark's requests in flight can be swept.
  SweepPlan plan = sweep_plan(ctx_.request.sequence, "load-build");
  if (!tool_options(ctx_.request.sequence, "load-onnx").value("batch_sizes", json()).is_null()) {
    ctx_.notice(
        fmt::format("{}: --batch-sizes does not apply to a cached build (its model has "
                    "its inputs): ignored",
                    item.given));
  }
  const SweepSettings settings{plan, item.given};
  printer_.print(build_name, {run_sweep(
                                 settings,
                                 [&](const SweepPoint& point, const SweepRecord& record) {
                                   return run_load_build_point(item, previous, point, record);
                                 },
                                 [&](const std::string& text) { ctx_.notice(text); })});
}

ModelBlock InputLoop::run_load_build_point(const InputItem& item, const json& previous,
                                           const SweepPoint& point, const SweepRecord& record) {
  const fs::path state_path = fs::absolute(item.path).lexically_normal();
  Build build;
  build.build_name = previous["build_name"].get<std::string>();
  apply_point(build, point);
  const fs::path cache = state_path.parent_path().parent_path();
  std::optional<BuildLock> lock;
  runner_.contain(build, "load-build", [&] {
    lock.emplace(state_path.parent_path(), [&] { waiting_for(build.build_name); });
    build.source_input = previous.value("input", "");
    // Keep the model facts the earlier build recorded (name, class, hash, ...).
    try {
      json old_stats = json_from_yaml(read_file(state_path.parent_path() / "turnkey_stats.yaml"));
      build.stats.carry_model_facts(old_stats);
    } catch (const Error&) {
    }
    if (previous.contains("tools")) {
      for (const auto& t : previous["tools"]) {
        if (t.contains("outputs") && is_success(t.value("status", ""))) restore_outputs(build, t);
      }
    }
    build.onnx_path = previous["onnx_path"].get<std::string>();
    // Continuing needs the artifacts as they were made.
    if (previous.contains("tools")) {
      for (const auto& t : previous["tools"]) {
        if (const std::string problem = artifact_problem(t); !problem.empty()) {
          throw Error(
              ErrorKind::InvalidInput,
              fmt::format("build {}: {}: rebuild it from its input", build.build_name, problem));
        }
      }
    }
    runner_.open_build(build, cache, previous.value("input", item.path.string()), "load-build",
                       previous.value("chain_key", ""), 0);
    std::vector<std::string> ignored;
    build.state.continued_from = BuildState::from_json(previous, ignored).sequence;
    ModelBlock& b = build.block;
    b.title = build.stats.text("model_name", build.build_name);
    b.fields = {{"Model Type", build.stats.text("model_type", "?")},
                {"Hash", build.stats.text("hash", "?")},
                {"Build dir", build.dir->path().string()}};
    ensure_facts(build);
    runner_.write_log(
        build, "load-build",
        fmt::format("continuing {} from {}\n", build.build_name, build.onnx_path.string()));
    runner_.run_tools(build, "load-build");
  });
  record(build, "");
  runner_.finish_build(build);
  lock.reset();
  if (build.block.title.empty()) build.block.title = build.build_name;
  return std::move(build.block);
}

}  // namespace turnkey::engine_internal
