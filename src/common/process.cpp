#include "turnkey/common/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

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

// This process's environment with `overrides` set: built before fork (setenv after fork is not
// async-signal-safe).
std::vector<std::string> child_environment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    bool overridden = false;
    for (const auto& [key, value] : overrides) {
      overridden = overridden || (entry.size() > key.size() && entry[key.size()] == '=' &&
                                  entry.substr(0, key.size()) == key);
    }
    if (!overridden) env.emplace_back(entry);
  }
  for (const auto& [key, value] : overrides) env.push_back(key + "=" + value);
  return env;
}

// Writes the decimal pid to `fd` without allocating (in the child, after fork).
void write_pid(int fd, pid_t pid) {
  char rev[24];
  char num[24];
  int len = 0;
  for (pid_t v = pid; v > 0 && len < 24; v /= 10) rev[len++] = static_cast<char>('0' + v % 10);
  for (int i = 0; i < len; ++i) num[i] = rev[len - 1 - i];
  if (::write(fd, num, static_cast<size_t>(len)) < 0) {
    // Nothing to do: the child runs outside the cgroup, which the parent notices.
  }
}

}  // namespace

pid_t spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) throw Error(ErrorKind::Internal, "spawn_process: empty argv");
  // Everything the child needs is made here; after fork only async-signal-safe calls run.
  std::vector<std::string> args = argv;
  if (args[0].find('/') == std::string::npos) {
    const std::string found = find_on_path(args[0]);
    if (!found.empty()) args[0] = found;
  }
  std::vector<char*> cargv = to_argv(args);
  std::vector<std::string> env = child_environment(options.env);
  std::vector<char*> cenv;
  for (std::string& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const char* procs_file =
      options.cgroup_procs_file.empty() ? nullptr : options.cgroup_procs_file.c_str();
  const rlimit data_limit{static_cast<rlim_t>(options.data_limit_bytes),
                          static_cast<rlim_t>(options.data_limit_bytes)};
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw Error(ErrorKind::Io, fmt::format("fork failed: {}", strerror(errno)));
  if (pid > 0) return pid;
  // ---- the child: async-signal-safe calls only, from here to execve ----
  if (options.new_session) {
    setsid();
  } else if (options.new_process_group) {
    setpgid(0, 0);
  }
  if (options.die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) _exit(125);  // the parent died before prctl took effect
  }
  if (procs_file) {
    const int cg = ::open(procs_file, O_WRONLY | O_CLOEXEC);
    if (cg >= 0) {
      write_pid(cg, getpid());
      ::close(cg);
    }
  }
  if (options.data_limit_bytes > 0) setrlimit(RLIMIT_DATA, &data_limit);
  if (options.stdin_null) {
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0 && devnull != 0) {
      dup2(devnull, 0);
      ::close(devnull);
    }
  }
  if (options.output_fd >= 0) {
    dup2(options.output_fd, 1);
    dup2(options.output_fd, 2);
  }
  for (int fd : options.inherit_fds) {
    const int flags = fcntl(fd, F_GETFD);
    if (flags >= 0) fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
  }
  execve(cargv[0], cargv.data(), cenv.data());
  _exit(127);
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return fmt::format("killed by signal {} ({})", sig, strsignal(sig));
  }
  return "ended abnormally";
}

CaptureResult run_capture(const std::vector<std::string>& argv, double timeout_s,
                          const std::vector<std::pair<std::string, std::string>>& env) {
  CaptureResult result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(ErrorKind::Io, "pipe failed");
  SpawnOptions spawn;
  spawn.env = env;
  spawn.new_process_group = true;
  spawn.stdin_null = true;
  spawn.output_fd = fds[1];
  pid_t pid = -1;
  try {
    pid = spawn_process(argv, spawn);
  } catch (...) {
    close(fds[0]);
    close(fds[1]);
    throw;
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

pid_t find_namespaced_descendant(pid_t ancestor, pid_t ns_pid) {
  std::vector<pid_t> level = {ancestor};
  for (int depth = 0; depth < 8 && !level.empty(); ++depth) {
    std::vector<pid_t> next;
    for (pid_t p : level) {
      std::ifstream status(fmt::format("/proc/{}/status", p));
      for (std::string line; std::getline(status, line);) {
        if (line.rfind("NSpid:", 0) != 0) continue;
        std::istringstream ids(line.substr(6));
        std::vector<pid_t> chain;
        for (pid_t id; ids >> id;) chain.push_back(id);
        if (chain.size() >= 2 && chain.back() == ns_pid) return p;
      }
      std::ifstream children(fmt::format("/proc/{}/task/{}/children", p, p));
      for (pid_t c; children >> c;) next.push_back(c);
    }
    level = std::move(next);
  }
  return -1;
}

}  // namespace turnkey
