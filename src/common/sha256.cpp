#include "turnkey/common/sha256.h"

#include <openssl/evp.h>

#include "turnkey/common/error.h"

namespace turnkey {

struct Sha256::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  if (!context_->ctx || EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr) != 1) {
    throw Error(ErrorKind::Internal, "SHA-256: libcrypto could not start a digest");
  }
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, size_t size_bytes) {
  if (finished_) throw Error(ErrorKind::Internal, "Sha256::update after digest");
  if (size_bytes == 0) return;
  if (EVP_DigestUpdate(context_->ctx, data, size_bytes) != 1) {
    throw Error(ErrorKind::Internal, "SHA-256: libcrypto update failed");
  }
}

std::array<uint8_t, 32> Sha256::digest() {
  if (!finished_) {
    unsigned int size = 0;
    if (EVP_DigestFinal_ex(context_->ctx, digest_.data(), &size) != 1 || size != digest_.size()) {
      throw Error(ErrorKind::Internal, "SHA-256: libcrypto final failed");
    }
    finished_ = true;
  }
  return digest_;
}

std::string Sha256::hex_digest() {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(64);
  for (uint8_t byte : digest()) {
    s += kHex[byte >> 4];
    s += kHex[byte & 0xf];
  }
  return s;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

}  // namespace turnkey
