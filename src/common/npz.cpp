// .npy and .npz readers (npz.h). Every length and offset read from the file is checked against
// the bytes actually there before it is used: the input may be truncated, damaged or hostile.
#include "turnkey/common/npz.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "turnkey/common/error.h"
#include "turnkey/common/files.h"

namespace turnkey {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad(const std::string& reason) { throw Error(ErrorKind::InvalidInput, reason); }

uint64_t le(std::string_view b, size_t at, size_t n) {
  if (at > b.size() || n > b.size() - at) bad("truncated");
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<unsigned char>(b[at + i])} << (8 * i);
  return v;
}

// ---- .npy header: {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), } -------------------

struct NpyHeader {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
};

// A tiny reader of the dict literal numpy writes (keys and string values in single or double
// quotes, True/False, a tuple of non-negative integers).
class HeaderReader {
 public:
  explicit HeaderReader(std::string_view text) : t_(text) {}

  NpyHeader read() {
    NpyHeader h;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = quoted();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (peek() == '[') bad("structured dtypes are not supported (descr is a list)");
        h.descr = quoted();
        has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran = boolean();
        has_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        has_shape = true;
      } else {
        bad(fmt::format("unknown header key '{}'", key));
      }
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_space();
      if (peek() != '}') bad("header is not a dict literal");
    }
    ++i_;
    skip_space();
    if (i_ != t_.size()) bad("text after the header dict");
    if (!has_descr || !has_order || !has_shape) {
      bad("header lacks descr, fortran_order or shape");
    }
    return h;
  }

 private:
  char peek() const {
    if (i_ >= t_.size()) bad("header ends early");
    return t_[i_];
  }
  void skip_space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t')) ++i_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(fmt::format("header: expected '{}'", c));
    ++i_;
  }
  std::string quoted() {
    skip_space();
    const char q = peek();
    if (q != '\'' && q != '"') bad("header: expected a quoted string");
    const size_t end = t_.find(q, i_ + 1);
    if (end == std::string_view::npos) bad("header: unterminated string");
    std::string s(t_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return s;
  }
  bool boolean() {
    if (t_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (t_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    bad("header: fortran_order is not True or False");
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') bad("header: shape holds something other than integers");
      int64_t v = 0;
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') {
        if (v > (int64_t{1} << 50)) bad("header: a dim of the shape is too large");
        v = v * 10 + (t_[i_++] - '0');
      }
      if (i_ < t_.size() && t_[i_] == 'L') ++i_;  // Python 2's long literals
      dims.push_back(v);
      if (dims.size() > 64) bad("header: shape has more than 64 dims");
      skip_space();
      if (peek() == ',') ++i_;
    }
    ++i_;
    return dims;
  }

  std::string_view t_;
  size_t i_ = 0;
};

struct NpyType {
  DType dtype = DType::Unknown;
  bool big_endian = false;
  size_t item = 0;  // bytes per element
  char text = 0;    // 'U' (UTF-32 code points) or 'S' (bytes): fixed-width strings
};

// '<f4' -> Float32, '<U5' -> strings of up to 5 code points. NumPy has no bfloat16: '<V2' (what a
// 2-byte extension type such as ml_dtypes' bfloat16 saves as) reads as its uint16 bits.
NpyType dtype_of(const std::string& descr) {
  if (descr.size() < 2) bad(fmt::format("dtype '{}' is not one turnkey reads", descr));
  const char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    bad(fmt::format("dtype '{}' is not one turnkey reads", descr));
  }
  const std::string kind = descr.substr(1);
  static const std::pair<const char*, DType> kKinds[] = {
      {"f2", DType::Float16}, {"f4", DType::Float32}, {"f8", DType::Float64}, {"i1", DType::Int8},
      {"i2", DType::Int16},   {"i4", DType::Int32},   {"i8", DType::Int64},   {"u1", DType::Uint8},
      {"b1", DType::Bool},    {"u2", DType::Uint16},  {"u4", DType::Uint32},  {"u8", DType::Uint64},
      {"V2", DType::Uint16}};
  for (const auto& [k, d] : kKinds) {
    if (kind == k) return {d, order == '>', dtype_size_bytes(d), 0};
  }
  if ((kind[0] == 'U' || kind[0] == 'S') && kind.size() > 1 &&
      kind.find_first_not_of("0123456789", 1) == std::string::npos && kind.size() < 10) {
    const size_t width = std::stoul(kind.substr(1));
    // NumPy gives no array a zero width ('<U0' becomes '<U1'): such cells hold no bytes, so their
    // count would be bounded by nothing but the shape (a hang and an exhausted memory).
    if (width == 0) bad(fmt::format("dtype '{}' has no width", descr));
    return {DType::String, order == '>', width * (kind[0] == 'U' ? 4 : 1), kind[0]};
  }
  static const std::pair<const char*, const char*> kNamed[] = {
      {"f16", "float128"}, {"c8", "complex64"}, {"c16", "complex128"}, {"O", "object"}};
  for (const auto& [k, name] : kNamed) {
    if (kind == k) bad(fmt::format("dtype {} is not one turnkey feeds to models", name));
  }
  bad(fmt::format("dtype '{}' is not one turnkey reads", descr));
}

// Fixed-width NumPy strings as UTF-8, without the NULs that pad them.
std::vector<std::string> strings_of(std::string_view bytes, const NpyType& type, uint64_t count) {
  std::vector<std::string> out;
  for (uint64_t i = 0; i < count; ++i) {
    std::string_view cell = bytes.substr(static_cast<size_t>(i) * type.item, type.item);
    std::string s;
    if (type.text == 'S') {
      s.assign(cell.substr(0, cell.find('\0')));
    } else {
      for (size_t k = 0; k + 4 <= cell.size(); k += 4) {
        uint32_t c = 0;
        for (size_t j = 0; j < 4; ++j) {
          const auto byte = static_cast<uint32_t>(static_cast<unsigned char>(cell[k + j]));
          c |= byte << (8 * (type.big_endian ? 3 - j : j));
        }
        if (c == 0) break;
        if (c > 0x10ffff || (c >= 0xd800 && c < 0xe000)) bad("a string holds no Unicode scalar");
        if (c < 0x80) {
          s += static_cast<char>(c);
        } else if (c < 0x800) {
          s += static_cast<char>(0xc0 | (c >> 6));
          s += static_cast<char>(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
          s += static_cast<char>(0xe0 | (c >> 12));
          s += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
          s += static_cast<char>(0x80 | (c & 0x3f));
        } else {
          s += static_cast<char>(0xf0 | (c >> 18));
          s += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
          s += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
          s += static_cast<char>(0x80 | (c & 0x3f));
        }
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

// Element byte offsets of a Fortran-order array, visited in C order.
void fortran_to_c(std::vector<std::byte>& data, const std::vector<int64_t>& shape, size_t item) {
  const size_t rank = shape.size();
  if (rank < 2) return;
  std::vector<int64_t> fstride(rank, 1);
  for (size_t k = 1; k < rank; ++k) fstride[k] = fstride[k - 1] * shape[k - 1];
  std::vector<std::byte> out(data.size());
  std::vector<int64_t> index(rank, 0);
  const size_t count = data.size() / item;
  for (size_t c = 0; c < count; ++c) {
    int64_t f = 0;
    for (size_t k = 0; k < rank; ++k) f += index[k] * fstride[k];
    std::memcpy(out.data() + c * item, data.data() + static_cast<size_t>(f) * item, item);
    for (size_t k = rank; k-- > 0;) {  // next C-order index
      if (++index[k] < shape[k]) break;
      index[k] = 0;
    }
  }
  data = std::move(out);
}

// ---- zip -----------------------------------------------------------------------------------

struct Member {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, size = 0, local_offset = 0;
};

constexpr uint32_t kEocd = 0x06054b50, kZip64Eocd = 0x06064b50, kZip64Locator = 0x07064b50,
                   kCentral = 0x02014b50, kLocal = 0x04034b50;

size_t find_eocd(std::string_view b) {
  if (b.size() < 22) bad("not a zip archive (too short for its end record)");
  // The record is 22 bytes plus a comment of at most 65535.
  const size_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  for (size_t at = b.size() - 22 + 1; at-- > lowest;) {
    if (le(b, at, 4) == kEocd && at + 22 + le(b, at + 20, 2) == b.size()) return at;
  }
  bad("not a zip archive (no end-of-central-directory record)");
}

std::vector<Member> central_directory(std::string_view b) {
  const size_t eocd = find_eocd(b);
  if (le(b, eocd + 4, 2) != 0 || le(b, eocd + 6, 2) != 0)
    bad("multi-disk zip archives are not read");
  uint64_t entries = le(b, eocd + 10, 2), cd_size = le(b, eocd + 12, 4),
           cd_offset = le(b, eocd + 16, 4);
  if (entries == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    if (eocd < 20 || le(b, eocd - 20, 4) != kZip64Locator) {
      bad("zip64 archive without its zip64 locator");
    }
    const uint64_t z = le(b, eocd - 20 + 8, 8);
    if (z > b.size() || le(b, static_cast<size_t>(z), 4) != kZip64Eocd) {
      bad("zip64 end record is not where its locator says");
    }
    entries = le(b, static_cast<size_t>(z) + 32, 8);
    cd_size = le(b, static_cast<size_t>(z) + 40, 8);
    cd_offset = le(b, static_cast<size_t>(z) + 48, 8);
  }
  if (cd_offset > b.size() || cd_size > b.size() - cd_offset) {
    bad("central directory lies past the end of the file (truncated?)");
  }
  if (entries > cd_size / 46) bad("central directory holds fewer records than it counts");
  std::vector<Member> members;
  size_t at = static_cast<size_t>(cd_offset);
  const size_t end = static_cast<size_t>(cd_offset + cd_size);
  for (uint64_t i = 0; i < entries; ++i) {
    if (at + 46 > end || le(b, at, 4) != kCentral) bad("damaged central directory record");
    Member m;
    m.flags = static_cast<uint16_t>(le(b, at + 8, 2));
    m.method = static_cast<uint16_t>(le(b, at + 10, 2));
    m.crc = static_cast<uint32_t>(le(b, at + 16, 4));
    m.compressed = le(b, at + 20, 4);
    m.size = le(b, at + 24, 4);
    const size_t name_len = le(b, at + 28, 2), extra_len = le(b, at + 30, 2),
                 comment_len = le(b, at + 32, 2);
    m.local_offset = le(b, at + 42, 4);
    if (at + 46 + name_len + extra_len + comment_len > end) bad("damaged central directory record");
    m.name = std::string(b.substr(at + 46, name_len));
    // Zip64 extra field: the 8-byte values whose 4-byte fields are 0xFFFFFFFF, in this order.
    size_t x = at + 46 + name_len;
    const size_t x_end = x + extra_len;
    while (x + 4 <= x_end) {
      const uint64_t id = le(b, x, 2), len = le(b, x + 2, 2);
      if (x + 4 + len > x_end) bad("damaged extra field in the central directory");
      if (id == 0x0001) {
        size_t p = x + 4;
        auto take = [&](uint64_t& field) {
          if (field != 0xFFFFFFFF) return;
          if (p + 8 > x + 4 + len) bad("damaged zip64 extra field");
          field = le(b, p, 8);
          p += 8;
        };
        take(m.size);
        take(m.compressed);
        take(m.local_offset);
      }
      x += 4 + len;
    }
    at += 46 + name_len + extra_len + comment_len;
    members.push_back(std::move(m));
  }
  return members;
}

std::string inflate_member(std::string_view in, uint64_t size) {
  if (size > static_cast<uint64_t>(kMaxNpyBytes)) bad("inflates to more than 4 GiB");
  // Deflate expands at most ~1032:1: a larger recorded size is a lie (no allocation for it).
  if (size > in.size() * 1032 + 1024) bad("recorded size is impossible for its compressed size");
  std::string out(static_cast<size_t>(size), '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) bad("zlib could not start inflating");
  // zlib takes 32-bit lengths: feed and drain in chunks.
  size_t in_done = 0, out_done = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    const size_t in_chunk = std::min<size_t>(in.size() - in_done, 1u << 30);
    const size_t out_chunk = std::min<size_t>(out.size() - out_done, 1u << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_done));
    z.avail_in = static_cast<uInt>(in_chunk);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + out_done);
    z.avail_out = static_cast<uInt>(out_chunk);
    rc = inflate(&z, Z_NO_FLUSH);
    in_done += in_chunk - z.avail_in;
    out_done += out_chunk - z.avail_out;
    if (rc == Z_OK && z.avail_in == in_chunk && z.avail_out == out_chunk) break;  // no progress
    if (rc == Z_BUF_ERROR) break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) bad("damaged deflate data");
  if (out_done != out.size()) bad("inflated size differs from the recorded size");
  return out;
}

}  // namespace

HostTensor parse_npy(std::string_view b, const std::string& name) {
  if (b.size() < 10 || b.substr(0, 6) != std::string_view("\x93NUMPY", 6)) {
    bad("not an .npy array (no \\x93NUMPY magic)");
  }
  const int major = static_cast<unsigned char>(b[6]);
  if (major < 1 || major > 3)
    bad(fmt::format(".npy format version {} is not one turnkey reads", major));
  const size_t len_bytes = major == 1 ? 2 : 4;
  const uint64_t header_len = le(b, 8, len_bytes);
  const size_t data_at = 8 + len_bytes + static_cast<size_t>(header_len);
  if (header_len > b.size() || data_at > b.size())
    bad(".npy header runs past the end (truncated?)");
  const NpyHeader h = HeaderReader(b.substr(8 + len_bytes, static_cast<size_t>(header_len))).read();
  const NpyType type = dtype_of(h.descr);
  const DType dtype = type.dtype;
  const size_t item = type.item;
  uint64_t count = 1;
  for (int64_t d : h.shape) {
    if (d != 0 && count > static_cast<uint64_t>(kMaxNpyBytes) / static_cast<uint64_t>(d)) {
      bad("array is larger than 4 GiB");
    }
    count *= static_cast<uint64_t>(d);
  }
  if (count * item > static_cast<uint64_t>(kMaxNpyBytes)) bad("array is larger than 4 GiB");
  const uint64_t want = count * item, have = b.size() - data_at;
  if (have != want) {
    bad(fmt::format("holds {} data bytes where its shape ({}) and dtype ({}) need {}", have,
                    shape_to_string(h.shape), dtype_name(dtype), want));
  }
  HostTensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = h.shape;
  if (dtype == DType::String) {
    t.strings = strings_of(b.substr(data_at), type, count);
    if (h.fortran) bad("Fortran-order string arrays are not supported");
    return t;
  }
  t.data.resize(static_cast<size_t>(want));
  if (want) std::memcpy(t.data.data(), b.data() + data_at, static_cast<size_t>(want));
  if (type.big_endian && item > 1) {
    for (size_t i = 0; i < t.data.size(); i += item) std::reverse(&t.data[i], &t.data[i] + item);
  }
  if (dtype == DType::Bool) {
    for (std::byte& v : t.data) {
      if (v != std::byte{0} && v != std::byte{1}) bad("a bool element is neither 0 nor 1");
    }
  }
  if (h.fortran) fortran_to_c(t.data, t.shape, item);
  return t;
}

std::vector<HostTensor> parse_npz(std::string_view b) {
  std::vector<HostTensor> out;
  std::set<std::string> names;
  for (const Member& m : central_directory(b)) {
    const std::string where = fmt::format("member '{}'", m.name);
    try {
      if (m.name.size() < 5 || m.name.compare(m.name.size() - 4, 4, ".npy") != 0) {
        bad("is not an .npy array (an .npz holds name.npy members)");
      }
      if (m.flags & 0x1) bad("is encrypted");
      if (m.local_offset > b.size() || le(b, static_cast<size_t>(m.local_offset), 4) != kLocal) {
        bad("its local header is not where the central directory says");
      }
      const size_t local = static_cast<size_t>(m.local_offset);
      const size_t local_name = le(b, local + 26, 2);
      // The name is in both records (and in no checksum): a difference is damage.
      if (local + 30 + local_name > b.size() || b.substr(local + 30, local_name) != m.name) {
        bad("its local header names another file");
      }
      const uint64_t data_at = local + 30 + local_name + le(b, local + 28, 2);
      if (data_at > b.size() || m.compressed > b.size() - data_at) {
        bad("its data runs past the end of the file (truncated?)");
      }
      const std::string_view raw =
          b.substr(static_cast<size_t>(data_at), static_cast<size_t>(m.compressed));
      std::string inflated;
      std::string_view bytes;
      if (m.method == 0) {
        if (m.compressed != m.size) bad("stored member whose sizes differ");
        bytes = raw;
      } else if (m.method == 8) {
        inflated = inflate_member(raw, m.size);
        bytes = inflated;
      } else {
        bad(fmt::format("compression method {} is not stored (0) or deflate (8)", m.method));
      }
      uLong crc = crc32(0L, Z_NULL, 0);
      for (size_t done = 0; done < bytes.size();) {
        const size_t chunk = std::min<size_t>(bytes.size() - done, 1u << 30);
        crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + done),
                    static_cast<uInt>(chunk));
        done += chunk;
      }
      if (static_cast<uint32_t>(crc) != m.crc) bad("CRC-32 mismatch (damaged data)");
      const std::string name = m.name.substr(0, m.name.size() - 4);
      if (!names.insert(name).second) bad("appears twice");
      out.push_back(parse_npy(bytes, name));
    } catch (const Error& e) {
      throw Error(ErrorKind::InvalidInput, where + ": " + e.what());
    }
  }
  if (out.empty()) bad("the archive holds no arrays");
  return out;
}

std::vector<HostTensor> read_npz(const fs::path& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) bad("not found");
  if (fs::is_directory(status)) bad("is a directory");
  if (!fs::is_regular_file(status)) bad("not a regular file");
  // Checked before reading: the file is read whole, and its arrays may not hold more anyway.
  const uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > static_cast<uintmax_t>(kMaxNpyBytes)) {
    bad(fmt::format("{} bytes is more than the 4 GiB turnkey reads as input data", size));
  }
  std::string bytes;
  try {
    bytes = read_file(path);
  } catch (const Error& e) {
    bad(first_line(e.what()));
  }
  if (bytes.empty()) bad("empty file");
  return parse_npz(bytes);
}

}  // namespace turnkey
