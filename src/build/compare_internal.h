// Internal to src/build: the outputs compare_models.cpp reads from ONNX Runtime (or from saved
// tensors), their elementwise difference, and the comparison up to ties of rows ordered by a
// score (compare_rows.cpp).
#pragma once

#include <onnxruntime_cxx_api.h>

#include <string>
#include <vector>

#include "turnkey/build/build_stages.h"

namespace turnkey::build::detail {

struct Output {
  std::string name;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> shape;
  std::vector<double> values;  // float types, widened
  std::string bytes;           // other types, raw
  size_t elem_bytes = 0;       // of `bytes`
};

inline bool is_float_type(ONNXTensorElementDataType t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ||
         t == ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
}

// A host tensor (a runtime's output, or a saved .pb) as an Output (compare_models.cpp). Throws
// Error(Internal) when it holds fewer bytes than its shape says.
Output from_host(const HostTensor& t);

// Elementwise difference of one output against its reference (compare_models.cpp).
OutputDiff diff(const Output& ref, const Output& cand, const Tolerance& tol);

// Compares outputs aligned by position (cand[k] is the candidate for ref[k]), elementwise and,
// where that fails for rows ordered by a score, up to ties (compare_rows.cpp).
Comparison compare_aligned(const std::vector<Output>& ref, const std::vector<Output>& cand,
                           const Tolerance& tol);

}  // namespace turnkey::build::detail
