#include "turnkey/engine/engine.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "turnkey/cache/build_cache.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/sha256.h"
#include "turnkey/common/version.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/engine/report_printer.h"
#include "turnkey/engine/tools.h"
#include "turnkey/inputs/inputs.h"
#include "turnkey/measure/loop.h"
#include "turnkey/measure/statistics.h"
#include "turnkey/measure/system_info.h"
#include "turnkey/onnx/model_facts.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kDefaultOpset = 17;

bool env_true(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s(v);
  return s == "1" || s == "True" || s == "true" || s == "TRUE" || s == "yes";
}

std::string one_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 400 ? line.substr(0, 400) + "..." : line;
}

const ToolCall* find_call(const std::vector<ToolCall>& sequence, const std::string& name) {
  for (const ToolCall& c : sequence) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

int resolve_opset(const json& options) {
  if (options.contains("opset") && options["opset"].is_number_integer()) {
    return options["opset"].get<int>();
  }
  if (const char* env = std::getenv("TURNKEY_ONNX_OPSET"); env && *env) {
    try {
      size_t used = 0;
      int v = std::stoi(env, &used);
      if (used == std::string(env).size() && v >= 1 && v <= 30) return v;
    } catch (const std::exception&) {
    }
    throw Error(ErrorKind::InvalidInput,
                fmt::format("TURNKEY_ONNX_OPSET={}: expected a whole number such as 17", env));
  }
  return kDefaultOpset;
}

// Everything the tools of one build share: the model, its build dir, and what was measured.
struct Build {
  std::string build_name;
  std::optional<BuildDir> dir;
  json state = json::object();
  json stats = json::object();
  fs::path onnx_path;
  std::vector<fs::path> input_pbs;
  std::vector<HostTensor> inputs;
  bool failed = false;
  ModelBlock block;

  void start_tool(const std::string& tool) {
    state["tools"].push_back({{"name", tool}, {"status", "running"},
                              {"started", utc_timestamp_now()}});
    state["last_tool"] = tool;
    save_state();
  }
  void end_tool(bool ok, double duration_s, const std::string& error = "") {
    json& t = state["tools"].back();
    t["status"] = ok ? "successful" : "failed";
    t["duration_s"] = duration_s;
    if (!error.empty()) t["error"] = error;
    save_state();
  }
  void save_state() {
    if (dir) dir->write_state(state);
  }
  void save_stats() {
    if (dir) dir->write_stats(stats);
  }
  void log(const std::string& tool, const std::string& text) {
    if (!dir) return;
    try {
      write_file_atomic(dir->log_path(tool), text);
    } catch (const Error&) {
    }
  }
  void fail(const std::string& tool, const std::string& reason) {
    failed = true;
    state["build_status"] = "failed";
    state["error"] = reason;
    state["failed_tool"] = tool;
    block.status = fmt::format("Failed at {}: {}", tool, reason);
    if (dir) block.status_detail.push_back("Log:            " + dir->log_path(tool).string());
    save_state();
  }
};

class Engine {
 public:
  explicit Engine(const RunRequest& request)
      : request_(request), cache_dir_(resolve_cache_dir(request.global.cache_dir)) {
    show_traceback_ = env_true("TURNKEY_TRACEBACK");
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
    for (const InputItem& item : items) {
      try {
        run_input(item);
      } catch (const Error& e) {
        input_error(item.given, e.what());
      }
    }
    std::cout << "Woohoo! The 'benchmark' command is complete.\n" << std::flush;
    return any_failed_ ? 1 : 0;
  }

 private:
  const RunRequest& request_;
  fs::path cache_dir_;
  bool show_traceback_ = false;
  bool any_failed_ = false;
  bool header_printed_ = false;

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

  void input_error(const std::string& given, std::string reason) {
    any_failed_ = true;
    // Lower layers may already name the file; name it once.
    if (reason.rfind(given + ": ", 0) == 0) reason.erase(0, given.size() + 2);
    std::cout << std::flush;
    std::cerr << "turnkey: " << given << ": " << one_line(reason) << "\n" << std::flush;
  }

  std::string first_tool_for(const InputItem& item) const {
    const std::string& first = request_.sequence.front().name;
    const std::string ext = item.path.extension().string();
    if (first == "auto") {
      if (ext == ".py") return "discover";
      if (ext == ".onnx") return "load-onnx";
      throw Error(ErrorKind::InvalidInput,
                  "not a Python script (.py) or ONNX file (.onnx)");
    }
    if (first == "discover" && ext != ".py") {
      throw Error(ErrorKind::InvalidInput, "discover needs a Python script (.py)");
    }
    if (first == "load-onnx" && ext != ".onnx") {
      throw Error(ErrorKind::InvalidInput, "load-onnx needs an ONNX file (.onnx)");
    }
    return first;
  }

  void run_input(const InputItem& item) {
    if (!item.error.empty()) {
      input_error(item.given, item.error);
      return;
    }
    std::string first = first_tool_for(item);
    if (first == "discover") {
      if (!request_.global.labels.empty() &&
          !labels_match(read_labels(item.path), request_.global.labels)) {
        return;  // filtered out by --labels: not an error
      }
      run_script(item);
    } else {
      run_onnx_file(item);
    }
  }

  json tool_options(const std::string& name) const {
    const ToolCall* call = find_call(request_.sequence, name);
    json options = default_tool_options(*find_tool(name));
    if (call) options.update(call->options);
    return options;
  }

  bool wants(const std::string& tool) const {
    return find_call(request_.sequence, tool) != nullptr;
  }

  // The tools this input really runs: "auto" resolved, tools that do not apply left out.
  json effective_sequence(const std::string& first) const {
    json sequence = json::array({first});
    for (size_t i = 1; i < request_.sequence.size(); ++i) {
      const std::string& name = request_.sequence[i].name;
      if (find_tool(name)->group == ToolGroup::First) continue;
      if (name == "export-pytorch" && first != "discover") continue;
      sequence.push_back(name);
    }
    return sequence;
  }

  json base_state(const std::string& build_name, const InputItem& item,
                  const std::string& first) const {
    json sequence = effective_sequence(first);
    return {{"build_name", build_name},
            {"build_status", "incomplete"},
            {"turnkey_version", kVersion},
            {"input", fs::absolute(item.path).string()},
            {"sequence", sequence},
            {"command_line", request_.command_line},
            {"started", utc_timestamp_now()},
            {"tools", json::array()}};
  }

  // ---- ONNX files --------------------------------------------------------------------------

  void run_onnx_file(const InputItem& item) {
    auto t0 = std::chrono::steady_clock::now();
    onnx_model::ModelFacts facts;
    try {
      facts = onnx_model::load_facts(item.path);
    } catch (const Error& e) {
      input_error(item.given, e.what());
      return;
    }
    Build build;
    build.build_name = make_build_name(item.path.stem().string(), facts.sha256.substr(0, 8));
    build.dir.emplace(cache_dir_, build.build_name);
    build.dir->create();
    build.state = base_state(build.build_name, item, "load-onnx");
    build.onnx_path = fs::absolute(item.path);
    build.state["onnx_path"] = build.onnx_path.string();
    build.start_tool("load-onnx");
    record_facts(build, facts);
    build.stats["model_name"] = item.path.stem().string();
    build.stats["hash"] = facts.sha256.substr(0, 8);
    build.stats["hash_full"] = facts.sha256;
    build.stats["model_type"] = "ONNX file";

    ModelBlock& b = build.block;
    b.title = item.path.stem().string();
    b.fields = {{"Model Type", "ONNX File (.onnx)"},
                {"Opset", std::to_string(facts.opset)},
                {"Parameters", fmt::format("{} ({})", facts.parameters,
                                           format_bytes(static_cast<double>(facts.parameter_bytes)))},
                {"Input Shape", describe_onnx_inputs(facts)},
                {"Hash", facts.sha256.substr(0, 8)},
                {"Build dir", build.dir->path().string()}};

    bool ok = true;
    try {
      json opts = tool_options("load-onnx");
      auto overrides = onnx_model::parse_input_shapes(opts.value("input_shapes", ""));
      if (overrides.empty()) build.inputs = shipped_inputs(item.path, facts);
      if (!build.inputs.empty()) {
        build.stats["input_source"] = "test_data_set_0 beside the model";
      } else {
        auto shapes = onnx_model::resolve_input_shapes(facts, overrides);
        build.inputs = onnx_model::generate_inputs(facts, shapes);
        build.stats["input_source"] = "generated (seeded)";
      }
    } catch (const Error& e) {
      ok = false;
      build.log("load-onnx", e.what());
      build.end_tool(false, seconds_since(t0), one_line(e.what()));
      build.fail("load-onnx", one_line(e.what()));
    }
    if (ok) {
      build.log("load-onnx", fmt::format("loaded {}\nopset {}\nparameters {}\n",
                                         item.path.string(), facts.opset, facts.parameters));
      build.end_tool(true, seconds_since(t0));
      if (wants("benchmark")) run_benchmark(build);
    }
    finish_build(build);
    print_block(item.path.filename().string(), {build.block});
    if (build.failed) any_failed_ = true;
  }

  // The tensors in `files` (graph-input order) when they match the graph's inputs in count,
  // dtype and every fixed dim; else none.
  static std::vector<HostTensor> matching_inputs(const std::vector<fs::path>& files,
                                                 const onnx_model::ModelFacts& facts) {
    std::vector<HostTensor> inputs;
    if (files.size() != facts.inputs.size()) return inputs;
    try {
      for (size_t i = 0; i < files.size(); ++i) {
        HostTensor t = onnx_model::read_tensor_pb(files[i]);
        const auto& want = facts.inputs[i];
        bool ok = t.dtype == want.dtype && (!want.has_shape || t.shape.size() == want.dims.size());
        for (size_t d = 0; ok && want.has_shape && d < want.dims.size(); ++d) {
          if (want.dims[d].known() && want.dims[d].value != t.shape[d]) ok = false;
        }
        if (!ok) return {};
        t.name = want.name;
        inputs.push_back(std::move(t));
      }
    } catch (const Error&) {
      return {};
    }
    return inputs;
  }

  // Inputs shipped with the model in the ONNX test-data layout (test_data_set_0/input_N.pb, as
  // in the ONNX model zoo and backend tests).
  static std::vector<HostTensor> shipped_inputs(const fs::path& model,
                                                const onnx_model::ModelFacts& facts) {
    const fs::path dir = model.parent_path() / "test_data_set_0";
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return {};
    std::vector<fs::path> files;
    for (size_t i = 0; i < facts.inputs.size(); ++i) {
      files.push_back(dir / fmt::format("input_{}.pb", i));
    }
    return matching_inputs(files, facts);
  }

  static std::string describe_onnx_inputs(const onnx_model::ModelFacts& facts) {
    std::string s;
    for (const auto& in : facts.inputs) {
      if (!s.empty()) s += ", ";
      std::string dims;
      for (size_t i = 0; i < in.dims.size(); ++i) {
        if (i) dims += ", ";
        dims += in.dims[i].known() ? std::to_string(in.dims[i].value)
                                   : (in.dims[i].param.empty() ? "?" : in.dims[i].param);
      }
      if (in.dims.size() == 1) dims += ",";
      s += fmt::format("'{}': ({})", in.name, dims);
    }
    return s;
  }

  void record_facts(Build& build, const onnx_model::ModelFacts& facts) {
    json& s = build.stats;
    s["onnx_file"] = facts.path.string();
    s["onnx_file_size_bytes"] = facts.file_size_bytes;
    s["onnx_opset"] = facts.opset;
    s["onnx_ir_version"] = facts.ir_version;
    s["onnx_producer"] = facts.producer;
    s["parameters"] = facts.parameters;
    s["parameter_bytes"] = facts.parameter_bytes;
    s["onnx_node_count"] = facts.node_count;
    s["onnx_ops"] = facts.op_histogram;
    auto describe = [](const std::vector<onnx_model::ValueInfo>& values) {
      json out = json::array();
      for (const auto& v : values) {
        json dims = json::array();
        for (const auto& d : v.dims) {
          if (d.known()) dims.push_back(d.value);
          else dims.push_back(d.param.empty() ? "?" : d.param);
        }
        out.push_back({{"name", v.name}, {"dtype", v.onnx_type}, {"shape", dims}});
      }
      return out;
    };
    s["onnx_inputs"] = describe(facts.inputs);
    s["onnx_outputs"] = describe(facts.outputs);
  }

  // ---- benchmark -----------------------------------------------------------------------------

  void run_benchmark(Build& build) {
    json opts = tool_options("benchmark");
    auto t0 = std::chrono::steady_clock::now();
    build.start_tool("benchmark");
    std::string runtime_name = opts.value("runtime", "ort");
    std::string device = opts.value("device", "x86");
    try {
      const Runtime* runtime = find_runtime(runtime_name);
      if (!runtime) {
        std::string hint = closest_name(runtime_name, runtime_names());
        throw Error(ErrorKind::InvalidInput,
                    fmt::format("unknown runtime '{}'{}", runtime_name,
                                hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
      }
      Availability a = runtime->probe();
      if (!a.available) {
        throw Error(ErrorKind::Runtime, fmt::format("{}: unavailable: {}", runtime_name, a.reason));
      }
      RuntimeOptions ro;
      ro.device = device;
      ro.threads = opts.value("threads", 0);
      for (const auto& kv : opts.value("rt_args", json::array())) {
        std::string s = kv.get<std::string>();
        size_t eq = s.find('=');
        if (eq == std::string::npos || eq == 0) {
          throw Error(ErrorKind::InvalidInput,
                      fmt::format("--rt-args '{}': expected key=value", s));
        }
        ro.runtime_args[s.substr(0, eq)] = s.substr(eq + 1);
      }
      LoopOptions lo;
      lo.iterations = opts.value("iterations", 100);
      lo.warmup_iterations = opts.value("warmup", 10);
      if (lo.iterations < 1 || lo.iterations > 100000000) {
        throw Error(ErrorKind::InvalidInput,
                    fmt::format("--iterations {}: must be between 1 and 100000000", lo.iterations));
      }
      if (lo.warmup_iterations < 0) {
        throw Error(ErrorKind::InvalidInput, "--warmup must not be negative");
      }
      std::unique_ptr<Session> session = runtime->load(build.onnx_path, build.inputs, ro);
      LoopResult loop = run_loop(*session, lo);
      LatencyStats st = compute_stats(loop.samples_ms);

      // The batch is the first dim of the first input when that input has a batch dim at all
      // (rank >= 2); a vector input of shape (10,) is one sample of 10 features.
      int64_t batch = 1;
      if (!build.inputs.empty() && build.inputs.front().shape.size() >= 2 &&
          build.inputs.front().shape.front() > 0) {
        batch = build.inputs.front().shape.front();
      }
      double throughput = st.mean_ms > 0 ? static_cast<double>(batch) * 1000.0 / st.mean_ms : 0;
      const CpuFacts& cpu = cpu_facts();
      int threads = ro.threads > 0 ? ro.threads : cpu.physical_cores;
      if (auto it = ro.runtime_args.find("threads"); it != ro.runtime_args.end()) {
        threads = std::atoi(it->second.c_str());
      }

      json& s = build.stats;
      s["device"] = device;
      s["device_name"] = cpu.model;
      s["runtime"] = runtime_name;
      s["runtime_name"] = runtime->display_name();
      s["runtime_version"] = runtime->version();
      s["threads"] = threads;
      s["batch_size"] = batch;
      s["iterations"] = st.iterations;
      s["warmup_iterations"] = loop.warmup_iterations;
      s["cold_latency_ms"] = loop.cold_ms;
      s["mean_latency_ms"] = st.mean_ms;
      s["median_latency_ms"] = st.median_ms;
      s["median_ci_low_ms"] = st.median_ci_low_ms;
      s["median_ci_high_ms"] = st.median_ci_high_ms;
      s["min_latency_ms"] = st.min_ms;
      s["max_latency_ms"] = st.max_ms;
      s["std_latency_ms"] = st.std_ms;
      s["cv"] = st.cv;
      s["p90_latency_ms"] = st.p90_ms;
      s["p95_latency_ms"] = st.p95_ms;
      s["p99_latency_ms"] = st.p99_ms;
      s["throughput_ips"] = throughput;
      s["percentile_method"] = "linear interpolation between closest ranks (type 7)";
      s["throughput_definition"] = "batch_size * 1000 / mean_latency_ms";
      write_file_atomic(build.dir->path() / fmt::format("samples_{}_{}.json", runtime_name, device),
                        json({{"unit", "ms"}, {"samples", loop.samples_ms}}).dump() + "\n");

      build.log("benchmark",
                fmt::format("runtime {} {} on {} ({} threads)\ncold {} ms, warm-up {}, {} "
                            "iterations\nmedian {} ms mean {} ms\n",
                            runtime->display_name(), runtime->version(), cpu.model, threads,
                            loop.cold_ms, loop.warmup_iterations, st.iterations, st.median_ms,
                            st.mean_ms));
      build.end_tool(true, seconds_since(t0));
      build.state["build_status"] = "successful";

      ModelBlock& b = build.block;
      b.status = fmt::format("Successfully benchmarked on {} ({} v{})", cpu.model, runtime_name,
                             runtime->version());
      b.status_detail.push_back(
          fmt::format("Mean Latency:   {}\tmilliseconds (ms)", format_latency(st.mean_ms)));
      b.status_detail.push_back(
          fmt::format("Throughput:     {:.1f}\tinferences per second (IPS)", throughput));
      b.status_detail.push_back(fmt::format(
          "Latency (ms):   median {} [95% CI {}, {}], min {}, max {}, std {}, p90 {}, p99 {} "
          "({} iterations)",
          format_latency(st.median_ms), format_latency(st.median_ci_low_ms),
          format_latency(st.median_ci_high_ms), format_latency(st.min_ms),
          format_latency(st.max_ms), format_latency(st.std_ms), format_latency(st.p90_ms),
          format_latency(st.p99_ms), st.iterations));
    } catch (const Error& e) {
      build.log("benchmark", e.what());
      build.end_tool(false, seconds_since(t0), one_line(e.what()));
      build.fail("benchmark", one_line(e.what()));
    }
  }

  void finish_build(Build& build) {
    if (!build.dir) return;
    if (!build.failed && build.state["build_status"] == "incomplete") {
      build.state["build_status"] = "successful";
    }
    build.state["finished"] = utc_timestamp_now();
    build.stats["build_name"] = build.build_name;
    build.stats["build_status"] = build.state["build_status"];
    build.save_state();
    build.save_stats();
  }

  static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // ---- Python scripts ------------------------------------------------------------------------

  void run_script(const InputItem& item) {
    const std::string script_name = item.path.filename().string();
    std::string python;
    try {
      python = find_python(request_.global.python);
    } catch (const Error& e) {
      input_error(item.given, e.what());
      return;
    }
    json discover_opts = tool_options("discover");
    ScriptOptions so;
    so.python = python;
    so.script = fs::absolute(item.path);
    so.script_args = discover_opts.value("script_args", "");
    so.max_depth = discover_opts.value("max_depth", 0);
    if (so.max_depth < 0) throw Error(ErrorKind::InvalidInput, "--max-depth must be >= 0");
    std::cout << std::flush;
    std::cerr << std::flush;

    auto t0 = std::chrono::steady_clock::now();
    ScriptSession session(so);
    DiscoveryResult disc = session.discover();
    double discover_s = seconds_since(t0);
    Labels labels = read_labels(item.path);

    // Which discovered entries are built: all, or those whose hash starts with a given filter.
    auto selected = [&](const DiscoveredModel& m) {
      if (item.hashes.empty()) return true;
      for (const std::string& h : item.hashes) {
        if (!h.empty() && m.hash.rfind(h, 0) == 0) return true;
      }
      return false;
    };
    bool build_anything = wants("export-pytorch") || wants("benchmark");
    std::vector<Build> builds(disc.models.size());
    std::string discover_log = fmt::format(
        "script {}\npython {} (torch {}, onnx {})\nscript status {}{}\n{} models discovered in "
        "{:.3f} s\n",
        so.script.string(), python, disc.torch_version, disc.onnx_version, disc.script_status,
        disc.error.empty() ? "" : ": " + disc.error, disc.models.size(), discover_s);
    if (!disc.traceback.empty()) discover_log += "\n" + disc.traceback;

    for (size_t i = 0; i < disc.models.size(); ++i) {
      const DiscoveredModel& m = disc.models[i];
      Build& build = builds[i];
      build.block = model_block(m);
      if (!build_anything || !selected(m)) continue;
      build.build_name = make_build_name(item.path.stem().string(), m.hash8());
      build.dir.emplace(cache_dir_, build.build_name);
      build.dir->create();
      build.state = base_state(build.build_name, item, "discover");
      build.state["model_name"] = m.name;
      build.state["hash_full"] = m.hash;
      build.state["tools"].push_back({{"name", "discover"},
                                      {"status", "successful"},
                                      {"duration_s", discover_s}});
      build.log("discover", discover_log);
      json& s = build.stats;
      s["script"] = so.script.string();
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
      s["python_version"] = disc.python_version;
      build.block.sig_fields.push_back({"Build dir", build.dir->path().string()});
      build.save_state();
    }

    // Exports happen while the models are live in the Python process.
    if (wants("export-pytorch")) {
      int opset = resolve_opset(tool_options("export-pytorch"));
      for (size_t i = 0; i < disc.models.size(); ++i) {
        Build& build = builds[i];
        if (!build.dir) continue;
        auto te = std::chrono::steady_clock::now();
        build.start_tool("export-pytorch");
        if (!disc.ready) {
          std::string reason = "the script's process ended before the model could be exported";
          build.end_tool(false, seconds_since(te), reason);
          build.fail("export-pytorch", reason);
          continue;
        }
        fs::path onnx_dir = build.dir->path() / "onnx";
        fs::create_directories(onnx_dir);
        fs::path io_dir = build.dir->path() / "io";
        fs::create_directories(io_dir);
        ExportResult r;
        try {
          r = session.export_model(disc.models[i].id,
                                   onnx_dir / (build.build_name + "-op" + std::to_string(opset) +
                                               "-base.onnx"),
                                   opset, io_dir);
        } catch (const Error& e) {
          r.ok = false;
          r.error = e.what();
        }
        build.log("export-pytorch",
                  fmt::format("opset {}\n{}\n{}{}", opset, r.ok ? "exported " + r.onnx_path.string()
                                                             : "failed: " + r.error,
                              r.log, r.traceback.empty() ? "" : "\n" + r.traceback));
        if (!r.ok) {
          if (show_traceback_ && !r.traceback.empty()) std::cerr << r.traceback << std::flush;
          build.end_tool(false, seconds_since(te), one_line(r.error));
          build.fail("export-pytorch", one_line(r.error));
          continue;
        }
        build.onnx_path = r.onnx_path;
        build.input_pbs = r.inputs;
        build.state["onnx_path"] = r.onnx_path.string();
        build.state["opset"] = opset;
        build.stats["export_s"] = r.export_s;
        build.end_tool(true, seconds_since(te));
      }
    }
    std::string child_status = session.close();

    // The rest runs in C++ alone: facts of the exported file, then the benchmark.
    for (size_t i = 0; i < disc.models.size(); ++i) {
      Build& build = builds[i];
      if (!build.dir) continue;
      if (!build.failed && !build.onnx_path.empty()) {
        try {
          onnx_model::ModelFacts facts = onnx_model::load_facts(build.onnx_path);
          record_facts(build, facts);
          build.inputs = load_saved_inputs(build, facts);
        } catch (const Error& e) {
          build.fail("export-pytorch", one_line(e.what()));
        }
        if (!build.failed && wants("benchmark")) {
          run_benchmark(build);
        } else if (!build.failed) {
          build.block.status = "Model successfully built";
        }
      } else if (!build.failed && !wants("export-pytorch") && wants("benchmark")) {
        build.fail("benchmark", "benchmark needs an ONNX model: put export-pytorch before it");
      }
      finish_build(build);
      if (build.failed) any_failed_ = true;
    }

    std::vector<ModelBlock> blocks;
    for (Build& b : builds) blocks.push_back(std::move(b.block));
    ScriptFooter footer;
    bool script_failed = disc.script_status == "exception" || disc.script_status == "crashed" ||
                         (disc.script_status == "exit" && disc.exit_code != 0);
    if (script_failed) {
      any_failed_ = true;
      fs::path log = write_script_log(item, discover_log);
      footer.status = disc.script_status == "exit"
                          ? fmt::format("Script failed: exited with code {}", disc.exit_code)
                          : "Script failed: " + one_line(disc.error);
      footer.detail = "Log:            " + log.string();
      if (show_traceback_ && !disc.traceback.empty()) std::cerr << disc.traceback << std::flush;
    }
    if (disc.models.empty() && !script_failed) footer.status = "No models discovered";
    bool filter_matched = item.hashes.empty();
    for (const auto& m : disc.models) filter_matched = filter_matched || selected(m);
    if (!filter_matched) {
      any_failed_ = true;
      footer.status = fmt::format("No model matches the hash filter ::{}",
                                  fmt::join(item.hashes, ","));
    }
    (void)child_status;
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

  // The exact inputs PyTorch saw, when they match the exported graph; else seeded ones.
  std::vector<HostTensor> load_saved_inputs(Build& build, const onnx_model::ModelFacts& facts) {
    std::vector<HostTensor> inputs = matching_inputs(build.input_pbs, facts);
    if (!inputs.empty() || facts.inputs.empty()) {
      build.stats["input_source"] = "captured from the script";
      return inputs;
    }
    auto shapes = onnx_model::resolve_input_shapes(facts, {});
    build.stats["input_source"] = "generated (seeded)";
    return onnx_model::generate_inputs(facts, shapes);
  }

  static ModelBlock model_block(const DiscoveredModel& m) {
    ModelBlock b;
    b.depth = m.depth;
    b.name = m.name;
    b.group_key = fmt::format("module {}", m.module_id);
    b.signature_index = m.signature_index;
    b.executed = m.executed;
    b.title = fmt::format("{} (executed {}x)", m.name, m.executed);
    b.fields.push_back({"Model Type", m.model_type});
    b.fields.push_back({"Class", fmt::format("{} (<class '{}'>)", m.class_name, m.class_path)});
    if (m.depth == 0) b.fields.push_back({"Location", fmt::format("{}, line {}", m.file, m.line)});
    b.fields.push_back({"Parameters", fmt::format("{} ({})", m.parameters,
                                                  format_bytes(static_cast<double>(m.parameter_bytes)))});
    std::string shapes;
    for (const auto& in : m.inputs) {
      if (!shapes.empty()) shapes += ", ";
      std::string name = in.value("name", "?");
      if (in.contains("shape") && in["shape"].is_array()) {
        std::string dims;
        for (size_t i = 0; i < in["shape"].size(); ++i) {
          if (i) dims += ", ";
          dims += in["shape"][i].dump();
        }
        if (in["shape"].size() == 1) dims += ",";
        shapes += fmt::format("'{}': ({})", name, dims);
      } else {
        shapes += fmt::format("'{}': {}", name, in.value("dtype", "?"));
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
  Engine engine(request);
  return engine.run();
}

}  // namespace turnkey
