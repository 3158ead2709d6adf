// SHA-256 (FIPS 180-4) for content hashes of model files and cache keys. Incremental, so large
// files are hashed in chunks. One Sha256 object is not thread-safe; separate objects are.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace turnkey {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size_bytes);
  void update(std::string_view data) { update(data.data(), data.size()); }
  // Finishes the hash; the object must not be updated afterwards.
  std::array<uint8_t, 32> digest();
  // digest() as 64 lowercase hex digits.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
  bool finished_ = false;
};

// Hash of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace turnkey
