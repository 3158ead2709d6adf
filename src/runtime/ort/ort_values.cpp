// Host values <-> ONNX Runtime values (ort_values.h).
#include "ort_values.h"

#include <fmt/format.h>

#include <cstring>

#include "turnkey/common/error.h"

namespace turnkey::ort_values {

namespace {

ONNXTensorElementDataType element_type(DType dtype) {
  // ONNX Runtime numbers its element types as ONNX does.
  return static_cast<ONNXTensorElementDataType>(dtype_onnx_type(dtype));
}

Ort::Value tensor_value(HostTensor& t, const Ort::MemoryInfo& mem) {
  if (t.dtype == DType::String) {
    Ort::AllocatorWithDefaultOptions alloc;
    Ort::Value value = Ort::Value::CreateTensor(alloc, t.shape.data(), t.shape.size(),
                                                ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING);
    std::vector<const char*> items;
    for (const std::string& s : t.strings) items.push_back(s.c_str());
    value.FillStringTensor(items.data(), items.size());
    return value;
  }
  return Ort::Value::CreateTensor(mem, t.data.data(), t.data.size(), t.shape.data(), t.shape.size(),
                                  element_type(t.dtype));
}

}  // namespace

Ort::Value to_ort(HostTensor& v, const Ort::MemoryInfo& mem) {
  if (v.dtype == DType::Unknown) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("input '{}' has an element type ONNX Runtime is not fed", v.name));
  }
  switch (v.kind) {
    case ValueKind::Tensor:
      return tensor_value(v, mem);
    case ValueKind::Sequence: {
      if (v.elements.empty()) {
        throw Error(ErrorKind::InvalidInput,
                    fmt::format("input '{}' is an empty sequence, which ONNX Runtime's C API "
                                "cannot make (CreateValue: \"Number of values should be at "
                                "least 1\")",
                                v.name));
      }
      std::vector<Ort::Value> items;
      for (HostTensor& e : v.elements) items.push_back(to_ort(e, mem));
      return Ort::Value::CreateSequence(items);
    }
    case ValueKind::Optional:
      if (v.elements.empty()) {
        throw Error(ErrorKind::InvalidInput,
                    fmt::format("input '{}' is an empty optional, which ONNX Runtime's C API "
                                "cannot make",
                                v.name));
      }
      return to_ort(v.elements[0], mem);
  }
  throw Error(ErrorKind::Internal, "unknown value kind");
}

HostTensor from_ort(const Ort::Value& v, const std::string& name) {
  HostTensor out;
  out.name = name;
  if (!v.HasValue()) {
    out.kind = ValueKind::Optional;
    return out;
  }
  if (!v.IsTensor()) {
    const ONNXType type = v.GetTypeInfo().GetONNXType();
    if (type != ONNX_TYPE_SEQUENCE) return out;  // a map: Unknown, nothing compared
    out.kind = ValueKind::Sequence;
    Ort::AllocatorWithDefaultOptions alloc;
    for (size_t i = 0; i < v.GetCount(); ++i) {
      out.elements.push_back(from_ort(v.GetValue(static_cast<int>(i), alloc), name));
    }
    if (!out.elements.empty()) out.dtype = out.elements[0].dtype;
    return out;
  }
  auto info = v.GetTensorTypeAndShapeInfo();
  out.dtype = dtype_from_onnx(info.GetElementType());
  out.shape = info.GetShape();
  const size_t n = info.GetElementCount();
  if (out.dtype == DType::String) {
    for (size_t k = 0; k < n; ++k) out.strings.push_back(v.GetStringTensorElement(k));
  } else if (out.dtype != DType::Unknown) {
    const auto* data = static_cast<const std::byte*>(v.GetTensorRawData());
    out.data.assign(data, data + n * dtype_size_bytes(out.dtype));
  }
  return out;
}

}  // namespace turnkey::ort_values
