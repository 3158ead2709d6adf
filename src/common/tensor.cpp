#include "turnkey/common/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace turnkey {

namespace {

struct DTypeRow {
  DType dtype;
  const char* name;
  size_t size_bytes;
  int onnx_type;  // TensorProto.DataType (and ONNX Runtime's element type: the same numbers)
  bool is_float;
};

// One row per DType, in enum order.
constexpr DTypeRow kDTypes[] = {
    {DType::Float32, "float32", 4, 1, true},
    {DType::Float16, "float16", 2, 10, true},
    {DType::Float64, "float64", 8, 11, true},
    {DType::Int8, "int8", 1, 3, false},
    {DType::Uint8, "uint8", 1, 2, false},
    {DType::Int16, "int16", 2, 5, false},
    {DType::Int32, "int32", 4, 6, false},
    {DType::Int64, "int64", 8, 7, false},
    {DType::Bool, "bool", 1, 9, false},
    {DType::Uint16, "uint16", 2, 4, false},
    {DType::Uint32, "uint32", 4, 12, false},
    {DType::Uint64, "uint64", 8, 13, false},
    {DType::BFloat16, "bfloat16", 2, 16, true},
    {DType::String, "string", 0, 8, false},
    {DType::Float8E4M3FN, "float8e4m3fn", 1, 17, true},
    {DType::Float8E4M3FNUZ, "float8e4m3fnuz", 1, 18, true},
    {DType::Float8E5M2, "float8e5m2", 1, 19, true},
    {DType::Float8E5M2FNUZ, "float8e5m2fnuz", 1, 20, true},
    {DType::Unknown, "unknown", 0, 0, false},
};
constexpr bool rows_in_enum_order() {
  for (size_t i = 0; i < std::size(kDTypes); ++i) {
    if (static_cast<size_t>(kDTypes[i].dtype) != i) return false;
  }
  return std::size(kDTypes) == static_cast<size_t>(DType::Unknown) + 1;
}
static_assert(rows_in_enum_order());

constexpr const DTypeRow& row(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

// An 8-bit float with `mbits` mantissa bits and exponent bias `bias`. `ieee`: all-ones exponent
// is infinity/NaN (E5M2); `fnuz`: 0x80 is the only NaN, no infinity, no negative zero; else
// (E4M3FN) only S.1111.111 is NaN.
double float8_to_double(uint8_t bits, int mbits, int bias, bool ieee, bool fnuz) {
  const int ebits = 7 - mbits;
  const int exponent = (bits >> mbits) & ((1 << ebits) - 1);
  const int mantissa = bits & ((1 << mbits) - 1);
  const double sign = bits & 0x80 ? -1.0 : 1.0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (fnuz && bits == 0x80) return nan;
  if (ieee && exponent == (1 << ebits) - 1) {
    return mantissa ? nan : sign * std::numeric_limits<double>::infinity();
  }
  if (!ieee && !fnuz && (bits & 0x7f) == 0x7f) return nan;
  if (exponent == 0) return sign * std::ldexp(mantissa, 1 - bias - mbits);
  return sign * std::ldexp((1 << mbits) + mantissa, exponent - bias - mbits);
}

}  // namespace

const char* dtype_name(DType dtype) { return row(dtype).name; }
size_t dtype_size_bytes(DType dtype) { return row(dtype).size_bytes; }
int dtype_onnx_type(DType dtype) { return row(dtype).onnx_type; }
bool dtype_is_float(DType dtype) { return row(dtype).is_float; }

DType dtype_from_onnx(int onnx_type) {
  for (const DTypeRow& r : kDTypes) {
    if (r.onnx_type == onnx_type && r.dtype != DType::Unknown) return r.dtype;
  }
  return DType::Unknown;
}

double small_float_to_double(DType dtype, const std::byte* element) {
  uint16_t h = 0;
  const auto b = static_cast<uint8_t>(element[0]);
  switch (dtype) {
    case DType::Float16: {
      std::memcpy(&h, element, 2);
      const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
      const double sign = h & 0x8000 ? -1.0 : 1.0;
      if (exponent == 0x1f) {
        return mantissa ? std::numeric_limits<double>::quiet_NaN()
                        : sign * std::numeric_limits<double>::infinity();
      }
      if (exponent == 0) return sign * std::ldexp(mantissa, -24);
      return sign * std::ldexp(1024 + mantissa, exponent - 25);
    }
    case DType::BFloat16: {
      std::memcpy(&h, element, 2);
      const uint32_t bits = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case DType::Float8E4M3FN:
      return float8_to_double(b, 3, 7, false, false);
    case DType::Float8E4M3FNUZ:
      return float8_to_double(b, 3, 8, false, true);
    case DType::Float8E5M2:
      return float8_to_double(b, 2, 15, true, false);
    case DType::Float8E5M2FNUZ:
      return float8_to_double(b, 2, 16, false, true);
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
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

std::string describe_value(const HostTensor& value) {
  switch (value.kind) {
    case ValueKind::Tensor:
      return std::string(dtype_name(value.dtype)) + " " + shape_to_string(value.shape);
    case ValueKind::Sequence:
      return "sequence of " + std::to_string(value.elements.size()) + " " +
             dtype_name(value.dtype) + " tensors";
    case ValueKind::Optional:
      return value.elements.empty()
                 ? std::string("optional ") + dtype_name(value.dtype) + " (empty)"
                 : "optional " + describe_value(value.elements[0]);
  }
  return "?";
}

}  // namespace turnkey
