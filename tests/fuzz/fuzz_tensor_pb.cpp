// TensorProto .pb inputs and outputs (src/onnx/value_read.cpp, input_data.cpp): the bytes as a
// tensor (read_tensor_pb: what the Python side saves and --input-data folders hold) and as each
// kind of value a backend-test folder may hold for an input (tensor, sequence, optional).
#include "fuzz_support.h"
#include "turnkey/common/error.h"
#include "turnkey/onnx/input_data.h"
#include "turnkey/onnx/model_facts.h"

namespace fs = std::filesystem;
using namespace turnkey;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path pb = fuzz::write_scratch("value.pb", fuzz::as_view(data, size));
  try {
    onnx_model::read_tensor_pb(pb);
  } catch (const Error&) {
  }
  static const std::vector<onnx_model::ValueInfo> kWants = [] {
    std::vector<onnx_model::ValueInfo> wants;
    onnx_model::ValueInfo tensor;
    tensor.name = "x";
    tensor.dtype = DType::Float32;
    tensor.onnx_type = "FLOAT";
    tensor.has_shape = true;
    tensor.dims = {{-1, "batch"}, {3, ""}};
    wants.push_back(tensor);
    onnx_model::ValueInfo sequence = tensor;
    sequence.layers = {ValueKind::Sequence};
    wants.push_back(sequence);
    onnx_model::ValueInfo optional = tensor;
    optional.layers = {ValueKind::Optional, ValueKind::Sequence};
    wants.push_back(optional);
    onnx_model::ValueInfo strings = tensor;
    strings.dtype = DType::String;
    strings.onnx_type = "STRING";
    strings.layers = {ValueKind::Optional};
    wants.push_back(strings);
    return wants;
  }();
  for (const onnx_model::ValueInfo& want : kWants) {
    try {
      const HostTensor value = onnx_model::read_value_pb(pb, want);
      onnx_model::value_fits(value, want);
    } catch (const Error&) {
    }
  }
  return 0;
}
