#include "pipeline/build_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <new>
#include <optional>
#include <utility>

#include "pipeline/first_tool.h"
#include "pipeline/reuse_policy.h"
#include "pipeline/tool_impls.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/cache/cache_admin.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/sha256.h"
#include "turnkey/common/version.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The tool the build was at: the last one started, else its first.
std::string last_tool(const Build& build) {
  if (!build.state.last_tool.empty()) return build.state.last_tool;
  if (!build.state.tools.empty() && !build.state.tools[0].name.empty()) {
    return build.state.tools[0].name;
  }
  return "?";
}

}  // namespace

std::string BuildRunner::claim_build_name(const fs::path& input, const std::string& hash8) const {
  const std::string stem = input.stem().string();
  const std::string abs = fs::absolute(input).lexically_normal().string();
  std::string name = make_build_name(stem, hash8);
  BuildDir candidate(ctx_.cache_dir, name);
  try {
    std::error_code ec;
    if (fs::is_regular_file(candidate.state_path(), ec)) {
      std::vector<std::string> problems;
      const BuildState state =
          BuildState::from_json(json_from_yaml(read_file(candidate.state_path())), problems);
      if (!state.input.empty() && state.input != abs) {
        name = make_build_name(stem + "_" + sha256_hex(abs).substr(0, 4), hash8);
      }
    }
  } catch (const std::exception&) {
    // An unreadable or damaged state is rebuilt under the plain name.
  }
  return name;
}

void BuildRunner::read_previous_state(Build& build, const std::string& first) const {
  build.previous_state = nullptr;
  const fs::path state_path = build.dir->state_path();
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(state_path, ec);
  if (!fs::exists(st)) return;
  if (fs::is_directory(st)) {
    throw StatusError(failure_status_of_tool(first), ErrorKind::Cache,
                      fmt::format("{} is a directory, not a build state: remove it to rebuild",
                                  state_path.string()));
  }
  std::string damage;
  try {
    json previous = json_from_yaml(read_file(state_path));
    damage = state_damage(previous);
    if (damage.empty()) build.previous_state = std::move(previous);
  } catch (const Error& e) {
    damage = one_line(e.what());
  }
  build.previous_stats = nullptr;
  if (damage.empty() && fs::exists(build.dir->stats_path(), ec)) {
    try {
      build.previous_stats = json_from_yaml(read_file(build.dir->stats_path()));
    } catch (const Error&) {  // unreadable: reused tools' records are left out
    }
  }
  if (!damage.empty()) {
    ctx_.notice(
        fmt::format("{}: previous state damaged ({}), rebuilding", build.build_name, damage));
  }
}

void BuildRunner::open_build(Build& build, const fs::path& cache, const fs::path& input,
                             const std::string& first, const std::string& first_key,
                             double first_s) {
  build.dir.emplace(cache, build.build_name);
  build.dir->create();
  read_previous_state(build, first);
  build.chain_key = first_key;
  BuildState& s = build.state;
  s = BuildState{};
  s.build_name = build.build_name;
  s.build_status = status_name(Status::Incomplete);
  s.turnkey_version = kVersion;
  s.input = fs::absolute(input).lexically_normal().string();
  s.sequence = {first};
  for (const ToolCall* c : sequence_after(ctx_.request.sequence, first))
    s.sequence.push_back(call_label(*c));
  s.run = ctx_.run_id();  // the run's command line lives once, in the run's record
  s.rebuild = ctx_.request.global.rebuild;
  s.started = utc_timestamp_now();
  ToolStep step;
  step.name = first;
  step.status = status_name(Status::Successful);
  step.key = first_key;
  step.duration_s = first_s;
  // What made the build, beside its input: the first tool's options too (script arguments,
  // batch sizes), as every later tool's.
  if (const ToolSpec* spec = find_tool(first); spec && !spec->options.empty()) {
    step.options = tool_options(ctx_.request.sequence, first);
  }
  s.tools = {std::move(step)};
  // A sweep opens a build once per point: the input's outcome names it once.
  const InputOutcome::BuildRef ref{build.build_name, build.dir->path().string()};
  std::vector<InputOutcome::BuildRef>& builds = ctx_.outcome.builds;
  if (std::find(builds.begin(), builds.end(), ref) == builds.end()) builds.push_back(ref);
  save_state(build);
  ctx_.progress(ProgressEvent::opened(ref.build, ref.dir));
}

void BuildRunner::save_state(Build& build) const {
  build.state.chain_key = build.chain_key;
  if (!build.onnx_path.empty()) build.state.onnx_path = build.onnx_path.string();
  build.dir->write_state(build.state.to_json());
}

void BuildRunner::write_log(const Build& build, const std::string& tool,
                            const std::string& text) const {
  if (!build.dir) return;
  try {
    write_file_atomic(build.dir->log_path(tool), text);
  } catch (const std::exception&) {
    // A log that cannot be written must not fail the build.
  }
}

std::string BuildRunner::read_log(const Build& build, const std::string& tool) const {
  try {
    return read_file(build.dir->log_path(tool));
  } catch (const std::exception&) {
    return "";
  }
}

std::string BuildRunner::stale_reason(const json& entry, const std::string& name,
                                      const json& options, const Build& build) const {
  const json& prev = build.previous_state;
  if (prev.value("turnkey_version", "") != kVersion) {
    return fmt::format("turnkey version changed ({} -> {})", prev.value("turnkey_version", "?"),
                       kVersion);
  }
  const ToolImpl& impl = tool_impl(name);
  std::string versions = impl.versions ? impl.versions(build, options) : "";
  if (entry.value("versions", versions) != versions) {
    return fmt::format("{} versions changed ({} -> {})", name, entry.value("versions", "?"),
                       versions);
  }
  if (entry.contains("options") && entry["options"] != options) {
    return fmt::format("{} options changed ({} -> {})", name, entry["options"].dump(),
                       options.dump());
  }
  return fmt::format("the input of {} changed", name);
}

namespace {

// A call's options as given, with a sweep point's over them.
json given_options(const Build& build, const ToolCall& call) {
  json given = call_options(call);
  given.update(build.point_options.value(call.name, json::object()));
  return given;
}

}  // namespace

void BuildRunner::release_when_unused(Build& build, const std::vector<const ToolCall*>& calls,
                                      size_t from) const {
  if (!build.release_script_process) return;
  for (size_t i = from; i < calls.size(); ++i) {
    const ToolImpl& impl = tool_impl(calls[i]->name);
    const json options = given_options(build, *calls[i]);
    if (impl.uses_script_process && impl.uses_script_process(build, options)) return;
  }
  const std::string how = std::exchange(build.release_script_process, nullptr)();
  build.process_note = fmt::format(
      "the script's process ended before this tool ({}): no tool from here on uses the live "
      "model, so its memory is not held while this runs\n",
      how);
}

void BuildRunner::run_tools(Build& build, const std::string& first) {
  bool reuse_allowed = true;
  size_t index = 1;
  const std::vector<const ToolCall*> calls = sequence_after(ctx_.request.sequence, first);
  for (size_t position = 0; position < calls.size(); ++position) {
    const ToolCall* call = calls[position];
    const ToolSpec& spec = *find_tool(call->name);
    release_when_unused(build, calls, position);
    const json given = given_options(build, *call);
    const ToolImpl& impl = tool_impl(spec.name);
    const json options = impl.resolve ? impl.resolve(given, build) : given;
    const std::string label = call_label(*call);
    const std::string versions = impl.versions ? impl.versions(build, options) : "";
    const std::string key =
        spec.cacheable ? sha256_hex(fmt::format("{}|{}|{}|{}|{}", build.chain_key, spec.name,
                                                options.dump(), versions, kVersion))
                       : build.chain_key;
    ReuseCheck reuse;
    if (spec.cacheable && reuse_allowed) {
      reuse = check_reuse(build.previous_state, index, spec.name, key, ctx_.request.global.rebuild);
      if (reuse.key_changed)
        reuse.reason =
            stale_reason(build.previous_state["tools"][index], spec.name, options, build);
    }
    if (reuse.entry) {
      ToolStep step = ToolStep::from_json(*reuse.entry);
      step.reused = true;
      build.state.tools.push_back(std::move(step));
      restore_outputs(build, *reuse.entry);
      restore_tool_stats(build, impl.recorded);
      build.chain_key = key;
      write_log(build, label,
                read_log(build, label) +
                    fmt::format("[{}] reused from cache: inputs, options and versions "
                                "unchanged (key {})\n",
                                utc_timestamp_now(), key.substr(0, 12)));
      ctx_.monitor.tool_done(build.build_name, label, "reused", 0);
      ++index;
      continue;
    }
    if (!reuse.reason.empty()) {
      ctx_.notice(
          fmt::format("rebuilding {} from {}: {}", build.build_name, label, reuse.reason));
    }
    reuse_allowed = false;  // what follows a rebuilt tool is rebuilt too
    ToolStep step;
    step.name = spec.name;
    step.status = status_name(Status::Running);
    step.started = utc_timestamp_now();
    step.key = key;
    step.options = options;
    step.versions = versions;
    if (label != spec.name) step.stage = label;
    if (!run_tool(build, spec, label, options, std::move(step))) return;
    if (spec.cacheable) build.chain_key = key;
    save_state(build);
    ++index;
  }
}

bool BuildRunner::run_tool(Build& build, const ToolSpec& spec, const std::string& label,
                           const json& options, ToolStep step) {
  build.state.tools.push_back(std::move(step));
  build.state.last_tool = label;
  save_state(build);
  ctx_.monitor.tool_started(build.build_name, label);
  ctx_.progress(ProgressEvent::stage_started(label, build.build_name));
  build.python_override = ctx_.request.global.python;
  build.sandbox = ctx_.sandbox;
  build.sandbox_allow.assign(ctx_.request.global.sandbox_allow.begin(),
                             ctx_.request.global.sandbox_allow.end());
  auto t0 = std::chrono::steady_clock::now();
  std::string log = std::exchange(build.process_note, std::string());
  build.step.clear();
  std::string error;
  Status status = Status::Successful;
  int signal = 0;
  try {
    // Torch runtimes benchmark the live model: no ONNX file is needed before them.
    if (spec.needs == Artifact::OnnxModel && !build.onnx_path.empty()) {
      build.step = "reading the ONNX model's facts";
      ensure_facts(build);
    }
    if (spec.needs == Artifact::OnnxModel && !spec.takes_pytorch_model && build.onnx_path.empty()) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{} needs an ONNX model: put export-pytorch before it for a "
                              "script's model",
                              label));
    }
    {
      // Under a corpus parent, a benchmark holds the benchmark slot: builds of other inputs are
      // paused while it measures, so it never shares its cores with them.
      std::optional<BenchmarkSlot> slot;
      if (spec.produces == Artifact::Measurement)
        slot.emplace(ctx_.link, options.value("threads", 0));
      build.step.clear();
      tool_impl(spec.name).body(build, options, log);
    }
    if (spec.produces == Artifact::OnnxModel) {
      build.step = "reading the ONNX model's facts";
      ensure_facts(build);
      build.step = "recording the model's files";
      record_outputs(build, build.state.tools.back());
    }
  } catch (const std::exception& e) {
    status = status_of_failure(spec.failure, e);
    signal = signal_of_failure(e);
    error = failure_reason(e, build.step);
    log += (build.step.empty() ? std::string("error: ")
                               : fmt::format("error while {}: ", build.step)) +
           e.what() + "\n";
  }
  const double seconds = seconds_since(t0);
  const bool ok = status == Status::Successful;
  ToolStep& recorded = build.state.tools.back();
  recorded.status = status_name(ok ? Status::Successful : Status::Failed);
  recorded.duration_s = seconds;
  write_log(build, label, log);
  ctx_.monitor.tool_done(build.build_name, label, ok ? "done" : "failed", seconds);
  if (!ok) {
    recorded.error = error;
    fail(build, label, status, error, signal);
  }
  return ok;
}

void BuildRunner::contain(Build& build, const std::string& tool,
                          const std::function<void()>& work) {
  build.step.clear();
  try {
    work();
  } catch (const std::exception& e) {
    fail(build, tool, status_of_failure(failure_status_of_tool(tool), e),
         failure_reason(e, build.step), signal_of_failure(e));
  }
}

void BuildRunner::fail(Build& build, const std::string& tool, Status status,
                       const std::string& reason, int signal) {
  if (build.failed) return;  // the first failure is the build's
  build.failed = true;
  ctx_.any_failed = true;
  const bool mismatch = status == Status::NumericMismatch;
  ctx_.note_failure(status, tool, reason, signal,
                    build.dir ? build.dir->log_path(tool) : std::filesystem::path());
  build.block.status = mismatch ? fmt::format("Numeric mismatch ({}): {}", tool, reason)
                                : fmt::format("Failed at {}: {}", tool, reason);
  build.state.status = status_name(status);
  build.stats.status = status_name(status);
  // A numeric mismatch ran to the end: its numbers are kept, but it is not a valid result.
  build.state.build_status = status_name(mismatch ? Status::NumericMismatch : Status::Failed);
  build.state.error = reason;
  build.state.failed_tool = tool;
  if (status == Status::Crashed && signal > 0) build.state.signal = signal;
  // No tool step stays "running" once the build has ended.
  for (ToolStep& t : build.state.tools) {
    if (t.status == status_name(Status::Running)) {
      t.status = status_name(Status::Failed);
      if (t.error.empty()) t.error = reason;
    }
  }
  if (!build.dir) return;  // failed before it had a dir: nothing to record in
  build.block.status_detail = {"Log:            " + build.dir->log_path(tool).string()};
  try {
    save_state(build);
  } catch (const std::exception&) {
    // The state cannot be written (its place is taken): the block line says why the build failed.
  }
}

void BuildRunner::finish_build(Build& build) {
  if (!build.dir) return;
  try {
    if (!build.failed) {
      build.state.build_status = status_name(Status::Successful);
      build.state.status = status_name(Status::Successful);
      if (build.block.status.empty()) build.block.status = "Model successfully built";
    }
    build.state.finished = utc_timestamp_now();
    build.stats.build_name = build.build_name;
    build.stats.build_status = build.state.build_status;
    if (build.failed) {
      build.stats.failed_tool = build.state.failed_tool;
      build.stats.error = build.state.error;
    }
    if (ctx_.request.global.lean_cache) {
      clean_build(build.dir->path());
      build.state.lean_cache = true;
    }
    save_state(build);
    write_build_stats(build);
  } catch (const std::exception& e) {
    const std::string tool = last_tool(build);
    fail(build, tool, status_of_failure(failure_status_of_tool(tool), e),
         "recording the build: " + failure_reason(e, ""));
  }
}

}  // namespace turnkey::engine_internal
