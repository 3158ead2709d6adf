// The benchmark tool's options: every value checked and resolved before anything loads.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "benchmark/benchmark.h"
#include "turnkey/common/error.h"
#include "turnkey/catalog/tools.h"

namespace turnkey::engine_internal {

using nlohmann::json;

namespace {

LoopOptions loop_options(const json& opts) {
  // Defaults are LoopOptions' own (the tool table shows the same ones).
  LoopOptions lo;
  lo.iterations = opts.value("iterations", lo.iterations);
  lo.warmup_iterations = opts.value("warmup", lo.warmup_iterations);
  lo.blocks = opts.value("blocks", lo.blocks);
  // An explicit --warmup 0 means no warm-up at all (cold measurements on purpose).
  if (lo.warmup_iterations == 0) lo.min_warmup_s = 0;
  lo.max_warmup_iterations = std::max(lo.max_warmup_iterations, lo.warmup_iterations);
  const bool adaptive = opts.value("adaptive", false);
  const bool has_duration = opts.contains("duration_s") && !opts["duration_s"].is_null();
  if (adaptive && has_duration) {
    throw Error(ErrorKind::InvalidInput, "--adaptive and --duration exclude each other");
  }
  if (adaptive) {
    lo.rule = StopRule::Adaptive;
    lo.ci_target = opts.value("ci_target_pct", lo.ci_target * 100.0) / 100.0;
    lo.min_iterations = opts.value("min_iterations", lo.min_iterations);
    lo.max_iterations = opts.value("max_iterations", lo.max_iterations);
    lo.max_duration_s = opts.value("max_duration_s", lo.max_duration_s);
  } else if (has_duration) {
    lo.rule = StopRule::Duration;
    lo.duration_s = opts["duration_s"].get<double>();
  }
  validate_loop_options(lo);
  return lo;
}

// Tolerance of a runtime's outputs against PyTorch's (on the CPU): fp32 builds are held to 1e-3
// relative error and cosine 0.9999, on a GPU to 1e-2 (its kernels sum in other orders, and TF32,
// which PyTorch allows for cuDNN convolutions by default, keeps 10 mantissa bits: docs/gpu.md);
// fp16 builds to the fp16 conversion's own tolerance (docs/measurement.md); --max-rel-error /
// --min-cosine replace either bound.
transforms::Tolerance output_tolerance(const Build& build, const json& opts) {
  const double fp32_rel_error = opts.value("device", "x86") == "nvidia" ? 1e-2 : 1e-3;
  transforms::Tolerance tol = build.stats.has("fp16_worst_rel_error")
                             ? transforms::Tolerance{}
                             : transforms::Tolerance{fp32_rel_error, 0.9999};
  const auto given = [&](const char* key) { return opts.contains(key) && !opts[key].is_null(); };
  if (given("max_rel_error")) {
    tol.max_rel_error = opts["max_rel_error"].get<double>();
    if (!std::isfinite(tol.max_rel_error) || tol.max_rel_error < 0) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("--max-rel-error {}: expected a number >= 0", tol.max_rel_error));
    }
  }
  if (given("min_cosine")) {
    tol.min_cosine = opts["min_cosine"].get<double>();
    if (!(tol.min_cosine >= -1 && tol.min_cosine <= 1)) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("--min-cosine {}: expected a number from -1 to 1", tol.min_cosine));
    }
  }
  return tol;
}

std::vector<int> parse_cpu_list_option(const std::string& text) {
  return text.empty() ? std::vector<int>{} : parse_cpu_list(text);
}

}  // namespace

ScopedPin::ScopedPin(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  CPU_ZERO(&saved_);
  if (sched_getaffinity(0, sizeof(saved_), &saved_) != 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    throw Error(ErrorKind::InvalidInput, "--pin: the kernel refused the CPU set");
  }
  active_ = true;
}

ScopedPin::~ScopedPin() {
  if (active_) sched_setaffinity(0, sizeof(saved_), &saved_);
}

namespace {

// The runtime and device asked for, each known, available here, and the one for the other.
// Python-side runtimes answer for the run's own interpreter and process (`python_side`).
const Runtime* runtime_for(const std::string& runtime_name, const std::string& device,
                           const PythonSide& python_side) {
  const Runtime* runtime = find_runtime(runtime_name);
  if (!runtime) {
    std::string hint = closest_name(runtime_name, runtime_names());
    throw Error(ErrorKind::InvalidInput,
                fmt::format("unknown runtime '{}'{}", runtime_name,
                            hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
  }
  const Device* dev = find_device(device);
  if (!dev) {
    std::vector<std::string> names;
    for (const Device& d : device_registry()) names.push_back(d.name);
    std::string hint = closest_name(device, names);
    throw Error(ErrorKind::InvalidInput,
                fmt::format("unknown device '{}' (known: {}){}", device, fmt::join(names, ", "),
                            hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)));
  }
  if (Availability d = dev->probe(); !d.available) {
    throw Error(ErrorKind::Runtime, fmt::format("device {}: unavailable: {}", device, d.reason));
  }
  // Whether the runtime targets the device at all comes before whether it is installed here: a
  // runtime that never runs on it says so wherever it is asked (docs/gpu.md).
  const auto& devices = runtime->devices();
  if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("{} does not run on device '{}' (it runs on {})", runtime_name, device,
                            fmt::join(devices, ", ")));
  }
  Availability a = runtime->probe_for(python_side);
  if (!a.available) {
    throw Error(ErrorKind::Runtime, fmt::format("{}: unavailable: {}", runtime_name, a.reason));
  }
  if (Availability d = runtime->probe_device(device, python_side); !d.available) {
    throw Error(ErrorKind::Runtime,
                fmt::format("{} on {}: unavailable: {}", runtime_name, device, d.reason));
  }
  return runtime;
}

// --threads, --pin and --rt-args as the runtime takes them; an optimize-ort model runs with the
// runtime's own graph optimizations off unless the user said otherwise.
RuntimeOptions runtime_options(const Build& build, const json& opts,
                               const std::string& runtime_name, const std::string& device,
                               std::string& log) {
  RuntimeOptions ro;
  ro.device = device;
  ro.threads = opts.value("threads", 0);
  if (ro.threads < 0 || ro.threads > 4096) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("--threads {}: expected 0 to 4096", ro.threads));
  }
  ro.cpus = parse_cpu_list_option(opts.value("pin", std::string()));
  for (const auto& kv : opts.value("rt_args", json::array())) {
    std::string s = kv.get<std::string>();
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(ErrorKind::InvalidInput, fmt::format("--rt-args '{}': expected key=value", s));
    }
    ro.runtime_args[s.substr(0, eq)] = s.substr(eq + 1);
  }
  if (build.stats.flag("ort_preoptimized") && runtime_name == "ort" &&
      !ro.runtime_args.count("graph_optimization_level") && !ro.runtime_args.count("opt_level")) {
    ro.runtime_args["graph_optimization_level"] = "disabled";
    log += "graph optimizations off: the model was optimized by optimize-ort\n";
  }
  return ro;
}

}  // namespace

bool benchmark_uses_script_process(const Build& build, const json& opts) {
  const auto it = opts.find("runtime");
  if (it != opts.end() && !it->is_string()) return true;  // the tool itself says what is wrong
  const Runtime* runtime = find_runtime(it == opts.end() ? "ort" : it->get<std::string>());
  // The judge may ask the script's process for PyTorch's float64 outputs (build.h).
  return runtime == nullptr || runtime->needs_live_model() || float64_on_demand(build);
}

BenchmarkSetup resolve_benchmark(const Build& build, const json& opts, std::string& log) {
  const std::string runtime_name = opts.value("runtime", "ort");
  const std::string device = opts.value("device", "x86");
  const PythonSide python_side{build.session ? build.session->python() : "", build.session};
  const Runtime* runtime = runtime_for(runtime_name, device, python_side);
  RuntimeOptions ro = runtime_options(build, opts, runtime_name, device, log);
  const LoopOptions lo = loop_options(opts);
  const transforms::Tolerance tol = output_tolerance(build, opts);  // checked before anything runs
  // Threads the runtime will use: the option, else the runtime's own argument, else the
  // physical cores this process may use within any CPU quota (cpu_budget.h).
  int threads = ro.threads;
  if (auto it = ro.runtime_args.find("threads"); it != ro.runtime_args.end()) {
    threads = std::atoi(it->second.c_str());
  }
  // Requests in flight share the default budget (benchmark_requests.cpp); --threads is per request.
  const int concurrency = requested_concurrency(*runtime, opts);
  if (concurrency > 1) validate_concurrent_options(lo, concurrency);
  if (threads <= 0) threads = threads_per_request(default_threads(ro.cpus), concurrency);
  if (ro.threads == 0) ro.threads = threads;
  ro.concurrency = concurrency;
  const int repetitions = opts.value("repetitions", 1);
  if (repetitions < 1 || repetitions > 1000) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("--repetitions {}: expected 1 to 1000", repetitions));
  }
  BenchmarkSetup setup{runtime, runtime_name, device, ro,     runtime->version_for(python_side),
                       lo,      repetitions,  tol,    threads};
  setup.concurrency = concurrency;
  return setup;
}

}  // namespace turnkey::engine_internal
