// check-onnx: the three gates a model passes before turnkey benchmarks it, as one verdict.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>

#include "model_io.h"
#include "ort_util.h"
#include "turnkey/transforms/transforms.h"
#include "turnkey/common/error.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey::transforms {

namespace fs = std::filesystem;

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

// load_facts' reasons start with the stage that failed ("ONNX checker: shape inference: ...",
// "ONNX checker: ...", "not an ONNX model ..."): split them into stage + reason.
void classify(const std::string& message, CheckVerdict* verdict) {
  constexpr std::string_view kInference = "ONNX checker: shape inference: ";
  constexpr std::string_view kChecker = "ONNX checker: ";
  if (starts_with(message, kInference)) {
    verdict->stage = "shape inference";
    verdict->reason = message.substr(kInference.size());
  } else if (starts_with(message, kChecker)) {
    verdict->stage = "checker";
    verdict->reason = message.substr(kChecker.size());
  } else if (starts_with(message, "not an ONNX model") || starts_with(message, "empty file") ||
             message.find("2 GB") != std::string::npos) {
    verdict->stage = "parse";
    verdict->reason = message;
  } else {
    // turnkey's own tensor checks (dims that do not match the stored data, overflow).
    verdict->stage = "checker";
    verdict->reason = message;
  }
}

}  // namespace

CheckVerdict check_onnx(const fs::path& path) {
  const auto start = std::chrono::steady_clock::now();
  auto finish = [&](CheckVerdict v) {
    v.duration_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return v;
  };

  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) throw Error(ErrorKind::InvalidInput, "not found");
  if (ec) throw Error(ErrorKind::Io, fmt::format("cannot stat: {}", ec.message()));
  if (status.type() == fs::file_type::directory) {
    throw Error(ErrorKind::InvalidInput, "is a directory");
  }
  if (status.type() != fs::file_type::regular) {
    throw Error(ErrorKind::InvalidInput, "not a regular file");
  }
  if (::access(path.c_str(), R_OK) != 0) {
    throw Error(ErrorKind::Io, fmt::format("cannot read: {}", strerror(errno)));
  }

  CheckVerdict verdict;
  onnx_model::ModelFacts facts;
  try {
    facts = onnx_model::load_facts(path);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::InvalidInput) throw;
    classify(detail::first_line(e.what()), &verdict);
    return finish(verdict);
  }
  try {
    detail::open_session(path, detail::base_session_options(ORT_ENABLE_ALL));
  } catch (const Error& e) {
    verdict.stage = "onnxruntime";
    verdict.reason = e.what();
    return finish(verdict);
  }
  verdict.passed = true;
  verdict.reason =
      facts.checker_note.empty()
          ? fmt::format("ONNX checker, strict shape inference, ONNX Runtime {} session",
                        Ort::GetVersionString())
          : fmt::format("ONNX Runtime {} session; {}", Ort::GetVersionString(), facts.checker_note);
  return finish(verdict);
}

}  // namespace turnkey::transforms
