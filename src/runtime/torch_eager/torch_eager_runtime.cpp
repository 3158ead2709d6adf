#include "torch_eager_runtime.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <mutex>

#include "turnkey/common/process.h"
#include "turnkey/discovery/interpreter.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int major_version(const std::string& version) {
  try {
    return std::stoi(version);
  } catch (const std::exception&) {
    return 0;
  }
}

class TorchEagerSession final : public Session {
 public:
  TorchEagerSession(const LiveModel& model, const std::string& mode, const RuntimeOptions& o)
      : python_(model.session), work_dir_(model.work_dir) {
    json cpus = json::array();
    for (int c : o.cpus) cpus.push_back(c);
    json reply = python_->request({{"type", "bench_prepare"},
                                   {"id", model.model_id},
                                   {"mode", mode},
                                   {"threads", o.threads},
                                   {"cpus", cpus}},
                                  "bench_ready", ErrorKind::Runtime);
    if (!reply.value("ok", false)) {
      throw Error(ErrorKind::Runtime, reply.value("error", std::string("bench_prepare failed")));
    }
    threads_ = reply.value("threads", 0);
  }

  void run() override { run_timed(1, false); }
  bool times_itself() const override { return true; }
  std::vector<double> run_timed(int64_t n, bool empty_call) override {
    json reply = python_->request({{"type", "bench_run"}, {"n", n}, {"empty", empty_call}},
                                  "bench_samples", ErrorKind::Runtime);
    if (!reply.value("ok", false)) {
      throw Error(ErrorKind::Runtime, reply.value("error", std::string("bench_run failed")));
    }
    std::vector<double> samples;
    for (const auto& v : reply.value("samples_ns", json::array())) {
      samples.push_back(v.get<double>() / 1e6);
    }
    return samples;
  }
  pid_t process_id() const override { return python_->pid(); }
  std::vector<HostTensor> outputs() override {
    const fs::path dir = work_dir_ / "eager_outputs";
    fs::create_directories(dir);
    json reply = python_->request({{"type", "bench_outputs"}, {"io_dir", dir.string()}},
                                  "bench_outputs", ErrorKind::Runtime);
    if (!reply.value("ok", false)) {
      throw Error(ErrorKind::Runtime, reply.value("error", std::string("bench_outputs failed")));
    }
    std::vector<HostTensor> out;
    for (const auto& p : reply.value("outputs", json::array())) {
      out.push_back(onnx_model::read_tensor_pb(p.get<std::string>()));
    }
    return out;
  }

 private:
  ScriptSession* python_;
  fs::path work_dir_;
  int threads_ = 0;
};

class TorchEagerRuntime final : public Runtime {
 public:
  explicit TorchEagerRuntime(bool compiled) : compiled_(compiled) {}
  std::string name() const override { return compiled_ ? "torch-compiled" : "torch-eager"; }
  std::string display_name() const override {
    return compiled_ ? "PyTorch (torch.compile)" : "PyTorch eager";
  }
  std::vector<std::string> devices() const override { return {"x86"}; }
  Availability probe() const override {
    std::string why;
    std::string version = probed_torch_version(&why);
    if (version.empty()) return {false, why};
    if (compiled_ && major_version(version) < 2) {
      return {false, fmt::format("needs PyTorch >= 2.0, found {}", version)};
    }
    return {true, ""};
  }
  std::string version() const override {
    std::string v = probed_torch_version();
    return v.empty() ? "?" : v;
  }
  std::unique_ptr<Session> load(const fs::path&, const std::vector<HostTensor>&,
                                const RuntimeOptions&) const override {
    throw Error(ErrorKind::InvalidInput,
                name() + " needs a PyTorch model from a script, not an ONNX file");
  }
  bool needs_live_model() const override { return true; }
  std::unique_ptr<Session> load_live(const LiveModel& model, const std::vector<HostTensor>&,
                                     const RuntimeOptions& options) const override {
    if (!model.session || !model.session->alive()) {
      throw Error(ErrorKind::Runtime, name() + ": the script's Python process is gone");
    }
    return std::make_unique<TorchEagerSession>(model, compiled_ ? "compiled" : "eager", options);
  }

 private:
  bool compiled_;
};

}  // namespace

// The torch version of the default interpreter, from its (remembered) probe: no `import torch`.
std::string probed_torch_version(std::string* why) {
  try {
    return find_interpreter("").torch_version;
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
