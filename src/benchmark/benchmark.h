// Internal to the engine: the benchmark tool's parts. tool_benchmark (benchmark.cpp) resolves its
// options (benchmark_options.cpp), loads and times the model, judges the outputs
// (benchmark_judge.cpp) and records the result (benchmark_record.cpp). Not thread-safe: one
// Build is worked on by one thread.
#pragma once

#include <sched.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stages/build.h"
#include "turnkey/transforms/transforms.h"
#include "turnkey/measure/concurrent_loop.h"
#include "turnkey/machine/cpu_budget.h"
#include "turnkey/measure/loop.h"
#include "turnkey/measure/statistics.h"
#include "turnkey/machine/system_info.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey::engine_internal {

// Every benchmark option checked and resolved, before anything loads.
struct BenchmarkSetup {
  const Runtime* runtime = nullptr;
  std::string runtime_name, device;
  RuntimeOptions ro;  // ro.threads is the resolved thread count
  std::string runtime_version;  // as the run's interpreter sees it (PythonSide)
  LoopOptions loop;
  int repetitions = 1;  // --repetitions
  transforms::Tolerance tolerance;
  int threads = 0;      // threads the runtime will use (per request)
  int concurrency = 1;  // requests in flight (--concurrency); 1 = run_loop's single request
};

// Throws Error(InvalidInput) for a bad value, Error(Runtime) for an unavailable runtime/device.
// Appends to `log` what it decided for the user (e.g. graph optimizations off).
BenchmarkSetup resolve_benchmark(const Build& build, const nlohmann::json& opts, std::string& log);

// Pins the calling thread (and so the threads a runtime creates from it) to `cpus` for its
// lifetime, then restores the previous set.
class ScopedPin {
 public:
  explicit ScopedPin(const std::vector<int>& cpus);
  ~ScopedPin();
  ScopedPin(const ScopedPin&) = delete;
  ScopedPin& operator=(const ScopedPin&) = delete;

 private:
  cpu_set_t saved_;
  bool active_ = false;
};

// Requests in flight (benchmark_requests.cpp). --concurrency of one run (the sweep gives each
// run one value), checked against the runtime's ConcurrencySupport: Error(InvalidInput) with the
// runtime's refusal.
int requested_concurrency(const Runtime& runtime, const nlohmann::json& opts);
// The thread budget of a request: max(1, usable_threads / concurrency).
int threads_per_request(int usable_threads, int concurrency);
struct Requests {
  ConcurrentResult run;
  int sessions = 1;  // 1 shared by the callers, or one per request
};
// Times setup.concurrency requests at once: callers of `first` (Session::caller()) or sessions
// from `load` (which throws a StatusError of its own when loading fails). A failure while timing
// is a StatusError(RuntimeRunFailed).
Requests run_requests(Session& first, const BenchmarkSetup& setup,
                      const std::function<std::unique_ptr<Session>()>& load,
                      const LoopHooks& hooks);
// Why a concurrent measurement may not be trusted: more requests than CPUs, a starved caller.
std::vector<Flag> requests_flags(const Requests& r, int usable_cpus);

struct Judgement {
  std::string line;  // for the block and the log
  bool mismatch = false;
};

// Whose outputs a build's are judged against, for the words that say so: "--input-data's",
// "Keras's" (a Keras model: the outputs Keras computed at export) or "PyTorch's".
std::string reference_outputs_name(const Build& build);

// A runtime's outputs against the PyTorch outputs saved at export (docs/measurement.md):
// writes `correctness` (with its verdict) and the error fields into the build's stats. Outputs
// that carry no signal are judged on the export's intermediate tensors, which the setup's
// runtime computes on a copy of the graph (benchmark_judge.cpp), or inconclusive. A mismatch
// may ask the script's process for PyTorch's float64 outputs (float64_on_demand), said in `log`.
// On a mismatch, `again` (when given) gives the outputs of one more call on the same inputs: a
// runtime whose outputs change from call to call is named nondeterministic (`correctness.repeat`).
Judgement judge_outputs(Build& build, const std::vector<HostTensor>& outputs,
                        const BenchmarkSetup& setup, std::string& log,
                        const std::function<std::vector<HostTensor>()>& again = nullptr);

// The outputs of one call in a fresh session, after the timed ones (the judge's `again`).
std::vector<HostTensor> outputs_of_one_more_call(Build& build, const BenchmarkSetup& setup,
                                                 bool live);

// PyTorch's float64 outputs asked of the script's process (float64_on_demand, build.h) into the
// build's io folder, for the judge after the timed calls: build.float64_pbs, or none and
// `float64_left_out` saying why (a check not made, never a failed benchmark), said in `log`.
void ask_float64_outputs(Build& build, const std::vector<HostTensor>& reference, std::string& log);

// One repetition: a session loaded, warmed up and timed (docs/measurement.md, "Repetitions").
struct Repetition {
  LoopResult loop;
  LatencyStats stats;
  double load_s = 0;  // Runtime::load / load_live of its (first) session
  Requests requests;  // --concurrency above 1: the requests' numbers (run.loop moved to `loop`)
  double probe_before_ms = 0, probe_after_ms = 0;  // the machine-speed probe around its timed phase
  bool probe_waited_out = false;  // a probe ran while the runtime's threads were still busy
  ThrottleCounters throttled;                      // CPU quota throttling during its timed phase
};

// What a benchmark measured: every repetition, and their samples pooled.
struct Measurement {
  std::vector<Repetition> repetitions;  // at least one
  LoopResult loop;     // the first repetition's cold call, warm-up and memory; samples pooled
  LatencyStats stats;  // over the pooled samples
  // The interval for the next run's median (docs/measurement.md "The interval"), how it was
  // made, and the block medians it was made from (every repetition's, in order). The within-run
  // interval is this run's alone (what the noisy flag reads); the interval joins it with the
  // run medians: the result's earlier runs on this host (most recent last) and this one.
  double interval_low_ms = 0, interval_high_ms = 0;
  double within_low_ms = 0, within_high_ms = 0;
  std::string interval_method;
  std::vector<double> block_medians_ms;
  std::vector<double> earlier_medians_ms;
  int64_t interval_runs = 1;
  CpuBudget budget;
  EnvironmentFingerprint env;
  // Memory the model added over the holding process's resident memory just before loading
  // (the largest over repetitions), bytes; the process peaks stay in `loop`.
  int64_t model_memory_load_bytes = 0, model_memory_run_bytes = 0;
  double probe_best_ms = 0;    // the machine's best probe, this run's included
  double probe_slowdown = 0;   // slowest probe of this run / the best known - 1
  // The slowest repetition's faster probe / the best known - 1: a slowdown both probes around a
  // timed phase saw (what the `machine slowed` flag reads; one slow probe is a passing burst).
  double probe_sustained_slowdown = 0;
  ThrottleCounters throttled;  // summed over the repetitions' timed phases
  double load_s = 0;           // the first repetition's load
  int concurrency = 1;         // requests in flight
  int sessions = 1;            // sessions loaded for them
  double calls_per_s = 0;  // concurrency above 1: sustained calls per second (ConcurrentResult)
  int64_t batch = 1;
  double throughput_ips = 0;
  double overhead_fraction = 0;
  std::vector<Flag> flags;  // why the numbers may not be trusted
  bool live = false;               // timed the live PyTorch model, not an ONNX file
  nlohmann::json session_stats = nlohmann::json::object();  // the session's own (compile_s, ...)
  std::vector<HostTensor> outputs;  // of the last call of the last repetition
};

// Loads and times the model `setup.loop` says how, `repetitions` times (benchmark_measure.cpp):
// each repetition a new session, its load bracketed by the holding process's memory, its timed
// phase by the machine-speed probe and the cgroup throttling counters. Fills everything but
// batch, throughput and flags (trust_flags). Throws StatusError for load or run failures.
Measurement measure(Build& build, const BenchmarkSetup& setup, bool live);

// Joins the interval for the next run's median with the prediction interval from the medians
// of `earlier` runs of this result on this host and this run's (benchmark_measure.cpp), or says
// in its method that one run cannot see what varies between runs. The within-run interval stays.
void add_earlier_runs(Measurement& m, std::vector<double> earlier);

// The medians of this result's earlier runs on this host, from the build's stats file as the
// last run left it (build_records.h earlier_medians()); none when it cannot be read.
std::vector<double> earlier_run_medians(const Build& build);

// Every speed probe of `m`, before and after each repetition's timed phase, ms.
std::vector<double> speed_probes_of(const Measurement& m);

// Why the numbers may not be trusted: the environment's warnings, harness overhead, noise, an
// unsteady warm-up, a slowed machine (probe), CPU quota throttling.
std::vector<Flag> trust_flags(const Measurement& m);

// The script's inputs to the model as discovery reported them (none for an ONNX input): name and
// shape, a non-tensor's shape empty, a dim that is not a number -1.
struct DiscoveredInput {
  std::string name;
  std::vector<int64_t> shape;
};
std::vector<DiscoveredInput> discovered_inputs(const Build& build);

// The tools the result's model went through, space-separated: the state's sequence, after the
// sequence it continued for load-build.
std::string sequence_text(const BuildState& state);

// The result's settings (fields.h result_settings()) into the build's stats, recorded before the
// model loads so that a failed benchmark still says what it tried.
void record_settings(Build& build, const BenchmarkSetup& setup);
// The measured fields into the build's stats and the samples into the result's samples file.
void record_measurement(Build& build, const BenchmarkSetup& setup, const Measurement& m);
// The block's lines under Status, from the field table's terminal labels (fields.h); `stats`
// holds the fields by key (BuildStats::fields()).
std::vector<std::string> result_block_lines(const nlohmann::json& stats,
                                            const std::string& correctness_line,
                                            const std::vector<Flag>& flags);

}  // namespace turnkey::engine_internal
