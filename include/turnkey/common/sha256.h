// SHA-256 (FIPS 180-4) for content hashes of model files and cache keys, computed by OpenSSL's
// libcrypto. Incremental, so large files are hashed in chunks. One Sha256 object is not
// thread-safe; separate objects are.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace turnkey {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  // Throws Error(Internal) after digest().
  void update(const void* data, size_t size_bytes);
  void update(std::string_view data) { update(data.data(), data.size()); }
  // Finishes the hash (later calls return the same digest); update() afterwards is an error.
  std::array<uint8_t, 32> digest();
  // digest() as 64 lowercase hex digits.
  std::string hex_digest();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
  std::array<uint8_t, 32> digest_{};
  bool finished_ = false;
};

// Hash of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace turnkey
