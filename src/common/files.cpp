#include "turnkey/common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "turnkey/common/error.h"

namespace turnkey {

namespace fs = std::filesystem;

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd open_regular_file(const fs::path& path, int64_t* size_bytes) {
  auto invalid = [](const std::string& reason) { return Error(ErrorKind::InvalidInput, reason); };
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) throw invalid("not found");
  if (ec) throw Error(ErrorKind::Io, fmt::format("cannot stat: {}", ec.message()));
  if (status.type() == fs::file_type::directory) throw invalid("is a directory");
  // A FIFO or device would block or never end.
  if (status.type() != fs::file_type::regular) throw invalid("not a regular file");
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw Error(ErrorKind::Io, fmt::format("cannot read: {}", strerror(errno)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    throw Error(ErrorKind::Io, fmt::format("cannot stat: {}", strerror(errno)));
  }
  *size_bytes = st.st_size;
  if (st.st_size == 0) throw invalid("empty file");
  if (st.st_size > INT_MAX) {
    throw invalid(
        fmt::format("{} bytes is above protobuf's 2 GB limit for one message "
                    "(store the weights as ONNX external data)",
                    st.st_size));
  }
  return fd;
}

void write_file_atomic(const fs::path& path, const std::string& content) {
  std::random_device rd;
  fs::path tmp = path;
  tmp += fmt::format(".tmp.{}.{:x}", getpid(), rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(ErrorKind::Io, fmt::format("{}: cannot write: {}", path.string(), strerror(errno)));
  }
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(ErrorKind::Io, fmt::format("{}: write failed: {}", path.string(), strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  // fsync so that a crash after rename never leaves an empty file behind the new name.
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::Io, fmt::format("{}: rename failed: {}", path.string(), strerror(err)));
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::Io, fmt::format("{}: cannot read: {}", path.string(), strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path expand_user(const std::string& path) {
  if (path == "~" || path.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    if (home && *home) return fs::path(home) / path.substr(path.size() > 1 ? 2 : 1);
  }
  return fs::path(path);
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.1f} {}", bytes, units[u]) : fmt::format("{:.2f} {}", bytes, units[u]);
}

}  // namespace turnkey
