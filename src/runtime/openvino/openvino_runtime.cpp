#include "openvino_runtime.h"

#include <fmt/format.h>

#include "turnkey/runtime/runtime_module.h"

namespace turnkey {

namespace {

// The OpenVINO side lives in the module turnkey_openvino.so, loaded by probe(), version(),
// initialize() and load(); nothing else loads it.
class OpenVinoRuntime final : public Runtime {
 public:
  std::string name() const override { return "openvino"; }
  std::string display_name() const override { return "OpenVINO"; }
  std::vector<std::string> devices() const override { return {"x86"}; }
  Availability probe() const override {
#ifndef TURNKEY_HAVE_OPENVINO_MODULE
    return {false, "turnkey was built without OpenVINO (run scripts/setup-openvino, then rebuild)"};
#else
    const RuntimeModuleStatus& m = load_runtime_module(name());
    if (m.module) return {true, ""};
    return {false, m.problem + " (scripts/setup-openvino installs OpenVINO)"};
#endif
  }
  std::string version() const override {
    const RuntimeModule* m = module();
    return m ? m->library_version : "?";
  }
  Availability profiler() const override { return {true, ""}; }
  // One compiled model; each caller an infer request of its own, run on OpenVINO's streams.
  ConcurrencySupport concurrency() const override { return {true, false, ""}; }
  void initialize() const override {
    const RuntimeModule* m = module();
    if (m && m->initialize) m->initialize();
  }
  std::unique_ptr<Session> load(const std::filesystem::path& onnx_path,
                                const std::vector<HostTensor>& inputs,
                                const RuntimeOptions& options) const override {
    const RuntimeModule* m = module();
    if (!m) throw Error(ErrorKind::Runtime, "openvino: " + probe().reason);
    return m->open_session(onnx_path, inputs, options);
  }

 private:
  static const RuntimeModule* module() {
#ifdef TURNKEY_HAVE_OPENVINO_MODULE
    return load_runtime_module("openvino").module;
#else
    return nullptr;
#endif
  }
};

}  // namespace

const Runtime& openvino_runtime() {
  static const OpenVinoRuntime runtime;
  return runtime;
}

}  // namespace turnkey
