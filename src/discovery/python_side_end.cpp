// ScriptSession's end: how the Python side ended (an exit, a signal, a crash under a data
// limit), and closing, draining and reaping it (python_side.h).
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "turnkey/common/error.h"
#include "turnkey/common/process.h"
#include "turnkey/discovery/python_side.h"

namespace turnkey {

namespace {

// The data-segment limit this process (and so the Python side it starts) runs under, in MiB; 0
// when none. A corpus worker under --memory-limit has one (docs/corpus_runs.md).
uint64_t data_limit_mib() {
  rlimit limit{};
  if (getrlimit(RLIMIT_DATA, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<uint64_t>(limit.rlim_cur) >> 20;
}

// How the Python side ended, to follow "the Python side": "exited with code 1", "was killed by
// signal 11 (Segmentation fault)"; SIGKILL adds the likeliest sender, and a crash under a data
// limit names the limit and how to tell whether it is why (it may be: native code that does not
// check an allocation the limit refuses crashes so; measured: PyPI torch 2.15's ONNX export of a
// 537 MB MLP under --memory-limit 2000M, signal 11, successful at 2600M). For people only: the
// signal travels as a number (end_signal(), DiscoveryResult::signal).
std::string in_words(int wait_status) {
  std::string how = describe_wait_status(wait_status);
  if (!WIFSIGNALED(wait_status)) return how;
  how = "was " + how;
  const int signal = WTERMSIG(wait_status);
  if (signal == SIGKILL) how += ", as the kernel does when memory runs out";
  if (const uint64_t limit = data_limit_mib();
      limit > 0 && (signal == SIGSEGV || signal == SIGBUS || signal == SIGABRT)) {
    how.insert(how.size() - 1,  // inside "(Segmentation fault)"
               fmt::format("; under --memory-limit's data limit of {} MiB, where an allocation "
                           "refused to native code that does not check it crashes so: a higher "
                           "limit tells whether that is why",
                           limit));
  }
  return how;
}

}  // namespace

std::string ScriptSession::how_it_ended() const { return in_words(wait_status_); }

std::string ScriptSession::ended_during(const std::string& what) {
  if (attached_) return fmt::format("the calling Python process stopped answering during {}", what);
  // The child closes its end of the pipe when it exits; a script that closed the descriptor
  // itself is still running, so wait a little, never forever (close() reaps it later).
  reap_until(std::chrono::steady_clock::now() + std::chrono::seconds(2));
  if (!reaped_) return fmt::format("the Python side stopped answering during {}", what);
  closed_ = true;
  for (int* fd : {&command_fd_, &event_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  return fmt::format("the Python side {} during {}", how_it_ended(), what);
}

std::string ScriptSession::close() {
  if (closed_) return describe_wait_status(wait_status_);
  closed_ = true;
  if (command_fd_ >= 0) {
    try {
      send({{"type", "exit"}});
    } catch (const Error&) {
    }
    ::close(command_fd_);
    command_fd_ = -1;
  }
  // After `exit` the interpreter runs the script's atexit handlers and joins its non-daemon
  // threads: one that never ends must not hold the run (nor the results, printed after this).
  const auto deadline = std::chrono::steady_clock::now() + kExitGrace;
  drain_events_until(deadline);
  ::close(event_fd_);
  event_fd_ = -1;
  if (attached_) return "detached from the calling Python process";
  if (!reap_until(deadline)) {
    exit_overdue_ = true;
    ::kill(pid_, SIGKILL);  // its sandbox with it
    reap();
  }
  if (reaped_) staging_.reset();  // nothing in the sandbox is left to race the removal
  return describe_wait_status(wait_status_);
}

// Reads and drops what the child still sends (so it never blocks on a full pipe while exiting)
// until it closes the pipe or `deadline` passes: nothing it says after `exit` is used.
void ScriptSession::drain_events_until(std::chrono::steady_clock::time_point deadline) {
  buffer_.clear();
  scanned_ = 0;
  char buf[65536];
  while (event_fd_ >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd p{event_fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return;
    const ssize_t n = ::read(event_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
  }
}

// False when `deadline` passed with the child still running.
bool ScriptSession::reap_until(std::chrono::steady_clock::time_point deadline) {
  while (!reaped_ && !attached_ && pid_ > 0) {
    const pid_t r = waitpid(pid_, &wait_status_, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
    } else if (r < 0 && errno != EINTR) {
      return true;  // not ours to wait for (gone already)
    } else if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    } else {
      usleep(10 * 1000);
    }
  }
  return true;
}

void ScriptSession::reap() {
  if (reaped_ || attached_ || pid_ <= 0) return;
  pid_t r;
  while ((r = waitpid(pid_, &wait_status_, 0)) < 0 && errno == EINTR) {
  }
  reaped_ = r == pid_;
}

int ScriptSession::end_signal() const {
  // A Python side that broke the protocol was killed by the core: that is no crash of its own.
  if (!broken_.empty()) return 0;
  return reaped_ && WIFSIGNALED(wait_status_) ? WTERMSIG(wait_status_) : 0;
}

}  // namespace turnkey
