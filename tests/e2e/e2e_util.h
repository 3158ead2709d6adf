// Runs the built turnkey binary as a user would, capturing stdout, stderr and the exit code
// separately, with a hard time limit so a hang fails the test instead of the suite.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "support/text_count.h"

namespace turnkey::test {

// The interpreter matrix (tests/e2e/CMakeLists.txt, docs/torch_versions.md): the torch-2 variant
// of a test program runs with TURNKEY_PYTHON set to .deps/pypi/bin/python3 and
// TURNKEY_TEST_TORCH2=1, the other with the default interpreter (Debian 12's torch 1.13).
inline bool torch2_run() {
  const char* v = std::getenv("TURNKEY_TEST_TORCH2");
  return v && *v && std::string(v) != "0";
}

// The torch-2 variant skips every test, saying why, when the interpreter is not built.
class Torch2Interpreter : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!torch2_run()) return;
    const char* python = std::getenv("TURNKEY_PYTHON");
    if (!python || access(python, X_OK) != 0) {
      GTEST_SKIP() << "torch 2 interpreter " << (python ? python : "(TURNKEY_PYTHON unset)")
                   << " is absent: run scripts/setup-pypi (scripts/test does)";
    }
  }
};
inline const bool kTorch2InterpreterRegistered =
    (::testing::AddGlobalTestEnvironment(new Torch2Interpreter), true);

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string out, err;
  std::string all() const { return out + err; }
};

inline std::string turnkey_binary() { return TURNKEY_BINARY; }

inline RunResult run_command(const std::vector<std::string>& argv,
                             const std::vector<std::pair<std::string, std::string>>& env = {},
                             const std::filesystem::path& cwd = {}, double timeout_s = 600) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC)) throw std::runtime_error("pipe");
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    for (const auto& [k, v] : env) {
      if (v.empty()) unsetenv(k.c_str());
      else setenv(k.c_str(), v.c_str(), 1);
    }
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  RunResult r;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left)) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

// turnkey with a private cache dir (TURNKEY_CACHE_DIR) unless the caller sets one.
inline RunResult run_turnkey(const std::vector<std::string>& args,
                             const std::filesystem::path& cache_dir,
                             std::vector<std::pair<std::string, std::string>> env = {},
                             const std::filesystem::path& cwd = {}, double timeout_s = 600) {
  std::vector<std::string> argv = {turnkey_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  // Defaults first, so the caller's own values win (later setenv calls override). Tests read
  // one-line statuses: Python tracebacks (on the terminal by default) only where a test asks.
  env.insert(env.begin(), {"TURNKEY_TRACEBACK", "False"});
  env.insert(env.begin(), {"TURNKEY_BUILD_MONITOR", "False"});
  env.insert(env.begin(), {"TURNKEY_CACHE_DIR", cache_dir.string()});
  return run_command(argv, env, cwd, timeout_s);
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What a crash or an uncaught error would print; never acceptable in turnkey's output.
inline bool looks_like_crash(const RunResult& r) {
  const std::string all = r.all();
  return r.signal != 0 || all.find("terminate called") != std::string::npos ||
         all.find("Aborted") != std::string::npos ||
         all.find("Segmentation fault") != std::string::npos ||
         all.find("internal error") != std::string::npos ||
         all.find("Traceback (most recent call last)") != std::string::npos;
}

// Every regular file under `dir` whose content holds `needle`.
inline std::vector<std::filesystem::path> files_holding(const std::filesystem::path& dir,
                                                      const std::string& needle) {
  namespace fs = std::filesystem;
  std::vector<fs::path> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec) && slurp(it->path()).find(needle) != std::string::npos) {
      found.push_back(it->path());
    }
  }
  return found;
}

}  // namespace turnkey::test
