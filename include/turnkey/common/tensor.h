// Host tensors: plain bytes in row-major order with a dtype and shape. Owned by value; not
// thread-safe to mutate concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace turnkey {

// Element types turnkey can generate and hand to runtimes. Values match nothing external: map
// explicitly at each boundary (ONNX TensorProto, ORT, torch).
enum class DType { Float32, Float16, Float64, Int8, Uint8, Int16, Int32, Int64, Bool, Unknown };

const char* dtype_name(DType dtype);  // "float32", "float16", ... "unknown"
size_t dtype_size_bytes(DType dtype);  // 0 for Unknown

struct HostTensor {
  std::string name;
  DType dtype = DType::Unknown;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;  // element_count() * dtype_size_bytes(dtype) bytes

  int64_t element_count() const;
};

// "1x3x224x224" style, "scalar" for rank 0.
std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace turnkey
