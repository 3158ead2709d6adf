#include "torch_eager_runtime.h"

#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <set>

#include "turnkey/discovery/interpreter.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Debian's torch says "1.13.0a0+git..." in __version__ for the 1.13.1 package: keep the public
// part.
std::string public_version(const std::string& v) { return v.substr(0, v.find('+')); }

int major_version(const std::string& version) {
  try {
    return std::stoi(version);
  } catch (const std::exception&) {
    return 0;
  }
}

class TorchEagerSession final : public Session {
 public:
  TorchEagerSession(const LiveModel& model, const std::string& runtime, const std::string& mode,
                    const RuntimeOptions& o)
      : python_(model.session), work_dir_(model.work_dir) {
    json cpus = json::array();
    for (int c : o.cpus) cpus.push_back(c);
    json compile = json::object();
    for (const auto& [key, value] : o.runtime_args) {
      if (key == "threads") continue;  // taken by the benchmark stage as --threads
      if (mode != "compiled" || !kCompileArgs.count(key)) {
        throw Error(
            ErrorKind::InvalidInput,
            fmt::format("{}: unknown runtime argument '{}' (known: threads{})", runtime, key,
                        mode == "compiled" ? ", backend, mode, fullgraph, dynamic" : ""));
      }
      compile[key] = value;
    }
    json reply = python_->request({{"type", "bench_prepare"},
                                   {"id", model.model_id},
                                   {"mode", mode},
                                   {"device", o.device},
                                   {"threads", o.threads},
                                   {"cpus", cpus},
                                   {"compile", compile}},
                                  "bench_ready", ErrorKind::Runtime);
    if (!reply.value("ok", false)) {
      throw Error(ErrorKind::Runtime, reply.value("error", std::string("bench_prepare failed")));
    }
    threads_ = reply.value("threads", 0);
    // torch.compile's facts (compile time apart from the steady-state latency, graph breaks).
    if (reply.contains("compiled") && reply["compiled"].is_object()) stats_ = reply["compiled"];
    // On a GPU: TF32 settings (result fields) and what torch saw of it (the environment's).
    if (reply.contains("cuda") && reply["cuda"].is_object()) stats_.update(reply["cuda"]);
  }
  json stats() const override { return stats_; }

  void run() override { run_timed(1, false); }
  bool times_itself() const override { return true; }
  std::vector<double> run_timed(int64_t n, bool empty_call) override {
    json reply = python_->request({{"type", "bench_run"}, {"n", n}, {"empty", empty_call}},
                                  "bench_samples", ErrorKind::Runtime);
    if (!reply.value("ok", false)) {
      throw Error(ErrorKind::Runtime, reply.value("error", std::string("bench_run failed")));
    }
    // The device memory peaks so far (torch's CUDA allocator): the latest reply's are read
    // after the timed phase.
    if (reply.contains("device_memory") && reply["device_memory"].is_object()) {
      stats_.update(reply["device_memory"]);
    }
    std::vector<double> samples;
    for (const auto& v : reply.value("samples_ns", json::array())) {
      samples.push_back(v.get<double>() / 1e6);
    }
    return samples;
  }
  pid_t process_id() const override { return python_->python_pid(); }
  OpProfile profile(int calls, const fs::path& raw_file) override {
    Outbox outbox = python_->outbox();  // a staging folder when sandboxed
    const fs::path staged = outbox.file(raw_file);
    json reply =
        python_->request({{"type", "bench_profile"}, {"n", calls}, {"path", staged.string()}},
                         "bench_profiled", ErrorKind::Runtime);
    if (!reply.value("ok", false)) {
      throw Error(ErrorKind::Runtime, reply.value("error", std::string("bench_profile failed")));
    }
    outbox.take(staged.string(), ErrorKind::Runtime);
    OpProfile p;
    p.profiler = "torch.profiler";
    p.calls = calls;
    p.per_node = false;  // torch.profiler reports aten ops, not the nodes of a graph
    p.run_ms = reply.value("run_ms", 0.0);
    for (const json& op : reply.value("ops", json::array())) {
      if (!op.is_object()) continue;
      const std::string name = op.value("op_type", std::string("?"));
      p.nodes.push_back({name, name, op.value("self_ms", 0.0), op.value("count", int64_t{0})});
    }
    p.raw_file = raw_file;
    return p;
  }
  std::vector<HostTensor> outputs() override {
    const fs::path dir = work_dir_ / "eager_outputs";
    fs::create_directories(dir);
    Outbox outbox = python_->outbox();  // a staging folder when sandboxed
    json reply =
        python_->request({{"type", "bench_outputs"}, {"io_dir", outbox.folder(dir).string()}},
                         "bench_outputs", ErrorKind::Runtime);
    if (!reply.value("ok", false)) {
      throw Error(ErrorKind::Runtime, reply.value("error", std::string("bench_outputs failed")));
    }
    std::vector<HostTensor> out;
    for (const std::string& p : reply_strings(reply, "outputs", ErrorKind::Runtime)) {
      out.push_back(onnx_model::read_tensor_pb(outbox.take(p, ErrorKind::Runtime)));
    }
    return out;
  }

 private:
  ScriptSession* python_;
  fs::path work_dir_;
  int threads_ = 0;
  json stats_ = json::object();
  // torch.compile's arguments turnkey passes on (--rt-args key=value; timing.py parses them).
  inline static const std::set<std::string> kCompileArgs = {"backend", "mode", "fullgraph",
                                                            "dynamic"};
};

class TorchEagerRuntime final : public Runtime {
 public:
  explicit TorchEagerRuntime(bool compiled) : compiled_(compiled) {}
  std::string name() const override { return compiled_ ? "torch-compiled" : "torch-eager"; }
  std::string display_name() const override {
    return compiled_ ? "PyTorch (torch.compile)" : "PyTorch eager";
  }
  // nvidia: the Python side says at bench_prepare whether its torch can use the GPU.
  std::vector<std::string> devices() const override { return {"x86", "nvidia"}; }
  Availability profiler() const override { return {true, ""}; }
  Availability probe() const override { return probe_for(PythonSide{}); }
  std::string version() const override { return version_for(PythonSide{}); }
  Availability probe_for(const PythonSide& side) const override {
    std::string why;
    const std::string version = python_side_torch_version(side, &why);
    if (version.empty()) return {false, why};
    if (compiled_ && major_version(version) < 2) {
      return {false, fmt::format("needs PyTorch >= 2.0, found {}", version)};
    }
    return {true, ""};
  }
  std::string version_for(const PythonSide& side) const override {
    const std::string v = python_side_torch_version(side);
    return v.empty() ? "?" : v;
  }
  std::unique_ptr<Session> load(const fs::path&, const std::vector<HostTensor>&,
                                const RuntimeOptions&) const override {
    throw Error(ErrorKind::InvalidInput,
                name() + " needs a PyTorch model from a script, not an ONNX file");
  }
  bool needs_live_model() const override { return true; }
  ConcurrencySupport concurrency() const override {
    return {false, false,
            "it times its calls in one loop of the script's Python process, one call at a time"};
  }
  std::unique_ptr<Session> load_live(const LiveModel& model, const std::vector<HostTensor>&,
                                     const RuntimeOptions& options) const override {
    if (!model.session || !model.session->alive()) {
      throw Error(ErrorKind::Runtime, name() + ": the script's Python process is gone");
    }
    return std::make_unique<TorchEagerSession>(model, name(), compiled_ ? "compiled" : "eager",
                                               options);
  }

 private:
  bool compiled_;
};

}  // namespace

std::unique_ptr<Session> python_timed_session(const LiveModel& model, const std::string& runtime,
                                              const std::string& mode,
                                              const RuntimeOptions& options) {
  if (!model.session || !model.session->alive()) {
    throw Error(ErrorKind::Runtime, runtime + ": the script's Python process is gone");
  }
  return std::make_unique<TorchEagerSession>(model, runtime, mode, options);
}

// The live process's own version (its hello), else the interpreter's remembered probe.
std::string python_side_torch_version(const PythonSide& side, std::string* why) {
  if (side.session && !side.session->torch_version().empty()) {
    return public_version(side.session->torch_version());
  }
  try {
    const PythonInterpreter& p = find_interpreter(side.python);
    if (p.torch_version.empty() && why) *why = p.path + " could not import torch";
    return public_version(p.torch_version);
  } catch (const Error& e) {
    if (why) *why = e.what();
    return "";
  }
}

const Runtime& torch_eager_runtime() {
  static const TorchEagerRuntime runtime(false);
  return runtime;
}

const Runtime& torch_compiled_runtime() {
  static const TorchEagerRuntime runtime(true);
  return runtime;
}

}  // namespace turnkey
