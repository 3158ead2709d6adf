// File helpers. write_file_atomic writes a temp file beside the target and renames it over the
// target, so readers see the old or the new content, never a partial one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

namespace turnkey {

// Owns a file descriptor; closes it on every exit path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opens a model file for reading after the checks every reader wants (exists, not a directory,
// FIFO or device, not empty, within protobuf's 2 GB for one message); sets its size. Throws
// Error(InvalidInput) with a bare reason ("not found", "empty file") for what the file is, and
// Error(Io) for what the OS refused.
Fd open_regular_file(const std::filesystem::path& path, int64_t* size_bytes);

// Throws Error(Io) naming the path and the OS reason.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);
std::string read_file(const std::filesystem::path& path);

// "~/x" -> "$HOME/x"; other paths unchanged.
std::filesystem::path expand_user(const std::string& path);

// Human size as the reference documents print it: "240.0 B", "1.99 KB", "44.59 MB".
std::string format_bytes(double bytes);

}  // namespace turnkey
