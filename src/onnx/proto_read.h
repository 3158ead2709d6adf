// Internal to src/onnx: reading protobuf files (size checks, one pass that also hashes) and the
// element types and sizes of ONNX tensors, shared by model_facts.cpp and proto_read.cpp. Every
// function throws Error(InvalidInput) with a bare reason for what a hostile file can do.
#pragma once

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/sha256.h"
#include "turnkey/onnx/model_facts.h"
#include "turnkey/onnx/onnx_proto.h"

namespace turnkey::onnx_model::detail {

// Messages are the bare reason: the caller adds which input it was ("turnkey: m.onnx: <reason>").
inline Error invalid(const std::string& reason) { return Error(ErrorKind::InvalidInput, reason); }

using turnkey::Fd;                 // common/files.h
using turnkey::open_regular_file;  // common/files.h

// Hashes every byte the parser pulls through, so a model is read from disk once. Bytes handed back
// with BackUp() come again from the next Next() and must not be hashed twice.
class HashingInputStream : public google::protobuf::io::ZeroCopyInputStream {
 public:
  HashingInputStream(google::protobuf::io::ZeroCopyInputStream* inner, Sha256* hash)
      : inner_(inner), hash_(hash) {}

  bool Next(const void** data, int* size) override {
    if (!inner_->Next(data, size)) return false;
    int skip = std::min(backed_up_, *size);
    hash_->update(static_cast<const char*>(*data) + skip, static_cast<size_t>(*size - skip));
    backed_up_ -= skip;
    return true;
  }
  void BackUp(int count) override {
    inner_->BackUp(count);
    backed_up_ += count;
  }
  bool Skip(int count) override {
    const void* data;
    int size;
    while (count > 0) {
      if (!Next(&data, &size)) return false;
      if (size > count) {
        BackUp(size - count);
        return true;
      }
      count -= size;
    }
    return true;
  }
  int64_t ByteCount() const override { return inner_->ByteCount(); }

  // Hashes whatever the parser did not consume, so the digest covers the whole file.
  void drain() {
    const void* data;
    int size;
    while (Next(&data, &size)) {
    }
  }

 private:
  google::protobuf::io::ZeroCopyInputStream* inner_;
  Sha256* hash_;
  int backed_up_ = 0;
};

// Parses a whole file of `size_bytes` as `proto`, beyond protobuf's default 64 MB limit. False on
// a parse error; throws Error(Io) on a read error. The read buffer is the file's size, from 4 KiB
// to 1 MiB (a 1 MiB buffer for a 100-byte .pb costs more than its parse).
template <typename Proto>
bool parse_file(int fd, Proto* proto, Sha256* hash, int64_t size_bytes) {
  const int block = static_cast<int>(std::clamp<int64_t>(size_bytes, 4096, 1 << 20));
  google::protobuf::io::FileInputStream file_stream(fd, block);
  HashingInputStream hashing(&file_stream, hash);
  bool ok;
  {
    google::protobuf::io::CodedInputStream coded(&hashing);
    coded.SetTotalBytesLimit(INT_MAX);
    ok = proto->ParseFromCodedStream(&coded);
  }  // the CodedInputStream backs up its unread buffer when destroyed
  if (ok) hashing.drain();
  if (file_stream.GetErrno() != 0) {
    throw Error(ErrorKind::Io, fmt::format("read failed: {}", strerror(file_stream.GetErrno())));
  }
  return ok;
}

bool is_default_domain(const std::string& domain);
DType dtype_of(int onnx_type);
std::string onnx_type_name(int onnx_type);
// Bytes per element as stored in raw_data; 0 for STRING and unknown types.
int64_t onnx_element_bytes(int onnx_type);
std::string dims_to_string(const google::protobuf::RepeatedField<int64_t>& dims);
// Element count of `dims`; -1 when a dim is negative, -2 on int64 overflow.
int64_t checked_element_count(const google::protobuf::RepeatedField<int64_t>& dims);
int64_t element_count_or_throw(const std::string& what,
                               const google::protobuf::RepeatedField<int64_t>& dims);
// How many elements the tensor's inline data holds, or -1 when its field does not fit the type.
int64_t stored_elements(const onnx::TensorProto& t);
bool is_external(const onnx::TensorProto& t);
// Elements of an initializer, checked against the data it stores (see proto_read.cpp).
int64_t validated_initializer_elements(const onnx::TensorProto& t);
void add_checked(int64_t* total, int64_t add);
int64_t bytes_of(int64_t elements, const onnx::TensorProto& t);

}  // namespace turnkey::onnx_model::detail
