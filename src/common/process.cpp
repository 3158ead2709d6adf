#include "turnkey/common/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "turnkey/common/error.h"

namespace turnkey {

namespace {

std::vector<char*> to_argv(const std::vector<std::string>& args) {
  std::vector<char*> out;
  for (const auto& a : args) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

pid_t spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) throw Error(ErrorKind::Internal, "spawn_process: empty argv");
  std::vector<char*> cargv = to_argv(argv);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw Error(ErrorKind::Io, fmt::format("fork failed: {}", strerror(errno)));
  if (pid == 0) {
    if (options.die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
      if (getppid() != parent) _exit(125);  // the parent died before prctl took effect
    }
    for (const auto& [k, v] : options.env) setenv(k.c_str(), v.c_str(), 1);
    for (int fd : options.inherit_fds) {
      int flags = fcntl(fd, F_GETFD);
      if (flags >= 0) fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
    }
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  return pid;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return fmt::format("killed by signal {} ({})", sig, strsignal(sig));
  }
  return "ended abnormally";
}

CaptureResult run_capture(const std::vector<std::string>& argv, double timeout_s) {
  CaptureResult result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(ErrorKind::Io, "pipe failed");
  std::vector<char*> cargv = to_argv(argv);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw Error(ErrorKind::Io, fmt::format("fork failed: {}", strerror(errno)));
  }
  if (pid == 0) {
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(fds[1]);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (result.out.size() < (1u << 20)) result.out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  while (waitpid(pid, &result.status, 0) < 0 && errno == EINTR) {
  }
  return result;
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::string p(path);
  size_t start = 0;
  while (start <= p.size()) {
    size_t colon = p.find(':', start);
    std::string dir = p.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty()) {
      std::string candidate = dir + "/" + name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

}  // namespace turnkey
