// Reading ONNX protobuf files and the element types and sizes of their tensors (proto_read.h).
#include "proto_read.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <iterator>

namespace turnkey::onnx_model::detail {

namespace fs = std::filesystem;

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

DType dtype_of(int onnx_type) { return dtype_from_onnx(onnx_type); }

std::string onnx_type_name(int onnx_type) {
  if (onnx::TensorProto_DataType_IsValid(onnx_type)) {
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(onnx_type));
  }
  // Types newer than libonnx 1.12 (ONNX 1.14+), which ONNX Runtime runs.
  static const char* const kNewer[] = {"FLOAT8E4M3FN",   "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                       "FLOAT8E5M2FNUZ", "UINT4",          "INT4",
                                       "FLOAT4E2M1"};
  if (onnx_type >= 17 && onnx_type < 17 + static_cast<int>(std::size(kNewer))) {
    return kNewer[onnx_type - 17];
  }
  return fmt::format("TYPE_{}", onnx_type);
}

// Bytes per element as stored in raw_data; 0 for STRING and unknown types.
int64_t onnx_element_bytes(int onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case 17:  // the FLOAT8 types, unnamed in libonnx 1.12
    case 18:
    case 19:
    case 20:
      return 1;
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return 2;
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::FLOAT:
      return 4;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::COMPLEX64:
      return 8;
    case onnx::TensorProto::COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

std::string dims_to_string(const google::protobuf::RepeatedField<int64_t>& dims) {
  if (dims.empty()) return "scalar";
  return fmt::format("{}", fmt::join(dims, "x"));
}

// Element count of `dims`; -1 when a dim is negative, -2 on int64 overflow.
int64_t checked_element_count(const google::protobuf::RepeatedField<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (__builtin_mul_overflow(n, d, &n)) return -2;
  }
  return n;
}

int64_t element_count_or_throw(const std::string& what,
                               const google::protobuf::RepeatedField<int64_t>& dims) {
  int64_t n = checked_element_count(dims);
  if (n == -1) throw invalid(fmt::format("{}: negative dim in {}", what, dims_to_string(dims)));
  if (n == -2) {
    throw invalid(fmt::format("{}: dims {} overflow int64", what, dims_to_string(dims)));
  }
  return n;
}

// How many elements the tensor's inline data holds, or -1 when its field does not fit the type.
int64_t stored_elements(const onnx::TensorProto& t) {
  const int type = t.data_type();
  if (!t.raw_data().empty()) {
    int64_t size = onnx_element_bytes(type);
    if (size == 0 || static_cast<int64_t>(t.raw_data().size()) % size != 0) return -1;
    return static_cast<int64_t>(t.raw_data().size()) / size;
  }
  const bool is_complex =
      type == onnx::TensorProto::COMPLEX64 || type == onnx::TensorProto::COMPLEX128;
  if (t.float_data_size() > 0) return t.float_data_size() / (is_complex ? 2 : 1);
  if (t.double_data_size() > 0) return t.double_data_size() / (is_complex ? 2 : 1);
  if (t.int32_data_size() > 0) return t.int32_data_size();
  if (t.int64_data_size() > 0) return t.int64_data_size();
  if (t.uint64_data_size() > 0) return t.uint64_data_size();
  if (t.string_data_size() > 0) return t.string_data_size();
  return 0;
}

bool is_external(const onnx::TensorProto& t) {
  return t.has_data_location() && t.data_location() == onnx::TensorProto::EXTERNAL;
}

// The checker (1.12) compares neither dims with the data actually stored nor guards the element
// count against overflow, so a 10-byte file can claim a 10^18-element weight. Checked here so
// parameter counts are true and runtimes never see such a tensor.
int64_t validated_initializer_elements(const onnx::TensorProto& t) {
  const std::string what = fmt::format("initializer '{}'", t.name());
  int64_t n = element_count_or_throw(what, t.dims());
  if (is_external(t)) return n;
  int64_t stored = stored_elements(t);
  if (stored != n) {
    throw invalid(
        fmt::format("{}: dims {} need {} elements of {}, its data holds {}", what,
                    dims_to_string(t.dims()), n, onnx_type_name(t.data_type()),
                    stored < 0 ? "a size that does not fit the type" : std::to_string(stored)));
  }
  return n;
}

void add_checked(int64_t* total, int64_t add) {
  if (__builtin_add_overflow(*total, add, total)) {
    throw invalid("initializers hold more than 2^63 elements or bytes");
  }
}

int64_t bytes_of(int64_t elements, const onnx::TensorProto& t) {
  if (t.data_type() == onnx::TensorProto::STRING) {
    int64_t bytes = 0;
    for (const std::string& s : t.string_data()) add_checked(&bytes, s.size());
    return bytes;
  }
  int64_t bytes;
  if (__builtin_mul_overflow(elements, onnx_element_bytes(t.data_type()), &bytes)) {
    throw invalid(fmt::format("initializer '{}': byte size overflows int64", t.name()));
  }
  return bytes;
}

}  // namespace turnkey::onnx_model::detail
