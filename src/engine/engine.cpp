#include "turnkey/engine/engine.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "build.h"
#include "monitor.h"
#include "worker_link.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/cache/cache_admin.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/sha256.h"
#include "turnkey/common/version.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/engine/corpus.h"
#include "turnkey/engine/report_printer.h"
#include "turnkey/engine/status.h"
#include "turnkey/engine/tools.h"
#include "turnkey/inputs/inputs.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;
using engine_internal::Build;

namespace {

bool env_bool_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

std::string one_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 400 ? line.substr(0, 400) + "..." : line;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

using ToolBody = void (*)(Build&, const json&, std::string&);

ToolBody tool_body(const std::string& name) {
  static const std::map<std::string, ToolBody> bodies = {
      {"export-pytorch", engine_internal::tool_export_pytorch},
      {"optimize-ort", engine_internal::tool_optimize_ort},
      {"convert-fp16", engine_internal::tool_convert_fp16},
      {"check-onnx", engine_internal::tool_check_onnx},
      {"benchmark", engine_internal::tool_benchmark},
  };
  auto it = bodies.find(name);
  return it == bodies.end() ? nullptr : it->second;
}

class Engine {
 public:
  explicit Engine(const RunRequest& request, engine_internal::WorkerLink* link = nullptr)
      : request_(request),
        cache_dir_(resolve_cache_dir(request.global.cache_dir)),
        monitor_(env_bool("TURNKEY_BUILD_MONITOR", true)),
        link_(link) {}

  // Worker mode (corpus.h): one input, already expanded by the parent; the outcome goes to the
  // supervisor as the last progress event.
  int run_one(const InputItem& item) {
    outcome_ = {{"status", ""}, {"stage", ""}, {"error", ""}, {"builds", json::array()}};
    try {
      run_input(item);
    } catch (const Error& e) {
      input_error(item.given, e.what());
    }
    std::string status = outcome_.value("status", "");
    if (status.empty()) {
      status = outcome_["builds"].empty() && !models_seen_ ? "no_models" : "successful";
    }
    outcome_["status"] = status;
    if (link_) link_->event({{"e", "done"}, {"outcome", outcome_}});
    return any_failed_ ? 1 : 0;
  }

  int run() {
    std::vector<std::string> args = request_.global.inputs;
    if (!request_.global.search_dir.empty()) {
      for (std::string& a : args) {
        if (!fs::path(a).is_absolute()) a = (fs::path(request_.global.search_dir) / a).string();
      }
    }
    std::vector<InputItem> items = expand_inputs(args);
    if (items.empty()) throw Error(ErrorKind::InvalidInput, "no inputs given");
    const json discover_opts = tool_options("discover");
    if (items.size() > 1 && (!discover_opts.value("build_name", "").empty() ||
                             !discover_opts.value("attach", "").empty())) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{}: give one input, not {}",
                              discover_opts.value("attach", "").empty()
                                  ? "--build-name names one build"
                                  : "--attach serves one script",
                              items.size()));
    }
    for (const InputItem& item : items) {
      try {
        run_input(item);
      } catch (const Error& e) {
        input_error(item.given, e.what());
      }
    }
    if (!request_.global.labels.empty() && labelled_scripts_ == 0) {
      notice(fmt::format("no script matched --labels {}",
                         fmt::join(request_.global.labels, " ")));
    }
    std::cout << "Woohoo! The 'benchmark' command is complete.\n" << std::flush;
    return any_failed_ ? 1 : 0;
  }

 private:
  const RunRequest& request_;
  fs::path cache_dir_;
  engine_internal::Monitor monitor_;
  engine_internal::WorkerLink* link_ = nullptr;
  // The input's outcome in worker mode: first failure status, the stage it happened in, and the
  // builds the input started ({build, dir, status}).
  json outcome_ = json::object();
  bool models_seen_ = false;
  bool any_failed_ = false;
  bool header_printed_ = false;
  int labelled_scripts_ = 0;  // scripts that passed the --labels filter
  std::string python_, python_error_;

  // ---- output ----------------------------------------------------------------------------------

  // The reference header, once, right before the first result block (so a script's own output,
  // which comes first, is not split from its results by it).
  void print_block(const std::string& name, const std::vector<ModelBlock>& blocks,
                   const ScriptFooter& footer = {}) {
    if (!header_printed_) {
      std::cout << "\nModels discovered during profiling:\n\n";
      header_printed_ = true;
    }
    print_script_block(std::cout, name, blocks, footer);
  }

  void note_failure(const std::string& status, const std::string& stage, const std::string& error) {
    if (!outcome_.is_object() || !outcome_.value("status", "").empty()) return;
    outcome_["status"] = status;
    outcome_["stage"] = stage;
    outcome_["error"] = one_line(error);
    if (int sig = signal_in(error); status == "crashed" && sig > 0) outcome_["signal"] = sig;
  }

  void progress(const json& event) {
    if (link_) link_->event(event);
  }

  void input_error(const std::string& given, std::string reason) {
    any_failed_ = true;
    const bool no_python = reason.rfind("skipped: no Python", 0) == 0 ||
                           reason.find("interpreter") != std::string::npos;
    note_failure(no_python ? "discovery_failed" : "invalid_input", "inputs", reason);
    // Lower layers may already name the file; name it once.
    if (reason.rfind(given + ": ", 0) == 0) reason.erase(0, given.size() + 2);
    std::cout << std::flush;
    std::cerr << "turnkey: " << given << ": " << one_line(reason) << "\n" << std::flush;
  }

  void notice(const std::string& text) {
    std::cout << std::flush;
    std::cerr << "turnkey: " << text << "\n" << std::flush;
  }

  // ---- the sequence ----------------------------------------------------------------------------

  std::string first_tool_for(const InputItem& item) const {
    const std::string& first = request_.sequence.front().name;
    const std::string file = item.path.filename().string();
    const std::string ext = item.path.extension().string();
    if (first == "auto") {
      if (ext == ".py") return "discover";
      if (ext == ".onnx") return "load-onnx";
      if (ends_with(file, "_state.yaml")) return "load-build";
      throw Error(ErrorKind::InvalidInput,
                  "not a Python script (.py), ONNX file (.onnx) or build state (_state.yaml)");
    }
    if (first == "discover" && ext != ".py") {
      throw Error(ErrorKind::InvalidInput, "discover needs a Python script (.py)");
    }
    if (first == "load-onnx" && ext != ".onnx") {
      throw Error(ErrorKind::InvalidInput, "load-onnx needs an ONNX file (.onnx)");
    }
    if (first == "load-build" && !ends_with(file, "_state.yaml")) {
      throw Error(ErrorKind::InvalidInput, "load-build needs a build state (<build>_state.yaml)");
    }
    return first;
  }

  // The tools after the first that apply to an input started by `first` ("auto" resolved;
  // export-pytorch only after discover).
  std::vector<const ToolCall*> sequence_after(const std::string& first) const {
    std::vector<const ToolCall*> tools;
    for (size_t i = 1; i < request_.sequence.size(); ++i) {
      const ToolCall& call = request_.sequence[i];
      const ToolSpec* spec = find_tool(call.name);
      if (spec->group == ToolGroup::First) continue;
      if (spec->needs == Artifact::PyTorchModel && first != "discover") continue;
      tools.push_back(&call);
    }
    return tools;
  }

  json tool_options(const std::string& name) const {
    json options = default_tool_options(*find_tool(name));
    for (const ToolCall& c : request_.sequence) {
      if (c.name == name) options.update(c.options);
    }
    return options;
  }

  void run_input(const InputItem& item) {
    if (!item.error.empty()) {
      input_error(item.given, item.error);
      return;
    }
    const std::string first = first_tool_for(item);
    if (first == "discover") {
      if (!request_.global.labels.empty() &&
          !labels_match(read_labels(item.path), request_.global.labels)) {
        note_failure("skipped_by_filter", "inputs", "labels do not match --labels");
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

  // ---- one build: open, run tools, finish ------------------------------------------------------

  // `<stem>_<hash8>`, unless that build dir already belongs to another input file (same stem and
  // model in another folder): then the input's path hash goes into the name, so two inputs never
  // share (and overwrite) one build dir.
  std::string claim_build_name(const fs::path& input, const std::string& hash8) const {
    const std::string stem = input.stem().string();
    const std::string abs = fs::absolute(input).lexically_normal().string();
    std::string name = make_build_name(stem, hash8);
    BuildDir candidate(cache_dir_, name);
    std::error_code ec;
    if (fs::exists(candidate.state_path(), ec)) {
      try {
        json state = json_from_yaml(read_file(candidate.state_path()));
        if (state.value("input", abs) != abs) {
          name = make_build_name(stem + "_" + sha256_hex(abs).substr(0, 4), hash8);
        }
      } catch (const Error&) {
        // An unreadable state is rebuilt under the plain name.
      }
    }
    return name;
  }

  // Creates the build dir, reads the previous state (if any) and starts a fresh one whose first
  // tool (already done by the caller) is recorded as successful.
  void open_build(Build& build, const fs::path& build_dir_parent, const InputItem& item,
                  const std::string& first, const std::string& first_key, double first_s) {
    build.dir.emplace(build_dir_parent, build.build_name);
    build.dir->create();
    std::error_code ec;
    if (fs::exists(build.dir->state_path(), ec)) {
      try {
        build.previous_state = json_from_yaml(read_file(build.dir->state_path()));
        if (!build.previous_state.is_object()) build.previous_state = nullptr;
      } catch (const Error& e) {
        notice(fmt::format("{}: previous state unreadable, rebuilding ({})", build.build_name,
                           one_line(e.what())));
        build.previous_state = nullptr;
      }
    }
    json sequence = json::array({first});
    for (const ToolCall* c : sequence_after(first)) sequence.push_back(c->name);
    build.chain_key = first_key;
    build.state = {{"build_name", build.build_name},
                   {"build_status", "incomplete"},
                   {"turnkey_version", kVersion},
                   {"input", fs::absolute(item.path).lexically_normal().string()},
                   {"sequence", sequence},
                   {"command_line", request_.command_line},
                   {"rebuild", request_.global.rebuild},
                   {"started", utc_timestamp_now()},
                   {"tools",
                    json::array({{{"name", first},
                                  {"status", "successful"},
                                  {"key", first_key},
                                  {"duration_s", first_s}}})}};
    save_state(build);
    if (outcome_.is_object() && outcome_.contains("builds")) {
      outcome_["builds"].push_back(
          {{"build", build.build_name}, {"dir", build.dir->path().string()}});
    }
    progress({{"e", "build"}, {"build", build.build_name}, {"dir", build.dir->path().string()}});
  }

  void save_state(Build& build) {
    build.state["chain_key"] = build.chain_key;
    if (!build.onnx_path.empty()) build.state["onnx_path"] = build.onnx_path.string();
    build.dir->write_state(build.state);
  }

  void write_log(const Build& build, const std::string& tool, const std::string& text) {
    try {
      write_file_atomic(build.dir->log_path(tool), text);
    } catch (const Error&) {
      // A log that cannot be written must not fail the build.
    }
  }

  // The previous run's entry for tool `index`, when it can stand in for running the tool now.
  // `reason` says why not (for the notice) when the tool ran before but must run again.
  const json* reusable(const Build& build, size_t index, const std::string& name,
                       const std::string& key, std::string& reason) const {
    const json& prev = build.previous_state;
    if (request_.global.rebuild == "always" || !prev.is_object() || !prev.contains("tools")) {
      return nullptr;
    }
    const json& tools = prev["tools"];
    if (!tools.is_array() || index >= tools.size() || tools[index].value("name", "") != name) {
      return nullptr;
    }
    const json& entry = tools[index];
    if (entry.value("status", "") != "successful") {
      reason = fmt::format("its previous {} did not finish", name);
      return nullptr;
    }
    if (entry.contains("outputs")) {
      for (const auto& [k, v] : entry["outputs"].items()) {
        std::vector<std::string> files;
        if (v.is_string()) files.push_back(v.get<std::string>());
        if (v.is_array()) {
          for (const auto& f : v) files.push_back(f.get<std::string>());
        }
        for (const std::string& f : files) {
          std::error_code ec;
          if (!fs::exists(f, ec)) {
            reason = fmt::format("{} is gone (lean cache or deleted)", fs::path(f).filename().string());
            return nullptr;
          }
        }
      }
    }
    if (entry.value("key", "") != key && request_.global.rebuild != "never") {
      reason = stale_reason(entry, name, build);
      return nullptr;
    }
    return &entry;
  }

  // Why a cached tool result no longer matches: the first recorded component that changed.
  std::string stale_reason(const json& entry, const std::string& name, const Build& build) const {
    const json& prev = build.previous_state;
    if (prev.value("turnkey_version", "") != kVersion) {
      return fmt::format("turnkey version changed ({} -> {})", prev.value("turnkey_version", "?"),
                         kVersion);
    }
    std::string versions = engine_internal::tool_versions(name, build);
    if (entry.value("versions", versions) != versions) {
      return fmt::format("{} versions changed ({} -> {})", name, entry.value("versions", "?"),
                         versions);
    }
    json options = engine_internal::resolve_options(name, tool_options(name));
    if (entry.contains("options") && entry["options"] != options) {
      return fmt::format("{} options changed ({} -> {})", name, entry["options"].dump(),
                         options.dump());
    }
    return fmt::format("the input of {} changed", name);
  }

  // Runs the sequence tools of one build in order; stops at the first failure.
  void run_tools(Build& build, const std::string& first) {
    bool reuse_allowed = true;
    size_t index = 1;
    for (const ToolCall* call : sequence_after(first)) {
      const ToolSpec& spec = *find_tool(call->name);
      const json options = engine_internal::resolve_options(spec.name, tool_options(spec.name));
      const std::string versions = engine_internal::tool_versions(spec.name, build);
      const std::string key =
          spec.cacheable ? sha256_hex(fmt::format("{}|{}|{}|{}|{}", build.chain_key, spec.name,
                                                  options.dump(), versions, kVersion))
                         : build.chain_key;
      json entry = {{"name", spec.name},
                    {"status", "running"},
                    {"started", utc_timestamp_now()},
                    {"key", key},
                    {"options", options},
                    {"versions", versions}};
      std::string reason;
      const json* cached = spec.cacheable && reuse_allowed
                               ? reusable(build, index, spec.name, key, reason)
                               : nullptr;
      if (cached) {
        entry = *cached;
        entry["reused"] = true;
        build.state["tools"].push_back(entry);
        restore_outputs(build, entry);
        build.chain_key = key;
        std::string log = read_log(build, spec.name);
        write_log(build, spec.name,
                  log + fmt::format("[{}] reused from cache: inputs, options and versions "
                                    "unchanged (key {})\n",
                                    utc_timestamp_now(), key.substr(0, 12)));
        monitor_.tool_done(build.build_name, spec.name, "reused", 0);
        ++index;
        continue;
      }
      if (!reason.empty()) {
        notice(fmt::format("rebuilding {} from {}: {}", build.build_name, spec.name, reason));
      }
      reuse_allowed = false;  // what follows a rebuilt tool is rebuilt too
      build.state["tools"].push_back(entry);
      build.state["last_tool"] = spec.name;
      save_state(build);
      monitor_.tool_started(build.build_name, spec.name);
      progress({{"e", "stage"}, {"stage", spec.name}, {"build", build.build_name}});
      auto t0 = std::chrono::steady_clock::now();
      std::string log;
      bool ok = true;
      std::string error;
      ErrorKind error_kind = ErrorKind::Internal;
      // Under a corpus parent, a benchmark waits for the benchmark slot: builds of other inputs
      // are paused while it measures, so it never shares its cores with them.
      const bool measures = spec.produces == Artifact::Measurement && link_;
      try {
        // Torch runtimes benchmark the live model: no ONNX file is needed before them.
        if (spec.needs == Artifact::OnnxModel && !build.onnx_path.empty()) {
          engine_internal::ensure_facts(build);
        }
        if (measures) link_->acquire_benchmark(options.value("threads", 0));
        tool_body(spec.name)(build, options, log);
        if (measures) link_->release_benchmark();
        if (spec.produces == Artifact::OnnxModel) engine_internal::ensure_facts(build);
      } catch (const Error& e) {
        if (measures) link_->release_benchmark();
        ok = false;
        error = one_line(e.what());
        error_kind = e.kind();
        log += std::string("error: ") + e.what() + "\n";
      } catch (const std::bad_alloc&) {
        if (measures) link_->release_benchmark();
        ok = false;
        error = "out of memory (std::bad_alloc)";
        log += "error: " + error + "\n";
      }
      const double seconds = seconds_since(t0);
      json& recorded = build.state["tools"].back();
      recorded["status"] = ok ? "successful" : "failed";
      recorded["duration_s"] = seconds;
      if (ok && spec.produces == Artifact::OnnxModel) {
        json outputs = {{"onnx_path", build.onnx_path.string()}};
        json in = json::array(), out = json::array();
        for (const auto& p : build.input_pbs) in.push_back(p.string());
        for (const auto& p : build.output_pbs) out.push_back(p.string());
        outputs["inputs"] = in;
        outputs["outputs"] = out;
        recorded["outputs"] = outputs;
      }
      write_log(build, spec.name, log);
      monitor_.tool_done(build.build_name, spec.name, ok ? "done" : "failed", seconds);
      if (!ok) {
        recorded["error"] = error;
        fail(build, spec.name, error, error_kind);
        return;
      }
      if (spec.cacheable) build.chain_key = key;
      save_state(build);
      ++index;
    }
  }

  std::string read_log(const Build& build, const std::string& tool) const {
    try {
      return read_file(build.dir->log_path(tool));
    } catch (const Error&) {
      return "";
    }
  }

  static void restore_outputs(Build& build, const json& entry) {
    if (!entry.contains("outputs")) return;
    const json& o = entry["outputs"];
    if (o.contains("onnx_path")) build.onnx_path = o["onnx_path"].get<std::string>();
    auto paths = [&](const char* key, std::vector<fs::path>& into) {
      if (!o.contains(key)) return;
      into.clear();
      for (const auto& p : o[key]) into.push_back(p.get<std::string>());
    };
    paths("inputs", build.input_pbs);
    paths("outputs", build.output_pbs);
  }

  void fail(Build& build, const std::string& tool, const std::string& reason,
            ErrorKind kind = ErrorKind::Internal) {
    build.failed = true;
    const bool mismatch = kind == ErrorKind::NumericMismatch;
    if (mismatch) build.failure_status = "numeric_mismatch";
    const std::string status = status_for_failed_tool(tool, reason, build.failure_status);
    note_failure(status, tool, reason);
    build.state["status"] = status;
    build.stats["status"] = status;
    // A numeric mismatch ran to the end: its numbers are kept, but it is not a valid result.
    build.state["build_status"] = mismatch ? "numeric_mismatch" : "failed";
    build.state["error"] = reason;
    build.state["failed_tool"] = tool;
    build.block.status = mismatch ? fmt::format("Numeric mismatch ({}): {}", tool, reason)
                                  : fmt::format("Failed at {}: {}", tool, reason);
    build.block.status_detail = {"Log:            " + build.dir->log_path(tool).string()};
    save_state(build);
  }

  void finish_build(Build& build) {
    if (!build.failed) {
      build.state["build_status"] = "successful";
      build.state["status"] = "successful";
      if (build.block.status.empty()) build.block.status = "Model successfully built";
    }
    build.state["finished"] = utc_timestamp_now();
    build.stats["build_name"] = build.build_name;
    build.stats["build_status"] = build.state["build_status"];
    if (build.failed) {
      build.stats["failed_tool"] = build.state["failed_tool"];
      build.stats["error"] = build.state["error"];
    }
    if (request_.global.lean_cache) {
      clean_build(build.dir->path());
      build.state["lean_cache"] = true;
    }
    save_state(build);
    build.dir->write_stats(build.stats);
    if (build.failed) any_failed_ = true;
  }

  // ---- ONNX files ------------------------------------------------------------------------------

  void run_onnx_file(const InputItem& item) {
    auto t0 = std::chrono::steady_clock::now();
    Build build;
    build.onnx_path = fs::absolute(item.path).lexically_normal();
    build.source_input = build.onnx_path;
    try {
      engine_internal::ensure_facts(build);
    } catch (const Error& e) {
      input_error(item.given, e.what());
      return;
    }
    const onnx_model::ModelFacts& facts = *build.facts;
    const json load_options = tool_options("load-onnx");
    build.input_shapes = load_options.value("input_shapes", "");
    const std::string forced_name = tool_options("discover").value("build_name", "");
    build.build_name = forced_name.empty() ? claim_build_name(item.path, facts.sha256.substr(0, 8))
                                           : forced_name;
    std::string first_key = sha256_hex(fmt::format("load-onnx|{}|{}", facts.sha256, build.input_shapes));
    BuildLock lock(cache_dir_ / build.build_name, [&] { waiting_for(build.build_name); });
    open_build(build, cache_dir_, item, "load-onnx", first_key, seconds_since(t0));
    build.stats["model_name"] = item.path.stem().string();
    build.stats["model_type"] = "ONNX file";
    build.stats["hash"] = facts.sha256.substr(0, 8);
    build.stats["hash_full"] = facts.sha256;
    build.stats["input"] = build.onnx_path.string();

    ModelBlock& b = build.block;
    b.title = item.path.stem().string();
    b.fields = {{"Model Type", "ONNX File (.onnx)"},
                {"Opset", std::to_string(facts.opset)},
                {"Parameters", fmt::format("{} ({})", facts.parameters,
                                           format_bytes(static_cast<double>(facts.parameter_bytes)))},
                {"Input Shape", engine_internal::describe_onnx_inputs(facts)},
                {"Hash", facts.sha256.substr(0, 8)},
                {"Build dir", build.dir->path().string()}};
    std::string log = fmt::format("loaded {}\nsha256 {}\nopset {}, IR {}, {} nodes, {} parameters\n",
                                  build.onnx_path.string(), facts.sha256, facts.opset,
                                  facts.ir_version, facts.node_count, facts.parameters);
    if (!facts.checker_note.empty()) log += "checker: " + facts.checker_note + "\n";
    // Inputs are checked now so that a model that cannot be fed fails at load-onnx, where the
    // user's --input-shapes belongs.
    try {
      engine_internal::prepare_inputs(build);
      log += "inputs: " + build.stats.value("input_source", std::string("?")) + "\n";
      write_log(build, "load-onnx", log);
      run_tools(build, "load-onnx");
    } catch (const Error& e) {
      write_log(build, "load-onnx", log + "error: " + e.what() + "\n");
      build.state["tools"][0]["status"] = "failed";
      fail(build, "load-onnx", one_line(e.what()));
    }
    finish_build(build);
    print_block(item.path.filename().string(), {build.block});
  }

  void waiting_for(const std::string& build_name) {
    notice(fmt::format("waiting for another turnkey process building {}", build_name));
  }

  // ---- cached builds ---------------------------------------------------------------------------

  void run_load_build(const InputItem& item) {
    const fs::path state_path = fs::absolute(item.path).lexically_normal();
    json previous;
    try {
      previous = json_from_yaml(read_file(state_path));
    } catch (const Error& e) {
      input_error(item.given, std::string("unreadable build state: ") + e.what());
      return;
    }
    if (!previous.is_object() || !previous.contains("build_name") ||
        !previous["build_name"].is_string()) {
      input_error(item.given, "not a turnkey build state (no build_name)");
      return;
    }
    Build build;
    build.build_name = previous["build_name"].get<std::string>();
    if (!is_safe_build_name(build.build_name) ||
        state_path.filename() != build.build_name + "_state.yaml") {
      input_error(item.given, "build state does not match its file name");
      return;
    }
    if (previous.value("build_status", "") != "successful" || !previous.contains("onnx_path")) {
      input_error(item.given, fmt::format("build {} has no finished ONNX model to continue from "
                                          "(status {})",
                                          build.build_name, previous.value("build_status", "?")));
      return;
    }
    const fs::path cache = state_path.parent_path().parent_path();
    BuildLock lock(state_path.parent_path(), [&] { waiting_for(build.build_name); });
    build.onnx_path = previous["onnx_path"].get<std::string>();
    build.source_input = previous.value("input", "");
    // Keep the model facts the earlier build recorded (name, class, hash, ...).
    try {
      json old_stats = json_from_yaml(read_file(state_path.parent_path() / "turnkey_stats.yaml"));
      if (old_stats.is_object()) {
        for (const char* k : {"script", "model_name", "class", "class_path", "model_type",
                              "location", "hash", "hash_full", "inputs", "labels",
                              "torch_version", "onnx_python_version", "python_version", "input"}) {
          if (old_stats.contains(k)) build.stats[k] = old_stats[k];
        }
      }
    } catch (const Error&) {
    }
    if (previous.contains("tools")) {
      for (const auto& t : previous["tools"]) {
        if (t.contains("outputs") && t.value("status", "") == "successful") restore_outputs(build, t);
      }
    }
    build.onnx_path = previous["onnx_path"].get<std::string>();
    InputItem as_input = item;
    as_input.path = previous.value("input", item.path.string());
    open_build(build, cache, as_input, "load-build", previous.value("chain_key", ""), 0);
    build.state["continued_from"] = previous.value("sequence", json::array());
    ModelBlock& b = build.block;
    b.title = build.stats.value("model_name", build.build_name);
    b.fields = {{"Model Type", build.stats.value("model_type", std::string("?"))},
                {"Hash", build.stats.value("hash", std::string("?"))},
                {"Build dir", build.dir->path().string()}};
    try {
      engine_internal::ensure_facts(build);
      write_log(build, "load-build", fmt::format("continuing {} from {}\n", build.build_name,
                                                 build.onnx_path.string()));
      run_tools(build, "load-build");
    } catch (const Error& e) {
      fail(build, "load-build", one_line(e.what()));
    }
    finish_build(build);
    print_block(build.build_name, {build.block});
  }

  // ---- Python scripts --------------------------------------------------------------------------

  void run_script(const InputItem& item) {
    const std::string script_name = item.path.filename().string();
    json discover_opts = tool_options("discover");
    // --attach (the Python API): the models live in the process that started us.
    const std::string attach = discover_opts.value("attach", "");
    const std::string forced_name = discover_opts.value("build_name", "");
    // Looked up once per run: every script needs the same interpreter.
    if (attach.empty() && python_.empty() && python_error_.empty()) {
      try {
        python_ = find_python(request_.global.python);
      } catch (const Error& e) {
        python_error_ = e.what();
        input_error(item.given, python_error_);
        return;
      }
    }
    if (attach.empty() && !python_error_.empty()) {
      input_error(item.given, "skipped: no Python interpreter with torch (see above)");
      return;
    }
    const std::string python = attach.empty() ? python_ : "the calling Python process";
    progress({{"e", "stage"}, {"stage", "discover"}});
    ScriptOptions so;
    if (!attach.empty()) {
      std::tie(so.attach_event_fd, so.attach_command_fd) = parse_attach_fds(attach);
    }
    so.python = python;
    so.script = fs::absolute(item.path).lexically_normal();
    so.script_args = discover_opts.value("script_args", "");
    so.max_depth = discover_opts.value("max_depth", 0);
    so.bind_paths = {cache_dir_};
    std::cout << std::flush;
    std::cerr << std::flush;

    auto t0 = std::chrono::steady_clock::now();
    ScriptSession session(so);
    DiscoveryResult disc = session.discover();
    const double discover_s = seconds_since(t0);
    const Labels labels = read_labels(item.path);
    if (!disc.models.empty()) models_seen_ = true;

    auto selected = [&](const DiscoveredModel& m) {
      if (item.hashes.empty()) return true;
      for (const std::string& h : item.hashes) {
        if (!h.empty() && m.hash.rfind(h, 0) == 0) return true;
      }
      return false;
    };
    const bool build_anything = !sequence_after("discover").empty();
    std::string discover_log = fmt::format(
        "script {}\npython {} (Python {}, torch {}, onnx {})\nscript status {}{}\n{} models "
        "discovered in {:.3f} s\n",
        so.script.string(), python, disc.python_version, disc.torch_version, disc.onnx_version,
        disc.script_status, disc.error.empty() ? "" : ": " + disc.error, disc.models.size(),
        discover_s);
    for (const std::string& w : disc.warnings) discover_log += "warning: " + w + "\n";
    if (!disc.traceback.empty()) discover_log += "\n" + disc.traceback;

    std::vector<ModelBlock> blocks;
    int builds_started = 0;
    for (const DiscoveredModel& m : disc.models) {
      Build build;
      build.block = model_block(m);
      if (build_anything && selected(m) && !forced_name.empty() && builds_started > 0) {
        // --build-name names one build: a second model would overwrite the first.
        any_failed_ = true;
        build.block.status = fmt::format(
            "Not built: --build-name {} names one build and {} has more models (select one "
            "with {}::HASH)",
            forced_name, script_name, script_name);
      } else if (build_anything && selected(m)) {
        ++builds_started;
        build.model = &m;
        build.session = disc.ready ? &session : nullptr;
        build.build_name =
            forced_name.empty() ? claim_build_name(item.path, m.hash8()) : forced_name;
        const std::string first_key =
            sha256_hex(fmt::format("discover|{}|torch {}", m.hash, disc.torch_version));
        BuildLock lock(cache_dir_ / build.build_name, [&] { waiting_for(build.build_name); });
        open_build(build, cache_dir_, item, "discover", first_key, discover_s);
        build.state["model_name"] = m.name;
        build.state["hash_full"] = m.hash;
        json& s = build.stats;
        s["script"] = so.script.string();
        s["input"] = so.script.string();
        s["model_name"] = m.name;
        s["class"] = m.class_name;
        s["class_path"] = m.class_path;
        s["model_type"] = m.model_type;
        s["location"] = fmt::format("{}, line {}", m.file, m.line);
        s["parameters"] = m.parameters;
        s["parameter_bytes"] = m.parameter_bytes;
        s["hash"] = m.hash8();
        s["hash_full"] = m.hash;
        s["inputs"] = m.inputs;
        s["executed"] = m.executed;
        s["depth"] = m.depth;
        s["labels"] = labels_to_string(labels);
        s["torch_version"] = disc.torch_version;
        s["onnx_python_version"] = disc.onnx_version;
        s["python_version"] = disc.python_version;
        write_log(build, "discover", discover_log);
        build.block.sig_fields.push_back({"Build dir", build.dir->path().string()});
        if (!disc.ready) {
          fail(build, "discover",
               "the script's process ended before its models could be built (" +
                   one_line(disc.error) + ")");
        } else {
          run_tools(build, "discover");
        }
        finish_build(build);
        session.report_built(m.id, {{"build_name", build.build_name},
                                    {"build_dir", build.dir->path().string()},
                                    {"status", build.state.value("build_status", "failed")},
                                    {"error", build.state.value("error", "")},
                                    {"failed_tool", build.state.value("failed_tool", "")}});
      }
      blocks.push_back(std::move(build.block));
    }
    session.close();

    ScriptFooter footer;
    const bool script_failed = disc.script_status == "exception" ||
                               disc.script_status == "crashed" ||
                               (disc.script_status == "exit" && disc.exit_code != 0);
    if (script_failed) {
      any_failed_ = true;
      note_failure(status_for_failed_tool("discover", disc.error), "discover",
                   disc.script_status == "exit"
                       ? fmt::format("the script exited with code {}", disc.exit_code)
                       : disc.error);
      fs::path log = write_script_log(item, discover_log);
      footer.status = disc.script_status == "exit"
                          ? fmt::format("Script failed: exited with code {}", disc.exit_code)
                          : "Script failed: " + one_line(disc.error);
      footer.detail = "Log:            " + log.string();
      if (env_bool("TURNKEY_TRACEBACK", false) && !disc.traceback.empty()) {
        std::cerr << disc.traceback << std::flush;
      }
    }
    if (disc.models.empty() && !script_failed) footer.status = "No models discovered";
    bool filter_matched = item.hashes.empty();
    for (const auto& m : disc.models) filter_matched = filter_matched || selected(m);
    if (!filter_matched) {
      any_failed_ = true;
      note_failure("invalid_input", "discover",
                   fmt::format("no model matches the hash filter ::{}",
                               fmt::join(item.hashes, ",")));
      footer.status = fmt::format("No model matches the hash filter ::{}",
                                  fmt::join(item.hashes, ","));
    }
    print_block(script_name, blocks, footer);
  }

  fs::path write_script_log(const InputItem& item, const std::string& text) {
    std::string path_hash = sha256_hex(fs::absolute(item.path).string()).substr(0, 8);
    fs::path dir = cache_dir_ / "discovery_logs";
    std::error_code ec;
    fs::create_directories(dir, ec);
    fs::path log = dir / (make_build_name(item.path.stem().string(), path_hash) + ".txt");
    try {
      write_file_atomic(log, text);
    } catch (const Error&) {
    }
    return log;
  }

  static ModelBlock model_block(const DiscoveredModel& m) {
    ModelBlock b;
    b.depth = m.depth;
    b.name = m.name;
    b.group_key = fmt::format("module {}", m.module_id);
    b.signature_index = m.signature_index;
    b.executed = m.executed;
    b.title = m.first_call_s >= 0
                  ? fmt::format("{} (executed {}x - {:.2f}s)", m.name, m.executed, m.first_call_s)
                  : fmt::format("{} (executed {}x)", m.name, m.executed);
    b.fields.push_back({"Model Type", m.model_type});
    b.fields.push_back({"Class", fmt::format("{} (<class '{}'>)", m.class_name, m.class_path)});
    if (m.depth == 0) b.fields.push_back({"Location", fmt::format("{}, line {}", m.file, m.line)});
    b.fields.push_back({"Parameters", fmt::format("{} ({})", m.parameters,
                                                  format_bytes(static_cast<double>(m.parameter_bytes)))});
    std::string shapes;
    for (const auto& in : m.inputs) {
      if (!shapes.empty()) shapes += ", ";
      std::string name = in.value("name", "?");
      // Python's repr quoting: names such as scale['s'] go in double quotes.
      std::string quoted = name.find('\'') == std::string::npos ? "'" + name + "'"
                                                                 : "\"" + name + "\"";
      std::string dtype = in.value("dtype", "?");
      if (in.contains("shape") && in["shape"].is_array()) {
        std::string dims;
        for (size_t i = 0; i < in["shape"].size(); ++i) {
          if (i) dims += ", ";
          dims += in["shape"][i].dump();
        }
        if (in["shape"].size() == 1) dims += ",";
        // float32 is the common case and stays implicit, as in the reference output.
        shapes += fmt::format("{}: ({}){}", quoted, dims, dtype == "float32" ? "" : " " + dtype);
      } else {
        shapes += fmt::format("{}: {}", quoted, dtype);
      }
    }
    b.sig_fields.push_back({"Input Shape", shapes.empty() ? "()" : shapes});
    b.sig_fields.push_back({"Hash", m.hash8()});
    return b;
  }
};

}  // namespace

int run_sequence(const RunRequest& request) {
  if (request.sequence.empty()) throw Error(ErrorKind::InvalidInput, "no tool given");
  if (is_corpus_run(request.global)) return run_corpus(request);
  validate_environment();
  // Option values are checked before anything runs, so a bad one is one usage error, not a
  // failure of every model.
  for (const ToolCall& call : request.sequence) {
    if (find_tool(call.name)) engine_internal::resolve_options(call.name, call.options);
  }
  // An interpreter the user named must work before any script runs: one usage error, not one
  // failure per script.
  if (!request.global.python.empty() || env_bool_set("TURNKEY_PYTHON")) {
    find_python(request.global.python);
  }
  Engine engine(request);
  return engine.run();
}

}  // namespace turnkey

namespace turnkey::engine_internal {

int run_worker_input(const RunRequest& request, const InputItem& item, WorkerLink& link) {
  Engine engine(request, &link);
  return engine.run_one(item);
}

}  // namespace turnkey::engine_internal
