#include "turnkey/discovery/staging.h"

#include "turnkey/discovery/protocol_schema.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <regex>

namespace turnkey {

namespace fs = std::filesystem;

namespace {

// A reason for people, from what the file system said about a staged path.
std::string os_reason(int err) {
  switch (err) {
    case ENOENT:
      return "missing";
    case ELOOP:
      return "a symbolic link";
    case ENOTDIR:
      return "its staging folder was replaced by a file or a link";
    default:
      return strerror(err);
  }
}

// Copies what `from` holds into a new file `name` in `dir_fd` (the fallback where the file system
// grants no lease: the copy is the core's own file, out of the sandbox's reach however the
// original is still held there).
bool copy_into(int from, int dir_fd, const std::string& name, int* err) {
  ::unlinkat(dir_fd, name.c_str(), 0);
  Fd to(::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (to.get() < 0) {
    *err = errno;
    return false;
  }
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(from, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *err = errno;
      return false;
    }
    if (n == 0) return true;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(to.get(), buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        *err = errno;
        return false;
      }
      done += w;
    }
  }
}

// "<host>-<pid namespace>-": the start of the names of the staging folders this machine's
// processes make, and "<host>-<pid namespace>-<pid>-" of those of process `pid`. A cache may be
// shared by many machines (Slurm nodes) and containers (one host name, another pid namespace),
// where a pid says nothing about the other side's processes.
std::string host_prefix() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') std::strcpy(host, "host");
  std::string name;
  for (const char* c = host; *c; ++c) {
    const bool plain = std::isalnum(static_cast<unsigned char>(*c)) || *c == '.' || *c == '-';
    name += plain ? *c : '_';
  }
  std::error_code ec;
  const std::string ns = fs::read_symlink("/proc/self/ns/pid", ec).string();  // "pid:[4026531836]"
  std::string inode;
  for (char c : ns) {
    if (std::isdigit(static_cast<unsigned char>(c))) inode += c;
  }
  return fmt::format("{}-{}-", name, inode.empty() ? "0" : inode);
}

std::string staging_prefix(pid_t pid) { return fmt::format("{}{}-", host_prefix(), pid); }

// Removes what processes of this machine that no longer exist left in `parent` (a turnkey killed
// with SIGKILL runs no clean-up). A pid in use again keeps its folders until that process ends:
// never removes what a live process may still use.
void sweep_stale(const fs::path& parent) {
  const std::string host = host_prefix();
  std::error_code ec;
  std::vector<fs::path> stale;
  for (auto it = fs::directory_iterator(parent, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(host, 0) != 0) continue;
    size_t end = host.size();
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    if (end == host.size() || end >= name.size() || name[end] != '-') continue;
    const long pid = std::strtol(name.c_str() + host.size(), nullptr, 10);
    if (pid <= 0 || pid == getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == -1 && errno == ESRCH) stale.push_back(it->path());
  }
  for (const fs::path& p : stale) fs::remove_all(p, ec);  // never follows links
}

bool is_plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

Staging::Staging(const fs::path& cache_dir) {
  const fs::path parent = fs::absolute(cache_dir) / ".staging";
  std::error_code ec;
  std::string templ;
  bool made = false;
  sweep_stale(parent);
  // Another run's remove() takes `parent` away when it was the last one in it: make it again.
  for (int tries = 0; tries < 5 && !made; ++tries) {
    fs::create_directories(parent, ec);
    templ = (parent / (staging_prefix(getpid()) + "XXXXXX")).string();
    made = !ec && ::mkdtemp(templ.data()) != nullptr;
    if (!made && !ec && errno != ENOENT) break;
  }
  if (!made) {
    throw Error(ErrorKind::Io,
                fmt::format("cannot make a staging folder in {}: {}", parent.string(),
                            ec ? ec.message() : std::string(strerror(errno))));
  }
  root_ = templ;
  held_ = root_;
  held_ += ".held";
  root_fd_ = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root_fd_ >= 0 && ::mkdir(held_.c_str(), 0700) == 0) {
    held_fd_ = ::open(held_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (held_fd_ < 0) {
    const int err = errno;
    remove();
    throw Error(ErrorKind::Io, fmt::format("cannot make the staging folder {}: {}", root_.string(),
                                           strerror(err)));
  }
}

Staging::~Staging() { remove(); }

void Staging::remove() {
  if (root_.empty()) return;
  for (int* fd : {&root_fd_, &held_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  std::error_code ec;
  fs::remove_all(root_, ec);  // removes links, never what they point at
  fs::remove_all(held_, ec);
  fs::remove(root_.parent_path(), ec);  // only when no other staging folder is left in it
  root_.clear();
}

fs::path Staging::new_folder() {
  // The sandbox can write in root(): a name it made first (even a link) is skipped.
  for (int tries = 0; tries < 1000; ++tries) {
    const std::string name = std::to_string(++counter_);
    if (::mkdirat(root_fd_, name.c_str(), 0700) == 0) return root_ / name;
    if (errno != EEXIST) {
      throw Error(ErrorKind::Io, fmt::format("cannot make a folder in the staging folder {}: {}",
                                             root_.string(), strerror(errno)));
    }
  }
  throw Error(ErrorKind::Io, fmt::format("the staging folder {} is full of names the sandbox "
                                         "made",
                                         root_.string()));
}

namespace {

// Opens the folder `rel` (relative to `root_fd`) one component at a time without following a
// link; -1 with errno set otherwise.
int open_folder(int root_fd, const fs::path& rel) {
  int fd = ::dup(root_fd);
  for (const fs::path& part : rel) {
    const std::string name = part.string();
    if (name.empty() || name == ".") continue;
    if (!is_plain_name(name)) {
      ::close(fd);
      errno = EINVAL;
      return -1;
    }
    const int next = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int err = errno;
    ::close(fd);
    if (next < 0) {
      errno = err;
      return -1;
    }
    fd = next;
  }
  return fd;
}

}  // namespace

void Staging::take(const fs::path& staged, const fs::path& dest, ErrorKind kind) const {
  auto refused = [&](const std::string& why) {
    return Error(kind,
                 fmt::format("{} from the sandbox refused: {}", dest.filename().string(), why));
  };
  const fs::path rel = staged.lexically_relative(root_);
  if (rel.empty() || *rel.begin() == ".." || !is_plain_name(rel.filename().string())) {
    throw refused("not in its staging folder");
  }
  Fd folder(open_folder(root_fd_, rel.parent_path()));
  if (folder.get() < 0) throw refused(os_reason(errno));
  const std::string name = rel.filename().string();
  // O_NOFOLLOW: a link is refused, never followed; O_NONBLOCK: a FIFO does not block the open.
  Fd file(::openat(folder.get(), name.c_str(),
                   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (file.get() < 0) throw refused(os_reason(errno));
  struct stat st {};
  if (::fstat(file.get(), &st) != 0) throw refused(strerror(errno));
  if (!S_ISREG(st.st_mode)) throw refused("not a regular file");
  if (st.st_nlink != 1) throw refused("it has other hard links");
  Fd dest_dir(::open(dest.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dest_dir.get() < 0) {
    throw Error(ErrorKind::Io, fmt::format("{}: {}", dest.parent_path().string(), strerror(errno)));
  }
  const std::string tmp = dest.filename().string() + ".staged";
  // A write lease is granted only while no other descriptor (nor mapping) of the file is open
  // anywhere, and any open while we hold it breaks it: the file leaves staging with no writer in
  // the sandbox, and we see one that tried to get in before it reached the held-back folder,
  // which the sandbox sees read-only. What the rename moved must be the file we opened (the
  // sandbox may swap names meanwhile); anything else stays held back until remove().
  if (::fcntl(file.get(), F_SETLEASE, F_WRLCK) == 0) {
    const std::string held = std::to_string(++held_counter_);
    if (::renameat(folder.get(), name.c_str(), held_fd_, held.c_str()) != 0) {
      throw refused(os_reason(errno));
    }
    struct stat moved {};
    struct stat after {};
    if (::fstatat(held_fd_, held.c_str(), &moved, AT_SYMLINK_NOFOLLOW) != 0 ||
        moved.st_dev != st.st_dev || moved.st_ino != st.st_ino) {
      throw refused("replaced while it was being taken");
    }
    if (::fstat(file.get(), &after) != 0 || after.st_nlink != 1) {
      throw refused("it has other hard links");
    }
    if (::fcntl(file.get(), F_GETLEASE) != F_WRLCK) {
      throw refused("a process in the sandbox opened it while it was being taken");
    }
    const int moved_in =
        ::renameat(held_fd_, held.c_str(), dest_dir.get(), dest.filename().c_str());
    const int err = errno;
    ::fcntl(file.get(), F_SETLEASE, F_UNLCK);
    if (moved_in == 0) return;
    if (err != EXDEV) {
      throw Error(ErrorKind::Io,
                  fmt::format("{}: rename failed: {}", dest.string(), strerror(err)));
    }
    // A build dir on another file system than the cache's root: copied below.
  } else if (errno == EAGAIN) {
    throw refused("still open in the sandbox");
  }
  // No lease on this file system: a copy of what the file holds now, which is the core's own
  // file, out of the sandbox's reach however the staged one is still held there.
  int err = 0;
  if (!copy_into(file.get(), dest_dir.get(), tmp, &err)) {
    ::unlinkat(dest_dir.get(), tmp.c_str(), 0);
    throw Error(ErrorKind::Io,
                fmt::format("{}: cannot copy from the sandbox: {}", dest.string(), strerror(err)));
  }
  if (::renameat(dest_dir.get(), tmp.c_str(), dest_dir.get(), dest.filename().c_str()) != 0) {
    err = errno;
    ::unlinkat(dest_dir.get(), tmp.c_str(), 0);
    throw Error(ErrorKind::Io, fmt::format("{}: rename failed: {}", dest.string(), strerror(err)));
  }
}

std::set<std::string> Staging::entries_of(const fs::path& folder) const {
  std::set<std::string> names;
  const int fd = open_folder(root_fd_, folder.lexically_relative(root_));
  if (fd < 0) return names;
  DIR* dir = ::fdopendir(fd);
  if (!dir) {
    ::close(fd);
    return names;
  }
  // Bounded: a folder the sandbox filled with names costs no more than this.
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.insert(name);
    if (names.size() >= 10000) break;
  }
  ::closedir(dir);
  return names;
}

void remove_staging_of(const fs::path& cache_dir, pid_t pid) {
  const fs::path parent = fs::absolute(cache_dir) / ".staging";
  const std::string prefix = staging_prefix(pid);
  std::error_code ec;
  std::vector<fs::path> found;
  for (auto it = fs::directory_iterator(parent, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (it->path().filename().string().rfind(prefix, 0) == 0) found.push_back(it->path());
  }
  for (const fs::path& p : found) fs::remove_all(p, ec);
  fs::remove(parent, ec);  // only when empty
}

Outbox::Outbox(Staging* staging) : staging_(staging) {}

// Without a Staging the paths sent are the build's own: each is its own "staged" path, so that
// take() holds the reply to the same rule (only what the core asked for) with and without a
// sandbox.
fs::path Outbox::file(const fs::path& dest) {
  const fs::path staged =
      staging_ ? staging_->new_folder() / dest.filename() : dest.lexically_normal();
  files_[staged] = dest;
  return staging_ ? staged : dest;
}

fs::path Outbox::folder(const fs::path& dest_dir) {
  // "dir/" and "dir" are one folder: a reply's file in it has the parent "dir".
  const fs::path staged =
      staging_ ? staging_->new_folder() : (dest_dir / "x").lexically_normal().parent_path();
  folders_[staged] = dest_dir;
  return staging_ ? staged : dest_dir;
}

namespace {

// Without a sandbox the Python side writes in place: what it wrote must still be a regular file
// (a link would have the core read wherever it points; a FIFO would block the core's open). A
// missing file is left to the reader, which says what it expected.
void refuse_unless_regular(const fs::path& file, ErrorKind kind) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
  throw Error(kind, fmt::format("{} refused: {}", file.filename().string(),
                                S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file"));
}

}  // namespace

fs::path Outbox::take(const std::string& replied, ErrorKind kind) {
  static const std::regex kTensorFile(
      R"((input|output|intermediate|float64_output)_[0-9]{1,6}\.pb)");
  const fs::path p = fs::path(replied).lexically_normal();
  fs::path dest;
  if (auto f = files_.find(p); f != files_.end()) {
    dest = f->second;
  } else if (auto d = folders_.find(p.parent_path());
             d != folders_.end() && std::regex_match(p.filename().string(), kTensorFile)) {
    dest = d->second / p.filename();
  } else {
    throw Error(kind, fmt::format("the {}Python side named a file turnkey did not ask for: '{}'",
                                  staging_ ? "sandboxed " : "", protocol::excerpt(replied, 200)));
  }
  if (!taken_.emplace(dest, p).second) {
    throw Error(kind, fmt::format("the {}Python side named {} twice", staging_ ? "sandboxed " : "",
                                  protocol::excerpt(p.filename().string(), 200)));
  }
  if (staging_) {
    staging_->take(p, dest, kind);
  } else {
    refuse_unless_regular(dest, kind);
  }
  return dest;
}

std::set<std::string> Outbox::left_beside(const fs::path& dest) const {
  auto t = staging_ ? taken_.find(dest) : taken_.end();
  if (t == taken_.end()) return {};
  std::set<std::string> names = staging_->entries_of(t->second.parent_path());
  names.erase(t->second.filename().string());
  return names;
}

fs::path Outbox::take_beside(const fs::path& dest, const std::string& name, ErrorKind kind) {
  auto t = staging_ ? taken_.find(dest) : taken_.end();
  if (t == taken_.end() && is_plain_name(name)) {
    refuse_unless_regular(dest.parent_path() / name, kind);
    return dest.parent_path() / name;
  }
  if (!is_plain_name(name)) {
    throw Error(kind, fmt::format("{}{} refused: it names the external data file '{}', which is "
                                  "not a plain file name",
                                  dest.filename().string(), staging_ ? " from the sandbox" : "",
                                  protocol::excerpt(name, 200)));
  }
  const fs::path target = dest.parent_path() / name;
  if (!taken_.emplace(target, t->second.parent_path() / name).second) return target;
  staging_->take(t->second.parent_path() / name, target, kind);
  return target;
}

}  // namespace turnkey
