#include "turnkey/common/tensor.h"

namespace turnkey {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float16: return "float16";
    case DType::Float64: return "float64";
    case DType::Int8: return "int8";
    case DType::Uint8: return "uint8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Bool: return "bool";
    case DType::Unknown: return "unknown";
  }
  return "unknown";
}

size_t dtype_size_bytes(DType dtype) {
  switch (dtype) {
    case DType::Float32: case DType::Int32: return 4;
    case DType::Float16: case DType::Int16: return 2;
    case DType::Float64: case DType::Int64: return 8;
    case DType::Int8: case DType::Uint8: case DType::Bool: return 1;
    case DType::Unknown: return 0;
  }
  return 0;
}

int64_t HostTensor::element_count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

}  // namespace turnkey
