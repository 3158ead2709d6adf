#include "turnkey/discovery/sandbox.h"

#include <unistd.h>

#include <fmt/format.h>

#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/process.h"

namespace turnkey {

namespace fs = std::filesystem;

bool sandbox_requested(bool flag) { return flag || env_bool("TURNKEY_SANDBOX", false); }

fs::path bwrap_run_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& candidate :
         {exe.parent_path() / "bwrap-run",
          exe.parent_path().parent_path() / "libexec" / "turnkey" / "bwrap-run"}) {
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return fs::path(TURNKEY_SOURCE_SCRIPTS_DIR) / "bwrap-run";
}

void check_sandbox(const std::vector<std::string>& allow) {
  if (find_on_path("bwrap").empty()) {
    throw Error(ErrorKind::InvalidInput,
                "--sandbox needs bubblewrap (bwrap) on PATH: install the Debian package "
                "bubblewrap (scripts/setup does)");
  }
  const fs::path helper = bwrap_run_path();
  if (access(helper.c_str(), X_OK) != 0) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("--sandbox: its helper {} is missing or not executable (rebuild "
                            "turnkey)",
                            helper.string()));
  }
  for (const std::string& path : allow) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("--sandbox-allow {}: no such file or folder", path));
    }
  }
}

std::vector<std::string> sandbox_command(const std::vector<fs::path>& writable,
                                         const fs::path& start_dir) {
  std::vector<std::string> argv = {bwrap_run_path().string(), "/", "--sandbox"};
  for (const fs::path& p : writable) {
    argv.push_back("--bind");
    argv.push_back(fs::absolute(p).string());
  }
  argv.push_back("--chdir");
  argv.push_back(start_dir.string());
  argv.push_back("--");
  return argv;
}

}  // namespace turnkey
