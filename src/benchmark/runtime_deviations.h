// Known deviations from the ONNX reference: the backend tests a runtime's own project excludes
// because its outputs differ, and those ONNX excludes for its own reference implementation because
// the test's expected outputs are at fault (runtime_deviations.cpp). A mismatch there is
// documented behaviour, named as such, not a defect turnkey found (docs/measurement.md).
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace turnkey::engine_internal {

struct RuntimeDeviation {
  const char* runtime;  // "ort"; "" for every runtime (the test's expected outputs are at fault)
  const char* whose;    // whose deviation, for the verdict: "ONNX Runtime", "the test data"
  const char* test;     // the ONNX backend node test ("test_resize_..."): the model's folder
  const char* op;       // the operator the test exercises
  const char* reason;   // the runtime project's own words
  const char* source;   // where they say it
};

// The row for a model of a backend test (the model's folder is named after the test) run by
// `runtime`, when the model has the row's operator; nullptr when none.
const RuntimeDeviation* find_deviation(const std::string& runtime,
                                       const std::filesystem::path& model,
                                       const std::map<std::string, int64_t>& op_histogram);

}  // namespace turnkey::engine_internal
