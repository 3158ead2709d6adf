// The .npz container (libzip, common/npz.cpp) on hostile archives the test writes itself: zip
// records built byte by byte (a member that inflates past its recorded size, sizes past the
// bounds, too many members, a damaged central directory, a local header naming another file) and
// members libzip writes the way other tools do (AES-encrypted, bzip2). Each is refused in one line
// naming the reason; none is inflated past its bound. No numpy needed: the .npy members are written
// here too.
#include <gtest/gtest.h>
#include <zip.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "support/temp_dir.h"
#include "turnkey/common/error.h"
#include "turnkey/common/npz.h"

namespace turnkey::test {
namespace {

// A uint8 .npy of n zeros, as numpy.save writes it (version 1, header padded to 64 bytes).
std::string npy_u8(size_t n) {
  std::string header =
      "{'descr': '|u1', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + std::string(n, '\0');
}

std::string deflate_raw(const std::string& in) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

uint32_t crc_of(const std::string& s) {
  return static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}

// One member as its records state it: `data` is what is stored (deflated for method 8); crc and
// size are what the records claim, true or not. Local header and central record agree.
struct Member {
  std::string name;
  uint16_t method = 0;
  std::string data;
  uint32_t crc = 0;
  uint64_t size = 0;
  uint16_t flags = 0;
};

Member stored(const std::string& name, const std::string& bytes) {
  return {name, 0, bytes, crc_of(bytes), bytes.size()};
}
Member deflated(const std::string& name, const std::string& bytes) {
  return {name, 8, deflate_raw(bytes), crc_of(bytes), bytes.size()};
}

void put(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}

// A zip archive of `members`, with a zip64 end record when `zip64_end` (the only way to count
// more than 65535 members).
std::string zip_of(const std::vector<Member>& members, bool zip64_end = false) {
  std::string out, central;
  for (const Member& m : members) {
    const size_t local = out.size();
    put(out, 0x04034b50, 4);
    for (uint64_t v : {uint64_t{20}, uint64_t{m.flags}, uint64_t{m.method}}) put(out, v, 2);
    put(out, 0, 4);  // time, date
    for (uint64_t v : {uint64_t{m.crc}, uint64_t{m.data.size()}, m.size}) put(out, v, 4);
    put(out, m.name.size(), 2);
    put(out, 0, 2);
    out += m.name + m.data;
    put(central, 0x02014b50, 4);
    for (uint64_t v : {uint64_t{20}, uint64_t{20}, uint64_t{m.flags}, uint64_t{m.method}}) {
      put(central, v, 2);
    }
    put(central, 0, 4);
    for (uint64_t v : {uint64_t{m.crc}, uint64_t{m.data.size()}, m.size}) put(central, v, 4);
    put(central, m.name.size(), 2);
    put(central, 0, 8);  // extra, comment, disk, internal attributes
    put(central, 0, 4);  // external attributes
    put(central, local, 4);
    central += m.name;
  }
  const size_t cd_offset = out.size();
  out += central;
  if (zip64_end) {
    const size_t z = out.size();
    put(out, 0x06064b50, 4);
    put(out, 44, 8);
    put(out, 45, 2);
    put(out, 45, 2);
    put(out, 0, 8);  // disks
    for (uint64_t v : {members.size(), members.size(), central.size(), cd_offset}) put(out, v, 8);
    put(out, 0x07064b50, 4);
    put(out, 0, 4);
    put(out, z, 8);
    put(out, 1, 4);
  }
  put(out, 0x06054b50, 4);
  put(out, 0, 4);  // disks
  const uint64_t count = zip64_end ? 0xFFFF : members.size();
  for (uint64_t v : {count, count}) put(out, v, 2);
  put(out, central.size(), 4);
  put(out, cd_offset, 4);
  put(out, 0, 2);
  return out;
}

// parse_npz's one-line refusal, or "(read)".
std::string reason(const std::string& bytes) {
  try {
    parse_npz(bytes);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    return e.what();
  }
  return "(read)";
}

TEST(NpzZip, ReadsWhatTheseBuildersWrite) {  // so the refusals below are the lies they tell
  const std::vector<HostTensor> got =
      parse_npz(zip_of({stored("a.npy", npy_u8(3)), deflated("b.npy", npy_u8(1000))}));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].name, "a");
  EXPECT_EQ(got[1].shape, std::vector<int64_t>{1000});
}

TEST(NpzZip, RefusesAMemberThatInflatesPastItsRecordedSize) {
  // 64 MiB of zeros deflate to ~64 KiB; the records claim 1000 bytes. Reading stops there.
  const std::string big = npy_u8(size_t{64} << 20);
  Member bomb = deflated("x.npy", big);
  bomb.size = 1000;
  EXPECT_EQ(reason(zip_of({bomb})), "member 'x.npy': inflates past its recorded size");
  // A recorded size no deflate stream of that length can reach is refused before inflating.
  bomb.size = 0xFFFFFFF0;
  EXPECT_EQ(reason(zip_of({bomb})),
            "member 'x.npy': recorded size is impossible for its compressed size");
}

TEST(NpzZip, RefusesArchivesPastTheBoundsBeforeInflatingAnything) {
  // Two members that each claim 3 GiB (and hold 3.2 MB of bytes that are no deflate stream):
  // together past the 4 GiB bound, refused from the records alone.
  Member a{"a.npy", 8, std::string(3'200'000, 'x'), 0, uint64_t{3} << 30};
  Member b = a;
  b.name = "b.npy";
  EXPECT_EQ(reason(zip_of({a, b})),
            "member 'b.npy': the archive's arrays inflate to more than 4 GiB in all");
  EXPECT_EQ(reason(zip_of({a})), "member 'a.npy': damaged deflate data");  // one alone is read
  std::vector<Member> many;
  for (size_t i = 0; i <= kMaxNpzMembers; ++i)
    many.push_back(stored(std::to_string(i) + ".npy", ""));
  EXPECT_EQ(reason(zip_of(many, true)),
            "the archive holds 65536 members, more than the 65535 turnkey reads");
  EXPECT_EQ(reason(zip_of({stored("x.npy", npy_u8(1)), stored("x.npy", npy_u8(2))})),
            "two members have the same name");
}

TEST(NpzZip, RefusesEncryptedAndBzip2Members) {
  TempDir dir{"tk-unit-npz-zip"};
  const std::string npy = npy_u8(16);
  // libzip writes them as other zip tools do: WinZip AES-256, and bzip2 (method 12).
  auto write = [&](const std::string& file, bool encrypt) {
    int error = 0;
    zip_t* za = zip_open((dir / file).c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
    ASSERT_NE(za, nullptr) << error;
    zip_source_t* src = zip_source_buffer(za, npy.data(), npy.size(), 0);
    const zip_int64_t i = zip_file_add(za, "x.npy", src, 0);
    ASSERT_GE(i, 0);
    if (encrypt) {
      ASSERT_EQ(zip_file_set_encryption(za, i, ZIP_EM_AES_256, "secret"), 0);
    } else {
      ASSERT_EQ(zip_set_file_compression(za, i, ZIP_CM_BZIP2, 0), 0);
    }
    ASSERT_EQ(zip_close(za), 0) << zip_strerror(za);
  };
  write("aes.npz", true);
  write("bzip2.npz", false);
  auto reason_of = [&](const std::string& file) {
    try {
      read_npz(dir / file);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  EXPECT_EQ(reason_of("aes.npz"), "member 'x.npy': is encrypted");
  EXPECT_EQ(reason_of("bzip2.npz"),
            "member 'x.npy': compression method 12 is not stored (0) or deflate (8)");
  // Traditional PKWARE encryption: flag bit 0 on both records.
  Member old = stored("x.npy", npy);
  old.flags = 1;
  EXPECT_EQ(reason(zip_of({old})), "member 'x.npy': is encrypted");
}

TEST(NpzZip, RefusesATruncatedCentralDirectoryOrRecordsThatDisagree) {
  const std::string good = zip_of({stored("a.npy", npy_u8(3)), stored("b.npy", npy_u8(4))});
  ASSERT_EQ(parse_npz(good).size(), 2u);
  // 20 bytes cut out of the second central record; the end record still counts both.
  const size_t cd = good.size() - 22 - 2 * (46 + 5);
  const std::string cut = good.substr(0, cd + 60) + good.substr(cd + 80);
  EXPECT_EQ(reason(cut), "its zip records contradict each other (damaged or truncated?)");
  // A local header naming another file than its central record (no checksum covers names).
  std::string renamed = good;
  renamed[30] = 'c';  // the first local header's name
  EXPECT_EQ(reason(renamed), "its zip records contradict each other (damaged or truncated?)");
  // The end record alone, pointing at a central directory the file has lost.
  EXPECT_EQ(reason(good.substr(good.size() - 22)),
            "its zip records contradict each other (damaged or truncated?)");
}

}  // namespace
}  // namespace turnkey::test
