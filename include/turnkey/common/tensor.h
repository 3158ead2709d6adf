// Host values: tensors (plain bytes in row-major order with a dtype and shape; strings as a list),
// and the sequences and optionals of ONNX that hold them. Owned by value; not thread-safe to
// mutate concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace turnkey {

// Element types turnkey reads, generates, hands to runtimes and compares. Values match nothing
// external: map explicitly at each boundary (ONNX TensorProto, ORT, torch, NumPy); the table in
// tensor.cpp holds each type's name, size and ONNX number.
enum class DType {
  Float32,
  Float16,
  Float64,
  Int8,
  Uint8,
  Int16,
  Int32,
  Int64,
  Bool,
  Uint16,
  Uint32,
  Uint64,
  BFloat16,  // the upper 16 bits of a binary32
  String,    // HostTensor::strings, not data
  // 8-bit floats (ONNX 1.14+, ORT >= 1.16): E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ.
  Float8E4M3FN,
  Float8E4M3FNUZ,
  Float8E5M2,
  Float8E5M2FNUZ,
  Unknown
};

const char* dtype_name(DType dtype);   // "float32", "float16", ... "string", "unknown"
size_t dtype_size_bytes(DType dtype);  // 0 for String and Unknown
int dtype_onnx_type(DType dtype);      // TensorProto.DataType number; 0 (UNDEFINED) for Unknown
DType dtype_from_onnx(int onnx_type);  // Unknown for types without a DType (complex, int4)
bool dtype_is_float(DType dtype);      // the float types, 8 to 64 bits: compared within tolerance

// An element of an 8/16-bit float type (Float16, BFloat16, Float8*) as a double; NaN stays NaN.
double small_float_to_double(DType dtype, const std::byte* element);

// What a value is: a tensor, an ONNX sequence of tensors (SequenceProto), or an optional value
// (OptionalProto), which holds one element (a tensor or a sequence) or none.
enum class ValueKind { Tensor, Sequence, Optional };

struct HostTensor {
  std::string name;
  ValueKind kind = ValueKind::Tensor;
  // Tensor: its element type. Sequence and Optional: the element type of the tensors inside.
  DType dtype = DType::Unknown;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;       // element_count() * dtype_size_bytes(dtype) bytes
  std::vector<std::string> strings;  // String: element_count() strings (data stays empty)
  std::vector<HostTensor> elements;  // Sequence: its tensors; Optional: none, or its one value

  int64_t element_count() const;
  bool is_tensor() const { return kind == ValueKind::Tensor; }
};

// "1x3x224x224" style, "scalar" for rank 0.
std::string shape_to_string(const std::vector<int64_t>& shape);

// "float32 1x3x224x224", "sequence of 3 float32 tensors", "optional int64 (empty)": for messages.
std::string describe_value(const HostTensor& value);

}  // namespace turnkey
