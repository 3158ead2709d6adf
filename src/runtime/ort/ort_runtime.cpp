#include "ort_runtime.h"

#include <fmt/format.h>
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "ort_values.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/machine/cpu_budget.h"
#include "turnkey/machine/system_info.h"

namespace turnkey {

namespace {

Ort::Env& ort_env() {
  // One environment per process; ORT's own warnings would interleave with turnkey's output.
  static Ort::Env env(ORT_LOGGING_LEVEL_FATAL, "turnkey");
  return env;
}

GraphOptimizationLevel parse_opt_level(const std::string& level) {
  if (level == "disabled" || level == "none") return ORT_DISABLE_ALL;
  if (level == "basic") return ORT_ENABLE_BASIC;
  if (level == "extended") return ORT_ENABLE_EXTENDED;
  if (level == "all") return ORT_ENABLE_ALL;
  throw Error(ErrorKind::InvalidInput,
              fmt::format("ort: graph_optimization_level '{}' is not one of disabled, basic, "
                          "extended, all",
                          level));
}

// An ONNX Runtime failure as turnkey's error, `context` before its first line. Memory exhaustion
// is ErrorKind::OutOfMemory (status out_of_memory), in ONNX Runtime's words: the std::bad_alloc it
// catches and reports as its message, or its arena's "Failed to allocate memory for requested
// buffer" (a 6 GB MoE model under an 8 GB --memory-limit was a runtime failure before).
Error ort_error(const Ort::Exception& e, const std::string& context) {
  const std::string line = first_line(e.what());
  const bool memory = line.find("std::bad_alloc") != std::string::npos ||
                      line.find("Failed to allocate memory") != std::string::npos;
  return Error(memory ? ErrorKind::OutOfMemory : ErrorKind::Runtime, context + line);
}

int parse_int_arg(const std::string& key, const std::string& value, int min, int max) {
  try {
    size_t used = 0;
    int v = std::stoi(value, &used);
    if (used == value.size() && v >= min && v <= max) return v;
  } catch (const std::exception&) {
  }
  throw Error(ErrorKind::InvalidInput,
              fmt::format("ort: {}={} is not a whole number in [{}, {}]", key, value, min, max));
}

std::vector<HostTensor> host_outputs(std::vector<Ort::Value>& values,
                                     const std::vector<std::string>& names) {
  std::vector<HostTensor> out;
  for (size_t i = 0; i < values.size(); ++i)
    out.push_back(ort_values::from_ort(values[i], names[i]));
  return out;
}

class OrtCaller;

class OrtSession final : public Session {
 public:
  OrtSession(const std::filesystem::path& path, const std::vector<HostTensor>& inputs,
             const RuntimeOptions& options)
      : inputs_(inputs) {
    Ort::SessionOptions so;
    int threads = options.threads > 0 ? options.threads : default_threads(options.cpus);
    GraphOptimizationLevel level = ORT_ENABLE_ALL;
    ExecutionMode mode = ORT_SEQUENTIAL;
    for (const auto& [key, value] : options.runtime_args) {
      if (key == "threads" || key == "intra_op_threads") {
        threads = parse_int_arg(key, value, 1, 4096);
      } else if (key == "inter_op_threads") {
        so.SetInterOpNumThreads(parse_int_arg(key, value, 1, 4096));
      } else if (key == "graph_optimization_level" || key == "opt_level") {
        level = parse_opt_level(value);
      } else if (key == "execution_mode") {
        if (value == "sequential") mode = ORT_SEQUENTIAL;
        else if (value == "parallel") mode = ORT_PARALLEL;
        else throw Error(ErrorKind::InvalidInput,
                         fmt::format("ort: execution_mode '{}' is not sequential or parallel", value));
      } else {
        throw Error(ErrorKind::InvalidInput,
                    fmt::format("ort: unknown runtime argument '{}' (known: threads, "
                                "inter_op_threads, graph_optimization_level, execution_mode)",
                                key));
      }
    }
    so.SetLogSeverityLevel(ORT_LOGGING_LEVEL_FATAL);
    // On nvidia the CUDA provider runs what it can (the CPU provider the rest); the inputs stay
    // in host memory and every run copies them in and the outputs out (docs/gpu.md).
    if (options.device == "nvidia") so.AppendExecutionProvider_CUDA(OrtCUDAProviderOptions{});
    so.SetIntraOpNumThreads(threads);
    so.SetGraphOptimizationLevel(level);
    so.SetExecutionMode(mode);
    if (!options.profile_prefix.empty()) so.EnableProfiling(options.profile_prefix.c_str());
    threads_ = threads;

    session_ = Ort::Session(ort_env(), path.c_str(), so);

    Ort::AllocatorWithDefaultOptions alloc;
    const size_t n_in = session_.GetInputCount();
    if (n_in != inputs_.size()) {
      throw Error(ErrorKind::Runtime, fmt::format("model has {} inputs, {} were prepared", n_in,
                                                  inputs_.size()));
    }
    auto mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    for (size_t i = 0; i < n_in; ++i) {
      input_names_.push_back(session_.GetInputNameAllocated(i, alloc).get());
    }
    // Bind prepared tensors by name so the order the caller used does not matter.
    for (const std::string& name : input_names_) {
      HostTensor* t = nullptr;
      for (HostTensor& candidate : inputs_) {
        if (candidate.name == name) t = &candidate;
      }
      if (!t) throw Error(ErrorKind::Runtime, fmt::format("no prepared input named '{}'", name));
      // The C API cannot make a None: an empty optional is an input left out of the feed,
      // which ONNX Runtime reads as None for an optional-typed input.
      if (t->kind == ValueKind::Optional && t->elements.empty()) continue;
      input_values_.push_back(ort_values::to_ort(*t, mem));
      input_name_ptrs_.push_back(name.c_str());
    }
    for (size_t i = 0; i < session_.GetOutputCount(); ++i) {
      output_names_.push_back(session_.GetOutputNameAllocated(i, alloc).get());
    }
    for (const auto& s : output_names_) output_name_ptrs_.push_back(s.c_str());
  }

  void run() override {
    try {
      last_outputs_ = session_.Run(run_options_, input_name_ptrs_.data(), input_values_.data(),
                                   input_values_.size(), output_name_ptrs_.data(),
                                   output_name_ptrs_.size());
    } catch (const Ort::Exception& e) {
      throw ort_error(e, "");
    }
  }

  OpProfile profile(int calls, const std::filesystem::path& raw_file) override {
    for (int i = 0; i <= calls; ++i) run();  // the first is the warm-up the parser leaves out
    std::string written;
    try {
      Ort::AllocatorWithDefaultOptions alloc;
      written = session_.EndProfilingAllocated(alloc).get();
    } catch (const Ort::Exception& e) {
      throw ort_error(e, "ending the profile: ");
    }
    std::error_code ec;
    std::filesystem::rename(written, raw_file, ec);
    if (ec) {
      throw Error(ErrorKind::Io, fmt::format("moving the profile {} to {}: {}", written,
                                             raw_file.string(), ec.message()));
    }
    OpProfile p = parse_ort_profile(read_file(raw_file), 1);
    p.raw_file = raw_file;
    return p;
  }

  std::vector<HostTensor> outputs() override { return host_outputs(last_outputs_, output_names_); }
  void release_outputs() override { last_outputs_.clear(); }

  std::unique_ptr<Session> caller() override;

 private:
  friend class OrtCaller;
  std::vector<HostTensor> inputs_;  // owns the bytes the Ort::Values point into
  Ort::Session session_{nullptr};
  Ort::RunOptions run_options_;
  std::vector<std::string> input_names_, output_names_;
  std::vector<const char*> input_name_ptrs_, output_name_ptrs_;
  std::vector<Ort::Value> input_values_;
  std::vector<Ort::Value> last_outputs_;
  int threads_ = 0;
};

// Another caller of an OrtSession (Ort::Session::Run is thread-safe on one session): the owner's
// session, inputs and names, its own run options and outputs. A class of its own, so that the
// owner's run() stays exactly the single-request path.
class OrtCaller final : public Session {
 public:
  explicit OrtCaller(OrtSession& owner) : owner_(owner) {}
  void run() override {
    try {
      last_outputs_ =
          owner_.session_.Run(run_options_, owner_.input_name_ptrs_.data(),
                              owner_.input_values_.data(), owner_.input_values_.size(),
                              owner_.output_name_ptrs_.data(), owner_.output_name_ptrs_.size());
    } catch (const Ort::Exception& e) {
      throw ort_error(e, "");
    }
  }
  std::vector<HostTensor> outputs() override {
    return host_outputs(last_outputs_, owner_.output_names_);
  }
  void release_outputs() override { last_outputs_.clear(); }

 private:
  OrtSession& owner_;
  Ort::RunOptions run_options_;
  std::vector<Ort::Value> last_outputs_;
};

std::unique_ptr<Session> OrtSession::caller() { return std::make_unique<OrtCaller>(*this); }

// A one-node model (Identity of a float[1], opset 13), serialized: the first session of a
// process builds ONNX Runtime's kernel registries (~8 MB here), which belong to the runtime, not
// to the first model measured. Made by onnx.helper (make_node Identity, ir_version 7).
constexpr unsigned char kIdentityModel[] = {
    0x08, 0x07, 0x12, 0x07, 0x74, 0x75, 0x72, 0x6e, 0x6b, 0x65, 0x79, 0x3a, 0x37, 0x0a, 0x10,
    0x0a, 0x01, 0x78, 0x12, 0x01, 0x79, 0x22, 0x08, 0x49, 0x64, 0x65, 0x6e, 0x74, 0x69, 0x74,
    0x79, 0x12, 0x01, 0x67, 0x5a, 0x0f, 0x0a, 0x01, 0x78, 0x12, 0x0a, 0x0a, 0x08, 0x08, 0x01,
    0x12, 0x04, 0x0a, 0x02, 0x08, 0x01, 0x62, 0x0f, 0x0a, 0x01, 0x79, 0x12, 0x0a, 0x0a, 0x08,
    0x08, 0x01, 0x12, 0x04, 0x0a, 0x02, 0x08, 0x01, 0x42, 0x04, 0x0a, 0x00, 0x10, 0x0d};

class OrtRuntime final : public Runtime {
 public:
  void initialize() const override {
    static std::once_flag once;
    std::call_once(once, [] {
      try {
        Ort::SessionOptions so;
        so.SetIntraOpNumThreads(1);
        so.SetLogSeverityLevel(ORT_LOGGING_LEVEL_FATAL);
        Ort::Session warm(ort_env(), kIdentityModel, sizeof(kIdentityModel), so);
      } catch (const Ort::Exception& e) {
        throw Error(ErrorKind::Runtime,
                    fmt::format("ONNX Runtime could not start: {}", first_line(e.what())));
      }
    });
  }
  std::string name() const override { return "ort"; }
  std::string display_name() const override { return "ONNX Runtime"; }
  std::vector<std::string> devices() const override { return {"x86", "nvidia"}; }
  Availability probe() const override { return {true, ""}; }
  // nvidia needs the CUDA execution provider in the ONNX Runtime this process loaded; the
  // library scripts/setup installs by default (PyPI's onnxruntime wheel) is a CPU build.
  Availability probe_device(const std::string& device, const PythonSide&) const override {
    if (device != "nvidia") return {true, ""};
    const std::vector<std::string> providers = Ort::GetAvailableProviders();
    if (std::find(providers.begin(), providers.end(), "CUDAExecutionProvider") != providers.end()) {
      return {true, ""};
    }
    return {false, fmt::format("the ONNX Runtime {} turnkey loaded has no CUDA execution provider "
                               "(it has {}): build turnkey with TURNKEY_ORT_ROOT set to an ONNX "
                               "Runtime GPU release",
                               Ort::GetVersionString(), fmt::join(providers, ", "))};
  }
  std::string version() const override { return Ort::GetVersionString(); }
  Availability profiler() const override { return {true, ""}; }
  ConcurrencySupport concurrency() const override { return {true, true, ""}; }
  std::unique_ptr<Session> load(const std::filesystem::path& onnx_path,
                                const std::vector<HostTensor>& inputs,
                                const RuntimeOptions& options) const override {
    if (Availability a = probe_device(options.device, PythonSide{}); !a.available) {
      throw Error(ErrorKind::InvalidInput, fmt::format("ort on {}: {}", options.device, a.reason));
    }
    try {
      return std::make_unique<OrtSession>(onnx_path, inputs, options);
    } catch (const Ort::Exception& e) {
      throw ort_error(e, "ONNX Runtime could not load the model: ");
    }
  }
};

}  // namespace

const Runtime& ort_runtime() {
  static const OrtRuntime runtime;
  return runtime;
}

}  // namespace turnkey
