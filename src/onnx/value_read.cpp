// Reading the values of ONNX test data: TensorProto (every element type turnkey has a DType for,
// strings included), SequenceProto and OptionalProto files, each read as what the graph declares
// (input_data.h, model_facts.h). Messages are bare reasons: the caller names the file.
#include <onnx/onnx-data_pb.h>

#include "turnkey/onnx/onnx_proto.h"

#include <bit>

#include "proto_read.h"
#include "turnkey/onnx/input_data.h"

namespace turnkey::onnx_model {

namespace fs = std::filesystem;
using namespace detail;

static_assert(std::endian::native == std::endian::little,
              "raw_data in ONNX tensors is little-endian; copying it as-is needs a little-endian "
              "host");

namespace {

template <typename Proto>
Proto parse_pb(const fs::path& path, const char* what) {
  int64_t size_bytes = 0;
  Fd fd = open_regular_file(path, &size_bytes);
  Proto proto;
  Sha256 unused_hash;
  try {
    if (!parse_file(fd.get(), &proto, &unused_hash, size_bytes)) {
      throw invalid(fmt::format("not an ONNX {} (protobuf parse failed)", what));
    }
  } catch (const std::bad_alloc&) {
    throw invalid(fmt::format("not an ONNX {} (protobuf parse ran out of memory)", what));
  }
  return proto;
}

// The typed field of a tensor without raw_data into `dst` (n elements of `elem` bytes): narrow
// types travel widened in int32_data (float16, bfloat16 and float8 as their bit patterns),
// uint32 and uint64 in uint64_data. False when the field does not hold n elements.
bool copy_typed_field(const onnx::TensorProto& t, DType dtype, int64_t n, std::byte* dst) {
  const size_t elem = dtype_size_bytes(dtype);
  auto store = [&](int64_t i, auto value) { std::memcpy(dst + i * elem, &value, sizeof(value)); };
  auto narrow = [&](auto zero) {
    if (t.int32_data_size() != n) return false;
    for (int64_t i = 0; i < n; ++i) {
      store(i, static_cast<decltype(zero)>(t.int32_data(static_cast<int>(i))));
    }
    return true;
  };
  switch (dtype) {
    case DType::Float32:
      if (t.float_data_size() != n) return false;
      std::memcpy(dst, t.float_data().data(), n * elem);
      return true;
    case DType::Float64:
      if (t.double_data_size() != n) return false;
      std::memcpy(dst, t.double_data().data(), n * elem);
      return true;
    case DType::Int64:
      if (t.int64_data_size() != n) return false;
      std::memcpy(dst, t.int64_data().data(), n * elem);
      return true;
    case DType::Int32:
      if (t.int32_data_size() != n) return false;
      std::memcpy(dst, t.int32_data().data(), n * elem);
      return true;
    case DType::Uint64:
      if (t.uint64_data_size() != n) return false;
      std::memcpy(dst, t.uint64_data().data(), n * elem);
      return true;
    case DType::Uint32:
      if (t.uint64_data_size() != n) return false;
      for (int64_t i = 0; i < n; ++i) {
        store(i, static_cast<uint32_t>(t.uint64_data(static_cast<int>(i))));
      }
      return true;
    case DType::Int16:
    case DType::Uint16:
    case DType::Float16:
    case DType::BFloat16:
      return narrow(uint16_t{});
    case DType::Int8:
    case DType::Uint8:
    case DType::Float8E4M3FN:
    case DType::Float8E4M3FNUZ:
    case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ:
      return narrow(uint8_t{});
    case DType::Bool:
      if (t.int32_data_size() != n) return false;
      for (int64_t i = 0; i < n; ++i) {
        store(i, static_cast<uint8_t>(t.int32_data(static_cast<int>(i)) != 0));
      }
      return true;
    case DType::String:
    case DType::Unknown:
      return false;
  }
  return false;
}

HostTensor tensor_from_proto(const onnx::TensorProto& t) {
  HostTensor out;
  out.name = t.name();
  out.dtype = dtype_from_onnx(t.data_type());
  if (out.dtype == DType::Unknown) {
    throw invalid(fmt::format("tensor '{}' has type {}, which turnkey cannot read", t.name(),
                              onnx_type_name(t.data_type())));
  }
  if (is_external(t)) {
    throw invalid(
        fmt::format("tensor '{}' keeps its data externally, which .pb inputs do not "
                    "support",
                    t.name()));
  }
  // A SequenceProto parses as a TensorProto too: its tensors land in `segment`, its name in dims.
  if (t.has_segment()) {
    throw invalid(
        fmt::format("tensor '{}' is split into segments, which turnkey does not read "
                    "(a sequence's file, read as the tensor the graph declares, looks "
                    "so)",
                    t.name()));
  }
  const std::string what = fmt::format("tensor '{}'", t.name());
  const int64_t n = element_count_or_throw(what, t.dims());
  out.shape.assign(t.dims().begin(), t.dims().end());
  if (out.dtype == DType::String) {
    if (t.string_data_size() != n) {
      throw invalid(fmt::format("{}: dims {} need {} strings, its data holds {}", what,
                                dims_to_string(t.dims()), n, t.string_data_size()));
    }
    out.strings.assign(t.string_data().begin(), t.string_data().end());
    return out;
  }
  const int64_t stored = stored_elements(t);
  if (stored != n) {
    throw invalid(fmt::format(
        "{}: dims {} need {} elements, its data holds {}", what, dims_to_string(t.dims()), n,
        stored < 0 ? "a size that does not fit the type" : std::to_string(stored)));
  }
  out.data.resize(static_cast<size_t>(n) * dtype_size_bytes(out.dtype));
  if (n == 0) return out;
  if (!t.raw_data().empty()) {
    std::memcpy(out.data.data(), t.raw_data().data(), out.data.size());
    return out;
  }
  if (!copy_typed_field(t, out.dtype, n, out.data.data())) {
    throw invalid(fmt::format("{}: data of type {} is not in the field ONNX stores it in", what,
                              onnx_type_name(t.data_type())));
  }
  return out;
}

const char* element_kind_name(int elem_type) {
  switch (elem_type) {
    case onnx::SequenceProto::TENSOR:
      return "tensors";
    case onnx::SequenceProto::SPARSE_TENSOR:
      return "sparse tensors";
    case onnx::SequenceProto::SEQUENCE:
      return "sequences";
    case onnx::SequenceProto::MAP:
      return "maps";
    case onnx::SequenceProto::OPTIONAL:
      return "optionals";
    default:
      return "values of an undefined type";
  }
}

HostTensor sequence_from_proto(const onnx::SequenceProto& s, DType declared) {
  if (s.elem_type() != onnx::SequenceProto::TENSOR &&
      !(s.elem_type() == onnx::SequenceProto::UNDEFINED && s.tensor_values_size() > 0)) {
    throw invalid(fmt::format("sequence '{}' holds {}; turnkey reads sequences of tensors",
                              s.name(), element_kind_name(s.elem_type())));
  }
  HostTensor out;
  out.name = s.name();
  out.kind = ValueKind::Sequence;
  out.dtype = declared;
  for (const onnx::TensorProto& t : s.tensor_values()) {
    out.elements.push_back(tensor_from_proto(t));
  }
  if (!out.elements.empty() && declared == DType::Unknown) out.dtype = out.elements[0].dtype;
  return out;
}

HostTensor optional_from_proto(const onnx::OptionalProto& o, const ValueInfo& want) {
  HostTensor out;
  out.name = o.name();
  out.kind = ValueKind::Optional;
  out.dtype = want.dtype;
  const bool holds_sequence = want.layers.size() > 1 && want.layers[1] == ValueKind::Sequence;
  switch (o.elem_type()) {
    case onnx::OptionalProto::UNDEFINED:
      break;  // an empty optional
    case onnx::OptionalProto::TENSOR:
      if (o.has_tensor_value()) out.elements.push_back(tensor_from_proto(o.tensor_value()));
      break;
    case onnx::OptionalProto::SEQUENCE:
      if (o.has_sequence_value()) {
        out.elements.push_back(sequence_from_proto(o.sequence_value(), want.dtype));
      }
      break;
    default:
      throw invalid(
          fmt::format("optional '{}' holds one of the {}; turnkey reads optional "
                      "tensors and sequences",
                      o.name(), element_kind_name(o.elem_type())));
  }
  if (!out.elements.empty() && out.elements[0].is_tensor() == holds_sequence) {
    throw invalid(fmt::format("optional '{}' holds a {} where the model declares a {}", o.name(),
                              holds_sequence ? "tensor" : "sequence",
                              holds_sequence ? "sequence" : "tensor"));
  }
  return out;
}

// Some backend tests carry bfloat16 data as UINT16 (the bits, before numpy had the type): read
// as what the graph declares.
void as_declared_bfloat16(HostTensor& v, DType declared) {
  if (declared == DType::BFloat16 && v.dtype == DType::Uint16) v.dtype = DType::BFloat16;
  for (HostTensor& e : v.elements) as_declared_bfloat16(e, declared);
}

}  // namespace

HostTensor read_tensor_pb(const fs::path& path) {
  return tensor_from_proto(parse_pb<onnx::TensorProto>(path, "TensorProto"));
}

HostTensor read_value_pb(const fs::path& path, const ValueInfo& want) {
  HostTensor v;
  if (want.layers.empty()) {
    v = read_tensor_pb(path);
  } else if (want.layers[0] == ValueKind::Sequence) {
    v = sequence_from_proto(parse_pb<onnx::SequenceProto>(path, "SequenceProto"), want.dtype);
  } else {
    v = optional_from_proto(parse_pb<onnx::OptionalProto>(path, "OptionalProto"), want);
  }
  as_declared_bfloat16(v, want.dtype);
  return v;
}

}  // namespace turnkey::onnx_model
