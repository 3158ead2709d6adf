// Child processes: spawn with extra inherited descriptors, wait, and a capture-with-timeout for
// short probes (never hangs). Not thread-safe with respect to fork in multithreaded callers that
// hold locks; turnkey forks only from its main thread.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace turnkey {

struct SpawnOptions {
  std::vector<std::pair<std::string, std::string>> env;  // set (or override) in the child
  std::vector<int> inherit_fds;  // descriptors the child keeps (their CLOEXEC flag is cleared)
  bool die_with_parent = false;  // SIGKILL the child when turnkey dies (PR_SET_PDEATHSIG)
};

// Throws Error(Io) when fork fails; exec failure shows as exit code 127 of the child.
pid_t spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// "exited with code 3", "killed by signal 9 (Killed)".
std::string describe_wait_status(int status);

struct CaptureResult {
  bool timed_out = false;
  int status = 0;    // raw wait status
  std::string out;   // stdout and stderr interleaved
};
// Runs argv with stdin from /dev/null, killing its process group after timeout_s.
CaptureResult run_capture(const std::vector<std::string>& argv, double timeout_s);

// First executable named `name` on PATH, or "" (no shell involved).
std::string find_on_path(const std::string& name);

}  // namespace turnkey
