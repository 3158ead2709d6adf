#include "keras_runtime.h"

#include <fmt/format.h>

#include "../torch_eager/torch_eager_runtime.h"
#include "turnkey/discovery/interpreter.h"

namespace turnkey {

namespace fs = std::filesystem;

namespace {

// TensorFlow and Keras of the run's interpreter, from its remembered probe (their metadata:
// nothing is imported). "" with `why` set when either is missing.
std::string keras_versions(const PythonSide& side, std::string* why) {
  try {
    const PythonInterpreter& p = find_interpreter(side.python);
    if (p.tensorflow_version.empty() || p.keras_version.empty()) {
      if (why) {
        *why = fmt::format(
            "{} cannot import {}: scripts/setup-keras makes an interpreter with TensorFlow and "
            "Keras (--python .deps/keras/bin/python3)",
            p.path, p.tensorflow_version.empty() ? "tensorflow" : "keras");
      }
      return "";
    }
    return fmt::format("{} (tensorflow {})", p.keras_version, p.tensorflow_version);
  } catch (const Error& e) {
    if (why) *why = e.what();
    return "";
  }
}

class KerasRuntime final : public Runtime {
 public:
  std::string name() const override { return "keras"; }
  std::string display_name() const override { return "Keras eager (TensorFlow)"; }
  std::vector<std::string> devices() const override { return {"x86"}; }
  Availability probe() const override { return probe_for(PythonSide{}); }
  std::string version() const override { return version_for(PythonSide{}); }
  Availability probe_for(const PythonSide& side) const override {
    std::string why;
    if (keras_versions(side, &why).empty()) return {false, why};
    return {true, ""};
  }
  std::string version_for(const PythonSide& side) const override {
    const std::string v = keras_versions(side, nullptr);
    return v.empty() ? "?" : v;
  }
  std::unique_ptr<Session> load(const fs::path&, const std::vector<HostTensor>&,
                                const RuntimeOptions&) const override {
    throw Error(ErrorKind::InvalidInput,
                "keras needs a Keras model from a script, not an ONNX file");
  }
  bool needs_live_model() const override { return true; }
  ConcurrencySupport concurrency() const override {
    return {false, false,
            "it times its calls in one loop of the script's Python process, one call at a time"};
  }
  std::unique_ptr<Session> load_live(const LiveModel& model, const std::vector<HostTensor>&,
                                     const RuntimeOptions& options) const override {
    return python_timed_session(model, name(), "keras", options);
  }
};

}  // namespace

const Runtime& keras_runtime() {
  static const KerasRuntime runtime;
  return runtime;
}

}  // namespace turnkey
