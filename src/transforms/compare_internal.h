// Internal to src/transforms: the outputs compare_models.cpp reads from ONNX Runtime (or from saved
// tensors), their elementwise difference, and the comparison up to ties of rows ordered by a
// score (compare_rows.cpp).
#pragma once

#include <onnxruntime_cxx_api.h>

#include <string>
#include <vector>

#include "turnkey/transforms/transforms.h"

namespace turnkey::transforms::detail {

struct Output {
  std::string name;
  DType type = DType::Unknown;
  std::vector<int64_t> shape;
  std::vector<double> values;        // float types, widened; subnormals read as zero (below)
  size_t flushed = 0;                // subnormal elements of `values` read as zero
  std::string bytes;                 // integer and bool types, raw
  size_t elem_bytes = 0;             // of `bytes`
  std::vector<std::string> strings;  // string type
};

inline bool is_float_type(DType t) { return dtype_is_float(t); }

// A host tensor (a runtime's output, or a saved .pb) as an Output (compare_models.cpp). The
// subnormal numbers of float32, bfloat16 and float64 read as zero: they keep fewer bits at each
// step and runtimes may flush them to zero (ONNX Runtime's session.set_denormal_as_zero, a CPU's
// flush-to-zero mode), so a difference below the smallest normal number is the arithmetic's, not
// the model's (a randomly initialised MobileViT's outputs are all ~1e-39). Throws
// Error(Internal) when it holds fewer bytes (or strings) than its shape says, or is no tensor.
Output from_host(const HostTensor& t);

// Elementwise difference of one output against its reference (compare_models.cpp).
OutputDiff diff(const Output& ref, const Output& cand, const Tolerance& tol);

// Compares outputs aligned by position (cand[k] is the candidate for ref[k]), elementwise and,
// where that fails for rows ordered by a score, up to ties (compare_rows.cpp).
Comparison compare_aligned(const std::vector<Output>& ref, const std::vector<Output>& cand,
                           const Tolerance& tol);

}  // namespace turnkey::transforms::detail
