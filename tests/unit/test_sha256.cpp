#include <gtest/gtest.h>

#include <string>

#include "turnkey/common/error.h"
#include "turnkey/common/sha256.h"

namespace turnkey {
namespace {

// FIPS 180-2 / NIST example vectors.
TEST(Sha256, NistVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(
      sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklm"
                 "nopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the padding boundaries (55/56 bytes fit the length in one block or not).
TEST(Sha256, PaddingBoundaries) {
  const std::pair<size_t, const char*> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
      {1000, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"},
  };
  for (const auto& [n, hex] : cases) EXPECT_EQ(sha256_hex(std::string(n, 'a')), hex) << n;
}

// Any split of the input into update() calls gives the same digest as one call.
TEST(Sha256, IncrementalEqualsOneShot) {
  std::string data;
  for (int rep = 0; rep < 40; ++rep) {
    for (int b = 0; b < 256; ++b) data += static_cast<char>(b);
  }
  const std::string expected = "e96760a87768717bcebcfd25ddc7d46b4dbc95a4b0014def080c08539f7d90d0";
  ASSERT_EQ(sha256_hex(data), expected);
  for (size_t chunk : {1u, 3u, 55u, 63u, 64u, 65u, 127u, 1000u, 4096u}) {
    Sha256 h;
    for (size_t i = 0; i < data.size(); i += chunk)
      h.update(std::string_view(data).substr(i, chunk));
    EXPECT_EQ(h.hex_digest(), expected) << "chunk " << chunk;
  }
}

TEST(Sha256, DigestIsStableAndUpdateAfterItIsAnError) {
  Sha256 h;
  h.update("abc");
  const std::string first = h.hex_digest();
  EXPECT_EQ(h.hex_digest(), first);
  try {
    h.update("more");
    FAIL() << "update after digest must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
  }
}

}  // namespace
}  // namespace turnkey
