#include "ort_util.h"

#include <fmt/format.h>

#include "model_io.h"
#include "turnkey/common/error.h"

namespace turnkey::transforms::detail {

Ort::Env& ort_env() {
  static Ort::Env env(ORT_LOGGING_LEVEL_FATAL, "turnkey-build");
  return env;
}

Ort::SessionOptions base_session_options(GraphOptimizationLevel level) {
  Ort::SessionOptions options;
  options.SetLogSeverityLevel(ORT_LOGGING_LEVEL_FATAL);
  options.SetIntraOpNumThreads(1);
  options.SetInterOpNumThreads(1);
  options.SetGraphOptimizationLevel(level);
  return options;
}

Ort::Session open_session(const std::filesystem::path& path, const Ort::SessionOptions& options) {
  try {
    return Ort::Session(ort_env(), path.c_str(), options);
  } catch (const Ort::Exception& e) {
    throw Error(ErrorKind::Runtime, fmt::format("ONNX Runtime: {}", first_line(e.what())));
  }
}

}  // namespace turnkey::transforms::detail
