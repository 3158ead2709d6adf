// Shared by the fuzz targets of tests/fuzz (docs/reliability.md): a scratch folder per process for
// the parsers that read files, and the one rule of what a target may let escape. Each target
// defines LLVMFuzzerTestOneInput; libFuzzer drives it in the fuzz build (build-fuzz/), and
// replay_main.cpp runs the kept inputs through it in the normal build.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace turnkey::fuzz {

// <base>/turnkey-fuzz-<pid>/, made on first use and removed at exit. <base> is /dev/shm when it
// is a writable folder (memory: a file written per execution costs a few system calls there, on a
// disk file system it cost a third of an execution: journal, truncate, write-back), else $TMPDIR
// or /tmp. TURNKEY_FUZZ_SCRATCH, when set, names <base>.
// The path is never destroyed: the exit handler that removes the folder runs after the
// destructors of statics made later, and a destroyed path removed nothing (the folders stayed).
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path& dir = *[] {
    std::filesystem::path base = "/tmp";
    if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp) base = tmp;
    if (::access("/dev/shm", W_OK | X_OK) == 0) base = "/dev/shm";
    if (const char* s = std::getenv("TURNKEY_FUZZ_SCRATCH"); s && *s) base = s;
    auto* d = new std::filesystem::path(base / ("turnkey-fuzz-" + std::to_string(::getpid())));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return d;
  }();
  return dir;
}

// Writes `bytes` to scratch_dir()/name (replacing it) and returns the path: open, write, close (the
// folder is made only when the open finds it missing: this runs once per execution).
inline std::filesystem::path write_scratch(const std::string& name, std::string_view bytes) {
  const std::filesystem::path p = scratch_dir() / name;
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ENOENT) {
    std::filesystem::create_directories(p.parent_path());
    fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  if (fd < 0) __builtin_trap();  // the harness's own folder: not a finding of the parser
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) __builtin_trap();
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return p;
}

// A descriptor reading `bytes` from their start, as a file on disk would: one memory file made at
// start-up, rewritten per call; each call returns a new descriptor of it (the caller closes it).
inline int memory_file(std::string_view bytes) {
  static const int fd = ::memfd_create("turnkey-fuzz", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) __builtin_trap();
  if (!bytes.empty() &&
      ::pwrite(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
    __builtin_trap();
  }
  ::lseek(fd, 0, SEEK_SET);
  return ::dup(fd);  // shares the offset: read from 0, rewound by the next call
}

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace turnkey::fuzz
