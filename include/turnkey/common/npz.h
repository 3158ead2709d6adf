// NumPy's .npy and .npz files read into host tensors (--input-data, docs/measurement.md). An .npz
// is a zip archive of .npy members, as numpy.savez (stored) and numpy.savez_compressed (deflated,
// zlib) write it, zip64 records included (libzip reads the container). An .npy holds a format
// version (1 to 3), a header (a Python dict literal: descr, fortran_order, shape) and the
// elements. Pure functions of the bytes given; thread-safe.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "turnkey/common/tensor.h"

namespace turnkey {

// Largest array (and largest inflated member) read: 4 GiB, the largest input turnkey generates.
inline constexpr int64_t kMaxNpyBytes = int64_t{4} << 30;
// Bounds of an .npz: its members, and the bytes all of them inflate to together (both refused
// from the zip records before anything is inflated, and again while inflating).
inline constexpr uint64_t kMaxNpzMembers = 65535;
inline constexpr int64_t kMaxNpzBytes = int64_t{4} << 30;

// One .npy file's bytes as a tensor named `name`. Element types: float16/32/64, int8/16/32/64,
// uint8/16/32/64, bool, fixed-width strings ('U' as UTF-8, 'S' as bytes, without their NUL
// padding) and 2-byte void ('V2', read as uint16: what bfloat16 saves as), either byte order;
// Fortran-order arrays are reordered to C order. Throws Error(InvalidInput) with a one-line reason
// (no file name) for anything else: a bad magic, a header that is not the dict numpy writes, an
// object or structured dtype, a type turnkey has no DType for ("complex64"), or data shorter or
// longer than the shape says.
HostTensor parse_npy(std::string_view bytes, const std::string& name);

// Every .npy member of an .npz archive's bytes, in archive order, each named after its member
// without ".npy" ("x.npy" -> "x"). Throws Error(InvalidInput) with a one-line reason for a damaged
// or unsupported archive (no end-of-central-directory record, a record past the end, encryption,
// a compression method other than stored or deflate, a CRC mismatch, a member that is not .npy,
// a name given twice, more members or inflated bytes than the bounds above, a member inflating
// past its recorded size) or a bad member ("member 'x.npy': ...").
std::vector<HostTensor> parse_npz(std::string_view bytes);

// parse_npz of a file's contents. Throws as parse_npz, and Error(InvalidInput) when the file
// cannot be read ("not found", "is a directory"); no path in the message (the caller names it).
std::vector<HostTensor> read_npz(const std::filesystem::path& path);

}  // namespace turnkey
