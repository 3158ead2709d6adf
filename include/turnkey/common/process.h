// Child processes: one spawn function (with extra inherited descriptors, limits and sessions),
// wait-status wording, and a capture-with-timeout for short probes (never hangs). The child
// side of spawn_process is async-signal-safe, so any thread may call it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace turnkey {

// How to start a child: everything is prepared before fork, so the child runs only
// async-signal-safe calls (dup2, fcntl, setsid, prctl, open/write, setrlimit) until execve.
struct SpawnOptions {
  std::vector<std::pair<std::string, std::string>> env;  // set (or override) in the child
  std::vector<int> inherit_fds;  // descriptors the child keeps (their CLOEXEC flag is cleared)
  bool die_with_parent = false;  // SIGKILL the child when turnkey dies (PR_SET_PDEATHSIG)
  bool stdin_null = false;       // stdin from /dev/null
  int output_fd = -1;            // when >= 0, the child's stdout and stderr
  bool new_session = false;      // setsid(): its own session and process group
  bool new_process_group = false;  // setpgid(0, 0) (implied by new_session)
  std::string cgroup_procs_file;   // when set, the child writes its pid there first
  int64_t data_limit_bytes = 0;    // when > 0, RLIMIT_DATA of the child
};

// The one way turnkey starts a process. argv[0] without a '/' is looked up on PATH (before the
// fork). Throws Error(Io) when fork fails; exec failure shows as exit code 127 of the child,
// a parent that died before PR_SET_PDEATHSIG took effect as 125.
pid_t spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// "exited with code 3", "killed by signal 9 (Killed)".
std::string describe_wait_status(int status);

struct CaptureResult {
  bool timed_out = false;
  int status = 0;    // raw wait status
  std::string out;   // stdout and stderr interleaved
};
// Runs argv with stdin from /dev/null, killing its process group after timeout_s. `env` is set
// (or overridden) in the child.
CaptureResult run_capture(const std::vector<std::string>& argv, double timeout_s,
                          const std::vector<std::pair<std::string, std::string>>& env = {});

// The process, among `ancestor` and its descendants (a few levels, as a sandbox's helper, bwrap
// and its init stand between turnkey and the Python side), whose process id in its innermost
// namespace is `ns_pid` while it lies in a namespace of its own; -1 when none is found. Reads
// /proc/PID/task/PID/children and NSpid.
pid_t find_namespaced_descendant(pid_t ancestor, pid_t ns_pid);

// First executable named `name` on PATH, or "" (no shell involved).
std::string find_on_path(const std::string& name);

}  // namespace turnkey
