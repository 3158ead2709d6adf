// The .npy/.npz reader (common/npz.h) on files numpy itself writes (stored and deflated members,
// every dtype turnkey feeds, Fortran order, big-endian, scalars, empty arrays), what it refuses in
// one line, and a fuzz-minded sweep: every truncation and many byte flips of real archives are
// either read exactly or refused with Error(InvalidInput), never anything else.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "support/temp_dir.h"
#include "turnkey/common/error.h"
#include "turnkey/common/npz.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs numpy (Debian's python3-numpy) on `code` with the dir as argv[1]; skips without it.
bool numpy(const fs::path& dir, const std::string& code) {
  const fs::path script = dir / "make.py";
  std::ofstream(script) << code;
  const std::string cmd = "/usr/bin/python3 " + script.string() + " " + dir.string() + " 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// Every array of the fixtures with its C-order little-endian bytes written beside it (name.raw)
// by numpy, so the reader's bytes are compared with numpy's own.
constexpr const char* kFixtures = R"PY(
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
arrays = {
    "f32": rng.standard_normal((2, 3, 4)).astype(np.float32),
    "f16": rng.standard_normal((5,)).astype(np.float16),
    "f64": rng.standard_normal((3, 2)),
    "i8": np.arange(-6, 6, dtype=np.int8).reshape(3, 4),
    "i16": np.arange(12, dtype=np.int16),
    "i32": np.arange(24, dtype=np.int32).reshape(2, 3, 4),
    "i64": np.array([[1, -2], [3, 1 << 40]], dtype=np.int64),
    "u8": np.arange(7, dtype=np.uint8),
    "b": np.array([True, False, True]),
    "scalar": np.float32(2.5),
    "empty": np.zeros((0, 3), dtype=np.float32),
    "fortran": np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4)),
    "big": np.arange(6, dtype=">f4").reshape(2, 3),
    "name:0": np.ones((1, 2), dtype=np.float32),
}
np.savez(d + "/stored.npz", **arrays)
np.savez_compressed(d + "/deflated.npz", **arrays)
for k, a in arrays.items():
    a = np.asarray(a)
    open(d + "/" + k.replace(":", "_") + ".raw", "wb").write(
        np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"))).tobytes())
np.savez(d + "/c64.npz", x=np.arange(3, dtype=np.complex64))
np.savez(d + "/more.npz", u16=np.arange(3, dtype=np.uint16), u32=np.arange(3, dtype=">u4"),
         u64=np.array([1 << 63], dtype=np.uint64), text=np.array([["a", "Zoë"], ["", "¤€𝄞"]]),
         raw=np.array([b"x", b"yz"]))
np.savez(d + "/obj.npz", x=np.array([{"a": 1}], dtype=object))
np.savez(d + "/structured.npz", x=np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
np.save(d + "/plain.npy", np.arange(4, dtype=np.int64))
)PY";

class Npz : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!numpy(dir_.path(), kFixtures)) GTEST_SKIP() << "numpy (python3-numpy) is missing";
  }
  TempDir dir_{"tk-unit-npz"};
};

TEST_F(Npz, ReadsWhatNumpyWritesStoredAndDeflated) {
  const std::map<std::string, std::pair<DType, std::vector<int64_t>>> want = {
      {"f32", {DType::Float32, {2, 3, 4}}},
      {"f16", {DType::Float16, {5}}},
      {"f64", {DType::Float64, {3, 2}}},
      {"i8", {DType::Int8, {3, 4}}},
      {"i16", {DType::Int16, {12}}},
      {"i32", {DType::Int32, {2, 3, 4}}},
      {"i64", {DType::Int64, {2, 2}}},
      {"u8", {DType::Uint8, {7}}},
      {"b", {DType::Bool, {3}}},
      {"scalar", {DType::Float32, {}}},
      {"empty", {DType::Float32, {0, 3}}},
      {"fortran", {DType::Float32, {2, 3, 4}}},
      {"big", {DType::Float32, {2, 3}}},
      {"name:0", {DType::Float32, {1, 2}}}};
  for (const char* file : {"stored.npz", "deflated.npz"}) {
    SCOPED_TRACE(file);
    const std::vector<HostTensor> got = read_npz(dir_ / file);
    ASSERT_EQ(got.size(), want.size());
    for (const HostTensor& t : got) {
      SCOPED_TRACE(t.name);
      ASSERT_TRUE(want.count(t.name));
      EXPECT_EQ(t.dtype, want.at(t.name).first);
      EXPECT_EQ(t.shape, want.at(t.name).second);
      std::string raw_name = t.name;
      for (char& c : raw_name) c = c == ':' ? '_' : c;
      const std::string raw = slurp(dir_ / (raw_name + ".raw"));
      ASSERT_EQ(t.data.size(), raw.size());
      // An empty array has no buffer (data() is null): memcmp must not see it (UBSan: nonnull).
      EXPECT_TRUE(raw.empty() || std::memcmp(t.data.data(), raw.data(), raw.size()) == 0);
    }
  }
}

// Unsigned integers of every width, and fixed-width strings (UTF-32 'U' as UTF-8, bytes 'S')
// without their padding (issue 35).
TEST_F(Npz, ReadsUnsignedIntegersAndStrings) {
  std::map<std::string, HostTensor> got;
  for (HostTensor& t : read_npz(dir_ / "more.npz")) got[t.name] = std::move(t);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got["u16"].dtype, DType::Uint16);
  EXPECT_EQ(got["u16"].data.size(), 6u);
  EXPECT_EQ(got["u32"].dtype, DType::Uint32);
  uint32_t u32[3];
  std::memcpy(u32, got["u32"].data.data(), sizeof u32);  // big-endian in the file
  EXPECT_EQ(u32[2], 2u);
  uint64_t u64;
  std::memcpy(&u64, got["u64"].data.data(), 8);
  EXPECT_EQ(u64, uint64_t{1} << 63);
  EXPECT_EQ(got["text"].dtype, DType::String);
  EXPECT_EQ(got["text"].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(
      got["text"].strings,
      (std::vector<std::string>{"a", "Zo\xc3\xab", "", "\xc2\xa4\xe2\x82\xac\xf0\x9d\x84\x9e"}));
  EXPECT_EQ(got["raw"].strings, (std::vector<std::string>{"x", "yz"}));
}

TEST_F(Npz, RefusesWhatItCannotFeedInOneLine) {
  auto reason = [&](const std::string& file) {
    try {
      read_npz(dir_ / file);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  EXPECT_EQ(reason("c64.npz"),
            "member 'x.npy': dtype complex64 is not one turnkey feeds to models");
  EXPECT_EQ(reason("obj.npz"), "member 'x.npy': dtype object is not one turnkey feeds to models");
  EXPECT_EQ(reason("structured.npz"),
            "member 'x.npy': structured dtypes are not supported (descr is a list)");
  EXPECT_EQ(reason("plain.npy"), "not a zip archive (no end-of-central-directory record)");
  EXPECT_EQ(reason("missing.npz"), "not found");
  EXPECT_EQ(reason(""), "is a directory");
  std::ofstream(dir_ / "empty.npz").close();
  EXPECT_EQ(reason("empty.npz"), "empty file");
  // A single .npy parses on its own.
  const std::string npy = slurp(dir_ / "plain.npy");
  const HostTensor t = parse_npy(npy, "p");
  EXPECT_EQ(t.dtype, DType::Int64);
  EXPECT_EQ(t.shape, std::vector<int64_t>{4});
  EXPECT_THROW(parse_npy(npy.substr(0, npy.size() - 1), "p"), Error);
  EXPECT_THROW(parse_npy(npy + "x", "p"), Error);
}

// Reads `bytes`; true when it matched `good` exactly, false when refused with InvalidInput.
// Anything else (another exception, a crash) fails the test.
bool read_or_refuse(const std::string& bytes, const std::vector<HostTensor>& good) {
  try {
    const std::vector<HostTensor> got = parse_npz(bytes);
    EXPECT_EQ(got.size(), good.size());
    for (size_t i = 0; i < got.size() && i < good.size(); ++i) {
      EXPECT_EQ(got[i].name, good[i].name);
      EXPECT_EQ(got[i].shape, good[i].shape);
      EXPECT_TRUE(got[i].data == good[i].data) << got[i].name;
    }
    return true;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return false;
  }
}

TEST_F(Npz, DamagedArchivesAreReadExactlyOrRefusedNeverAnythingElse) {
  for (const char* file : {"stored.npz", "deflated.npz"}) {
    SCOPED_TRACE(file);
    const std::string bytes = slurp(dir_ / file);
    const std::vector<HostTensor> good = parse_npz(bytes);
    // Every truncation: the end record is gone, so none of them reads.
    for (size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(read_or_refuse(bytes.substr(0, n), good)) << "truncated to " << n;
    }
    // Byte flips and extreme values at every position: data damage must not pass unnoticed
    // (the CRC), header damage must not reach memory it should not.
    int refused = 0;
    for (size_t at = 0; at < bytes.size(); ++at) {
      for (unsigned char v : {static_cast<unsigned char>(bytes[at] ^ 0x01),
                              static_cast<unsigned char>(0x00), static_cast<unsigned char>(0xFF)}) {
        if (v == static_cast<unsigned char>(bytes[at])) continue;
        std::string damaged = bytes;
        damaged[at] = static_cast<char>(v);
        refused += !read_or_refuse(damaged, good);
      }
    }
    EXPECT_GT(refused, static_cast<int>(bytes.size()));  // most positions matter
  }
}

}  // namespace
}  // namespace turnkey::test
