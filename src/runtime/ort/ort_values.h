// Host values to ONNX Runtime values and back: tensors of every element type turnkey has (strings
// copied into ORT-owned storage, the rest pointed at), sequences, and optionals (internal to the
// ort runtime).
#pragma once

#include <onnxruntime_cxx_api.h>

#include <string>

#include "turnkey/common/tensor.h"

namespace turnkey::ort_values {

// `v` as an ONNX Runtime value. Numeric tensors point into v.data, which must outlive the
// result; strings are copied. An optional with a value is fed as that value (ORT takes the
// contained value for an optional input; an empty one is left out of the feed, which ORT reads
// as None). Throws Error(InvalidInput) naming the input for an empty optional or an empty
// sequence, which the C API cannot make, and an Unknown dtype.
Ort::Value to_ort(HostTensor& v, const Ort::MemoryInfo& mem);

// An output of a run as a host value (copied), named `name`: a tensor, a sequence, or an empty
// optional (a None). Elements of types turnkey has no DType for come back with dtype Unknown and
// no data.
HostTensor from_ort(const Ort::Value& v, const std::string& name);

}  // namespace turnkey::ort_values
