// .npy and .npz readers (npz.h); the input may be truncated, damaged or hostile. The .npy reader
// checks every length and offset against the bytes there before using it; libzip reads the .npz
// container, and turnkey bounds what it may inflate (docs/reliability.md, the ZIP container).
#include "turnkey/common/npz.h"

#include <fmt/format.h>
#include <zip.h>

#include <algorithm>
#include <cstring>
#include <memory>

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

// ---- zip: libzip reads the container, turnkey bounds what it inflates ----------------------

using Archive = std::unique_ptr<zip_t, decltype(&zip_discard)>;
using ZipFile = std::unique_ptr<zip_file_t, decltype(&zip_fclose)>;

// libzip's error as one line in turnkey's words (the codes a damaged or hostile archive gives).
[[noreturn]] void bad_zip(int code, const std::string& libzip_text) {
  switch (code) {
    case ZIP_ER_NOZIP:
      bad("not a zip archive (no end-of-central-directory record)");
    case ZIP_ER_MULTIDISK:
      bad("multi-disk zip archives are not read");
    case ZIP_ER_EXISTS:  // ZIP_CHECKCONS: libzip refuses a name given twice as it opens
      bad("two members have the same name");
    case ZIP_ER_INCONS:
      bad("its zip records contradict each other (damaged or truncated?)");
    case ZIP_ER_CRC:
      bad("CRC-32 mismatch (damaged data)");
    case ZIP_ER_COMPRESSED_DATA:
    case ZIP_ER_ZLIB:
      bad("damaged deflate data");
    case ZIP_ER_EOF:
    case ZIP_ER_READ:
    case ZIP_ER_SEEK:
      bad("a record or its data runs past the end of the file (truncated?)");
    case ZIP_ER_ENCRNOTSUPP:
    case ZIP_ER_NOPASSWD:
      bad("is encrypted");
    default:
      bad(fmt::format("zip archive: {}", first_line(libzip_text)));
  }
}
[[noreturn]] void bad_zip(zip_error_t* error) {
  bad_zip(zip_error_code_zip(error), zip_error_strerror(error));
}

// The archive over the bytes in memory (no copy). ZIP_CHECKCONS makes libzip compare every local
// header with its central record (name, method, sizes, CRC): a name in both and in no checksum.
Archive open_archive(std::string_view b) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = zip_source_buffer_create(b.data(), b.size(), 0, &error);
  zip_t* archive = src ? zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error) : nullptr;
  if (!archive && src) zip_source_free(src);  // on success the archive owns the source
  const int code = zip_error_code_zip(&error);
  const std::string text = archive ? "" : zip_error_strerror(&error);
  zip_error_fini(&error);
  if (!archive) bad_zip(code, text);
  return Archive(archive, zip_discard);
}

// What a member's records declare, checked before a byte of it is inflated: the bounds hold
// against the records, and read_member holds them again against what inflating gives.
void check_declared(const zip_stat_t& st, uint64_t& total) {
  if (st.encryption_method != ZIP_EM_NONE) bad("is encrypted");
  if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE) {
    bad(fmt::format("compression method {} is not stored (0) or deflate (8)", st.comp_method));
  }
  if (st.comp_method == ZIP_CM_STORE && st.comp_size != st.size) {
    bad("stored member whose sizes differ");
  }
  if (st.size > static_cast<uint64_t>(kMaxNpyBytes)) bad("inflates to more than 4 GiB");
  // Deflate expands at most ~1032:1: a larger recorded size is a lie (min: no overflow).
  if (st.size > std::min<uint64_t>(st.comp_size, kMaxNpyBytes) * 1032 + 1024) {
    bad("recorded size is impossible for its compressed size");
  }
  if (st.size > static_cast<uint64_t>(kMaxNpzBytes) - total) {
    bad("the archive's arrays inflate to more than 4 GiB in all");
  }
  total += st.size;
}

// The member's bytes, read in chunks and never past its recorded size (a zip bomb stops there),
// memory growing with what inflating actually gives rather than with what the record claims.
std::string read_member(zip_t* archive, uint64_t index, uint64_t size) {
  ZipFile file(zip_fopen_index(archive, index, 0), zip_fclose);
  if (!file) bad_zip(zip_get_error(archive));
  std::string out;
  out.reserve(static_cast<size_t>(std::min<uint64_t>(size + 1, 1u << 24)));
  size_t done = 0;
  while (true) {
    // One byte past the recorded size tells a member that inflates to more.
    const uint64_t want = std::min<uint64_t>(size - done + 1, 1u << 20);
    out.resize(done + static_cast<size_t>(want));
    const zip_int64_t n = zip_fread(file.get(), out.data() + done, want);
    if (n < 0) bad_zip(zip_file_get_error(file.get()));
    if (n == 0) break;
    done += static_cast<size_t>(n);
    if (done > size) bad("inflates past its recorded size");
  }
  out.resize(done);
  if (out.size() != size) bad("inflated size differs from the recorded size");
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
  const Archive archive = open_archive(b);
  const zip_int64_t entries = zip_get_num_entries(archive.get(), 0);
  if (entries < 0) bad_zip(zip_get_error(archive.get()));
  if (static_cast<uint64_t>(entries) > kMaxNpzMembers) {
    bad(fmt::format("the archive holds {} members, more than the {} turnkey reads", entries,
                    kMaxNpzMembers));
  }
  // Every member's records first, so the bounds refuse an archive before anything is inflated.
  std::vector<zip_stat_t> members(static_cast<size_t>(entries));
  uint64_t total = 0;  // bytes the members declare, together
  for (zip_uint64_t i = 0; i < members.size(); ++i) {
    zip_stat_t& st = members[i];
    zip_stat_init(&st);
    // ENC_RAW: the name's bytes as recorded (no guess at CP437 turning them into others).
    if (zip_stat_index(archive.get(), i, ZIP_FL_ENC_RAW, &st) != 0) {
      bad_zip(zip_get_error(archive.get()));
    }
    const std::string member = st.name;
    try {
      if (member.size() < 5 || member.compare(member.size() - 4, 4, ".npy") != 0) {
        bad("is not an .npy array (an .npz holds name.npy members)");
      }
      check_declared(st, total);
    } catch (const Error& e) {
      throw Error(ErrorKind::InvalidInput, fmt::format("member '{}': {}", member, e.what()));
    }
  }
  std::vector<HostTensor> out;
  for (zip_uint64_t i = 0; i < members.size(); ++i) {
    const std::string member = members[i].name;
    try {
      const std::string bytes = read_member(archive.get(), i, members[i].size);
      out.push_back(parse_npy(bytes, member.substr(0, member.size() - 4)));
    } catch (const Error& e) {
      throw Error(ErrorKind::InvalidInput, fmt::format("member '{}': {}", member, e.what()));
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
