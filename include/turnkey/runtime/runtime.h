// Runtime registry: every runtime is one entry in one table (runtime_registry.cpp), looked up by
// name, with a probe() that says why it is unavailable. A Session holds a loaded model with its
// inputs bound; run() performs exactly one inference and nothing else, so the measurement loop
// can time it. Sessions are not thread-safe; a runtime that serves several requests at once says
// how (Runtime::concurrency(): callers of one session, or one session per request).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "turnkey/common/error.h"
#include "turnkey/common/tensor.h"
#include "turnkey/runtime/profile.h"

namespace turnkey {

struct Availability {
  bool available = false;
  std::string reason;  // why not, when !available ("needs PyTorch >= 2.0, found 1.13.1")
};

struct RuntimeOptions {
  std::string device = "x86";
  int threads = 0;                                  // intra-op threads; 0 = physical cores
  std::map<std::string, std::string> runtime_args;  // runtime-specific (--rt-args key=value)
  std::vector<int> cpus;  // --pin: the CPUs the runtime's threads may use; empty = any
  // --concurrency: requests the run keeps in flight on this session and its callers (openvino
  // compiles for them: its THROUGHPUT hint); `threads` is per request.
  int concurrency = 1;
  // --profile: non-empty turns the runtime's profiler on for the whole session (runtimes whose
  // profiler writes files name them with this prefix). Never set for a timed session.
  std::filesystem::path profile_prefix;
};

class ScriptSession;  // discovery/python_side.h: the live Python process of a script

// The Python side a run uses. Runtimes that live there (torch-eager, torch-compiled) take their
// availability and version from it, never from another interpreter: the live process's own
// versions when a script runs, else the interpreter (--python / TURNKEY_PYTHON; "" = the default
// one find_python() picks).
struct PythonSide {
  std::string python;
  const ScriptSession* session = nullptr;
};

class Session {
 public:
  virtual ~Session() = default;
  virtual void run() = 0;  // one inference on the bound inputs; throws Error(Runtime)
  // Outputs of the last run(), copied to host (for correctness checks; never in the timed loop).
  virtual std::vector<HostTensor> outputs() { return {}; }
  // Drops what the last run() returned. The loops call it before each timed call, outside the
  // clock reads, so that one call's outputs are not held while the next runs (the memory a model
  // needs to run is one call's outputs, not two) and freeing them is not in a sample. Sessions
  // whose runtime reuses its output buffers need not implement it.
  virtual void release_outputs() {}

  // Sessions whose model lives in another process (the Python side) cannot be timed from here
  // without the pipe in the timed region: they time each call at the source and hand over raw
  // samples. For those, times_itself() is true and run_timed() runs n calls (of the model, or of
  // an empty function with the same loop when `empty_call`) and returns one latency per call.
  virtual bool times_itself() const { return false; }
  virtual std::vector<double> run_timed(int64_t /*n*/, bool /*empty_call*/) { return {}; }
  // The process whose memory holds the model (peak resident memory is read from it).
  virtual pid_t process_id() const { return getpid(); }
  // Facts of this session for turnkey_stats.yaml beside the latency statistics, each with its
  // unit in its name (torch-compiled: compile_s, graph_breaks, ...). Read after the timed phase.
  virtual nlohmann::json stats() const { return nlohmann::json::object(); }

  // --profile (Runtime::profiler()): one warm-up call, then `calls` calls under the runtime's
  // profiler, whose own output is left at `raw_file`; returns the time per node (profile.h).
  // Sessions of runtimes with a profiler implement it; others throw Error(Runtime).
  virtual OpProfile profile(int /*calls*/, const std::filesystem::path& /*raw_file*/) {
    throw Error(ErrorKind::Runtime, "this runtime has no profiler turnkey reads");
  }
  // Another caller of this loaded model, for another thread (runtimes whose concurrency() has
  // shared_session): its run() may run at the same time as this session's and other callers',
  // on the same inputs, with outputs of its own. Owned by the caller of caller(); must not
  // outlive this session. nullptr when the session cannot be shared.
  virtual std::unique_ptr<Session> caller() { return nullptr; }
};

// How a runtime serves several requests in flight (--concurrency N > 1, docs/measurement.md).
// When both are possible, the driver shares one session when each request gets one intra-op
// thread, and loads one session per request otherwise (each with its own thread pool).
struct ConcurrencySupport {
  bool shared_session = false;       // Session::caller() gives callers of one loaded session
  bool session_per_request = false;  // several sessions of one model may run at once
  std::string refusal;               // why neither, one line (when both are false)
  bool any() const { return shared_session || session_per_request; }
};

// A PyTorch model alive in the script's Python process (torch runtimes start from it).
struct LiveModel {
  ScriptSession* session = nullptr;
  int model_id = -1;
  std::filesystem::path work_dir;  // the build's folder, for artifacts such as a traced module
  std::string build_name;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string name() const = 0;          // CLI name: "ort"
  virtual std::string display_name() const = 0;  // "ONNX Runtime"
  virtual std::vector<std::string> devices() const = 0;
  virtual Availability probe() const = 0;
  virtual std::string version() const = 0;
  // probe() and version() for the run's Python side; runtimes that do not use Python keep theirs.
  virtual Availability probe_for(const PythonSide& /*side*/) const { return probe(); }
  virtual std::string version_for(const PythonSide& /*side*/) const { return version(); }
  // Whether this build of the runtime can use `device` (one of devices(), whose hardware probe
  // passed), and what is missing when not (ort: "... has no CUDA execution provider"). Runtimes
  // that can only tell once the model is prepared (torch: torch.cuda) answer there.
  virtual Availability probe_device(const std::string& /*device*/,
                                    const PythonSide& /*side*/) const {
    return {true, ""};
  }
  // Whether benchmark --profile works with this runtime (its sessions implement profile()); the
  // reason names what is missing when not.
  virtual Availability profiler() const {
    return {false, name() + " has no profiler turnkey reads"};
  }
  // Creates the runtime's one-time, process-wide state (environment, kernel registries) before
  // the benchmark reads the memory baseline, so that a model's memory is what loading it adds
  // (docs/measurement.md, "Memory"). Idempotent and cheap after the first call; throws Error.
  virtual void initialize() const {}
  virtual std::unique_ptr<Session> load(const std::filesystem::path& onnx_path,
                                        const std::vector<HostTensor>& inputs,
                                        const RuntimeOptions& options) const = 0;
  // Runtimes of PyTorch models (torch-eager, torchscript, torch-compiled) start from the live
  // model instead of an ONNX file; for them this is true and load_live() is used.
  virtual bool needs_live_model() const { return false; }
  virtual std::unique_ptr<Session> load_live(const LiveModel& /*model*/,
                                             const std::vector<HostTensor>& /*inputs*/,
                                             const RuntimeOptions& /*options*/) const {
    throw Error(ErrorKind::InvalidInput, name() + " runs ONNX models, not live PyTorch models");
  }
  // Whether and how it serves concurrent requests; a runtime that does not say cannot.
  virtual ConcurrencySupport concurrency() const {
    return {false, false, "it does not say that it can serve concurrent requests"};
  }
};

// A device a runtime can target, with a probe that says why it is not usable here.
struct Device {
  std::string name;  // CLI name: "x86", "nvidia"
  std::string description;
  Availability (*probe)();  // the hardware and its driver, not a runtime's support of it
  // What results call it (device_name): "AMD EPYC 9B45", "NVIDIA H100 80GB HBM3"; "" when its
  // driver does not say.
  std::string (*model)();
  nlohmann::json (*environment)();  // facts for a result's environment beyond the CPU's ({} x86)
};
const std::vector<Device>& device_registry();
const Device* find_device(const std::string& name);

// All runtimes, in registration order. Never null entries.
const std::vector<const Runtime*>& runtime_registry();
// nullptr when no runtime has that name.
const Runtime* find_runtime(const std::string& name);
std::vector<std::string> runtime_names();

}  // namespace turnkey
