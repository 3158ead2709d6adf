// Shared by the fuzz targets of tests/fuzz (docs/reliability.md): a scratch folder per process for
// the parsers that read files, and the one rule of what a target may let escape. Each target
// defines LLVMFuzzerTestOneInput; libFuzzer drives it in the fuzz build (build-fuzz/), and
// replay_main.cpp runs the kept inputs through it in the normal build.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace turnkey::fuzz {

// $TMPDIR/turnkey-fuzz-<pid>/, made on first use and removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::filesystem::path d = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
                              ("turnkey-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return d;
  }();
  return dir;
}

// Writes `bytes` to scratch_dir()/name (replacing it) and returns the path.
inline std::filesystem::path write_scratch(const std::string& name, std::string_view bytes) {
  const std::filesystem::path p = scratch_dir() / name;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(),
                                                            static_cast<std::streamsize>(bytes.size()));
  return p;
}

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace turnkey::fuzz
