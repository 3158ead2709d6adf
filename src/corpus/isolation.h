// Internal to the engine: one supervised worker process (docs/corpus_runs.md). The worker runs
// in its own session and process group, in a pids cgroup when the machine lets us make one,
// with RLIMIT_DATA at the memory limit; a watchdog polled by the owner enforces the timeout, the
// resident anonymous memory of all its processes, and the process count. Ending it kills every
// process it started (session, cgroup, and escapees found by an environment tag), grandchildren
// included, and reaps it. Its stdout and stderr go to a log file (capped), optionally echoed.
// Not thread-safe; fork/exec only from the main thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "turnkey/catalog/status.h"

namespace turnkey::engine_internal {

struct Limits {
  double timeout_s = 3600;
  int64_t memory_bytes = 0;  // 0 = no limit
  int max_processes = 512;
};

// How a supervised process ended. `status` is none when it exited on its own (its own outcome
// decides), else timeout, out_of_memory, process_limit, cancelled or crashed.
struct Ended {
  std::optional<Status> status;
  int signal = 0;      // with crashed
  int exit_code = -1;  // when it exited
  std::string detail;  // one line: "exceeded the 5 s timeout", "killed by signal 11 (...)"
};

// Makes this process the reaper of orphaned descendants (PR_SET_CHILD_SUBREAPER), so a worker's
// daemonized grandchildren stay findable and killable. Call once before starting workers.
void become_subreaper();
// Reaps exited children that are not `keep` (orphans re-parented to us). Never blocks.
void reap_orphans(const std::vector<pid_t>& keep);

class SupervisedProcess {
 public:
  SupervisedProcess(const std::vector<std::string>& argv, const Limits& limits,
                    const std::filesystem::path& output_log, bool echo, int child_fd,
                    const std::string& tag);
  ~SupervisedProcess();  // kills and reaps what is still running
  SupervisedProcess(const SupervisedProcess&) = delete;
  SupervisedProcess& operator=(const SupervisedProcess&) = delete;

  pid_t pid() const { return pid_; }
  int output_fd() const { return out_fd_; }
  // Reads what the worker wrote so far (non-blocking).
  void pump_output();
  // Checks exit and limits; kills on a limit. True once it has ended (then ended() is valid).
  bool poll();
  bool running() const { return !done_; }
  const Ended& ended() const { return ended_; }
  // Kills it now with the given status (e.g. cancelled).
  void terminate(Status status, const std::string& detail);

  // SIGSTOP / SIGCONT to all its processes; the paused time does not count against the timeout.
  void pause();
  // While true (its benchmark runs) the watchdog polls /proc rarely; the timeout still holds.
  void set_measuring(bool measuring) { measuring_ = measuring; }
  void resume();
  // Pins every thread of every process it runs to `cpus` (new threads and processes inherit it).
  void set_cpus(const std::vector<int>& cpus);
  // Time spent waiting for something that is not the input's fault (the benchmark slot).
  void extend_deadline(double seconds);
  double elapsed_s() const;
  int64_t output_bytes() const { return output_bytes_; }

 private:
  std::vector<pid_t> members() const;  // live processes it started (not zombies)
  void kill_all();
  void finish(int wait_status);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int log_fd_ = -1;
  bool echo_ = false;
  int64_t output_bytes_ = 0, echoed_bytes_ = 0;
  Limits limits_;
  std::string tag_;
  std::filesystem::path cgroup_;  // empty when no pids cgroup could be made
  std::chrono::steady_clock::time_point start_, deadline_, paused_at_, next_watch_;
  bool paused_ = false;
  bool measuring_ = false;
  bool done_ = false;
  Ended ended_;
};

}  // namespace turnkey::engine_internal
