#include "torchscript_runtime.h"

#include <fmt/format.h>

#include "turnkey/runtime/runtime_module.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/onnx/model_facts.h"
#include "../torch_eager/torch_eager_runtime.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The LibTorch side lives in the module turnkey_torchscript.so (torchscript_module.cpp), loaded
// on first use: probe(), version() and load_live() load it; nothing else does.
class TorchScriptRuntime final : public Runtime {
 public:
  std::string name() const override { return "torchscript"; }
  std::string display_name() const override { return "TorchScript (LibTorch C++)"; }
  std::vector<std::string> devices() const override { return {"x86"}; }
  Availability probe() const override {
    const RuntimeModuleStatus& m = load_runtime_module(name());
    if (m.module) return {true, ""};
#ifndef TURNKEY_HAVE_TORCHSCRIPT_MODULE
    return {false, "turnkey was built without LibTorch (install libtorch-dev and rebuild)"};
#else
    return {false, m.problem};
#endif
  }
  std::string version() const override {
    const RuntimeModuleStatus& m = load_runtime_module(name());
    return m.module ? m.module->library_version : "?";
  }
  // The module is traced by the run's PyTorch, which may be newer than the LibTorch that runs
  // it (torch 2.x traced, LibTorch 1.13 here): both are part of what was measured.
  std::string version_for(const PythonSide& side) const override {
    const std::string library = version();
    const std::string traced = python_side_torch_version(side);
    if (traced.empty() || traced.rfind(library, 0) == 0) return library;
    return library + ", traced with torch " + traced;
  }
  std::unique_ptr<Session> load(const fs::path&, const std::vector<HostTensor>&,
                                const RuntimeOptions&) const override {
    throw Error(ErrorKind::InvalidInput,
                "torchscript needs a PyTorch model from a script, not an ONNX file");
  }
  bool needs_live_model() const override { return true; }
  // One module, several callers (Session::caller()); a session per request would trace again.
  ConcurrencySupport concurrency() const override { return {true, false, ""}; }
  std::unique_ptr<Session> load_live(const LiveModel& model, const std::vector<HostTensor>&,
                                     const RuntimeOptions& options) const override {
    const RuntimeModuleStatus& m = load_runtime_module(name());
    if (!m.module) throw Error(ErrorKind::Runtime, "torchscript: " + probe().reason);
    if (!model.session || !model.session->alive()) {
      throw Error(ErrorKind::Runtime, "torchscript: the script's Python process is gone");
    }
    const fs::path dir = model.work_dir / "torchscript";
    const fs::path io_dir = dir / "io";
    fs::create_directories(io_dir);
    // Sandboxed, the Python side writes to its staging folder; the files are taken from there.
    Outbox outbox = model.session->outbox();
    const fs::path staged_module = outbox.file(dir / (model.build_name + ".pt"));
    json reply = model.session->request({{"type", "trace"},
                                         {"id", model.model_id},
                                         {"path", staged_module.string()},
                                         {"io_dir", outbox.folder(io_dir).string()}},
                                        "traced", ErrorKind::Runtime);
    if (!reply.value("ok", false)) {
      throw Error(ErrorKind::Runtime,
                  "torch.jit.trace failed: " + reply.value("error", std::string("?")));
    }
    const fs::path module_path = outbox.take(staged_module.string(), ErrorKind::Runtime);
    std::vector<HostTensor> inputs;
    for (const std::string& p : reply_strings(reply, "inputs", ErrorKind::Runtime)) {
      inputs.push_back(onnx_model::read_tensor_pb(outbox.take(p, ErrorKind::Runtime)));
    }
    return m.module->open_session(module_path, inputs, options);
  }
};

}  // namespace

const Runtime& torchscript_runtime() {
  static const TorchScriptRuntime runtime;
  return runtime;
}

}  // namespace turnkey
