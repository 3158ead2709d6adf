// The table of known runtime deviations (runtime_deviations.h).
#include "benchmark/runtime_deviations.h"

namespace turnkey::engine_internal {

namespace {

// ONNX Runtime's list of backend tests it excludes: the entries whose reason is a result mismatch,
// among libonnx-testdata's node tests with data as ONNX Runtime 1.29 runs them here
// (bench/conformance, docs/measurement.md).
constexpr const char* kOrtFilters =
    "onnxruntime/test/testdata/onnx_backend_test_series_filters.jsonc (microsoft/onnxruntime)";
// ONNX's own run of its reference implementation over the same tests.
constexpr const char* kOnnxExcludes = "onnx/test/reference_evaluator_backend_test.py (onnx/onnx)";
// numpy's float-to-string rounding made the expected strings ("0.2961402" for 0.296140194).
constexpr const char* kCastToString =
    "the expected strings come from numpy's rounding, not the 8 significant digits Cast asks for";

constexpr RuntimeDeviation kDeviations[] = {
    {"ort", "ONNX Runtime", "test_resize_downsample_scales_cubic_align_corners", "Resize",
     "results mismatch with onnx tests", kOrtFilters},
    {"ort", "ONNX Runtime", "test_resize_downsample_scales_linear_align_corners", "Resize",
     "results mismatch with onnx tests", kOrtFilters},
    {"ort", "ONNX Runtime", "test_maxunpool_export_with_output_shape", "MaxUnpool",
     "result mismatch", kOrtFilters},
    {"", "the test data", "test_cast_FLOAT_to_STRING", "Cast", kCastToString, kOnnxExcludes},
    {"", "the test data", "test_castlike_FLOAT_to_STRING", "CastLike", kCastToString,
     kOnnxExcludes},
    {"", "the test data", "test_castlike_FLOAT_to_STRING_expanded", "Cast", kCastToString,
     kOnnxExcludes},
};

}  // namespace

const RuntimeDeviation* find_deviation(const std::string& runtime,
                                       const std::filesystem::path& model,
                                       const std::map<std::string, int64_t>& op_histogram) {
  const std::string test = model.parent_path().filename().string();
  for (const RuntimeDeviation& d : kDeviations) {
    const bool for_runtime = *d.runtime == '\0' || runtime == d.runtime;
    if (for_runtime && test == d.test && op_histogram.count(d.op)) return &d;
  }
  return nullptr;
}

}  // namespace turnkey::engine_internal
