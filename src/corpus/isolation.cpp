#include "corpus/isolation.h"

#include "turnkey/catalog/status.h"
#include "turnkey/machine/system_info.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "turnkey/common/error.h"
#include "turnkey/common/process.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// Output kept in the input's log; the rest is drained and counted, so megabytes of output
// neither block the worker nor fill the disk.
constexpr int64_t kLogCapBytes = 8 << 20;
constexpr int64_t kEchoCapBytes = 256 << 10;
constexpr auto kWatchInterval = std::chrono::milliseconds(50);

struct ProcInfo {
  pid_t pid = 0, ppid = 0, pgid = 0, sid = 0;
  char state = '?';
};

bool read_stat(pid_t pid, ProcInfo& info) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  // The command name may hold spaces and parentheses: fields start after the last ')'.
  const char* close_paren = std::strrchr(buf, ')');
  if (!close_paren) return false;
  int ppid = 0, pgid = 0, sid = 0;
  char state = '?';
  if (std::sscanf(close_paren + 1, " %c %d %d %d", &state, &ppid, &pgid, &sid) != 4) return false;
  info = {pid, ppid, pgid, sid, state};
  return true;
}

std::vector<ProcInfo> all_processes() {
  std::vector<ProcInfo> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    ProcInfo info;
    if (read_stat(static_cast<pid_t>(std::atoi(e->d_name)), info)) out.push_back(info);
  }
  ::closedir(d);
  return out;
}

bool environ_has(pid_t pid, const std::string& entry) {
  std::ifstream in(fmt::format("/proc/{}/environ", pid), std::ios::binary);
  if (!in) return false;
  std::string var;
  while (std::getline(in, var, '\0')) {
    if (var == entry) return true;
  }
  return false;
}

// Resident anonymous memory of one process, pages shared copy-on-write with a fork counted whole
// (RssAnon: a counter the kernel keeps, cheap to read).
int64_t rss_anon_bytes(pid_t pid) {
  return std::max<int64_t>(0, proc_kib_as_bytes(fmt::format("/proc/{}/status", pid), "RssAnon"));
}

// Anonymous memory charged to one process: its proportional share (Pss_Anon), so pages a fork
// shares copy-on-write with its parent are not counted once per process; RssAnon on kernels
// without Pss_Anon. Reading smaps_rollup walks the process's page tables (milliseconds for a
// process of gigabytes, under its mmap lock).
int64_t anon_memory_bytes(pid_t pid) {
  int64_t pss = proc_kib_as_bytes(fmt::format("/proc/{}/smaps_rollup", pid), "Pss_Anon");
  if (pss >= 0) return pss;
  return rss_anon_bytes(pid);
}

// The processes' anonymous memory as the limit counts it (the sum of Pss_Anon), read only where it
// can matter: the sum of RssAnon bounds it from above, so under the limit that is the answer.
int64_t memory_against_limit(const std::vector<pid_t>& live, int64_t limit) {
  int64_t bound = 0;
  for (pid_t p : live) bound += rss_anon_bytes(p);
  if (bound <= limit) return bound;
  int64_t total = 0;
  for (pid_t p : live) total += anon_memory_bytes(p);
  return total;
}

// Workers being supervised: reap_orphans must leave them to their own SupervisedProcess.
std::set<pid_t>& supervised_pids() {
  static std::set<pid_t> pids;
  return pids;
}

std::string read_small(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool write_small(const fs::path& p, const std::string& text) {
  int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// A fresh pids cgroup (v1 hierarchy) below ours with pids.max set, or "" when the machine does
// not let us make one (no pids controller, no write access, cgroup v2 without delegation): the
// watchdog then counts processes itself.
fs::path make_pids_cgroup(const std::string& name, int max_processes) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, own;
  while (std::getline(in, line)) {
    // "8:pids:/some/path"
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    std::stringstream ss(controllers);
    std::string c;
    while (std::getline(ss, c, ',')) {
      if (c == "pids") own = line.substr(b + 1);
    }
  }
  if (own.empty()) return {};
  const fs::path parent = fs::path("/sys/fs/cgroup/pids") / fs::path(own).relative_path();
  // Once per process: remove empty cgroups that a killed turnkey (SIGKILL) could not remove.
  static bool swept = false;
  if (!swept) {
    swept = true;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(parent, ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("turnkey-", 0) != 0) continue;
      pid_t owner = static_cast<pid_t>(std::atoi(n.c_str() + 8));
      if (owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH) ::rmdir(e.path().c_str());
    }
  }
  fs::path dir = parent / name;
  if (::mkdir(dir.c_str(), 0755) != 0) return {};
  if (!write_small(dir / "pids.max", std::to_string(max_processes))) {
    ::rmdir(dir.c_str());
    return {};
  }
  return dir;
}

std::vector<pid_t> cgroup_members(const fs::path& cgroup) {
  std::vector<pid_t> out;
  std::ifstream in(cgroup / "cgroup.procs");
  pid_t p;
  while (in >> p) out.push_back(p);
  return out;
}

int64_t cgroup_fork_failures(const fs::path& cgroup) {
  std::string events = read_small(cgroup / "pids.events");  // "max 3"
  size_t at = events.find("max ");
  return at == std::string::npos ? 0 : std::atoll(events.c_str() + at + 4);
}

void write_fd_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

void become_subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

void reap_orphans(const std::vector<pid_t>& keep) {
  for (;;) {
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    if (std::find(keep.begin(), keep.end(), info.si_pid) != keep.end() ||
        supervised_pids().count(info.si_pid)) {
      return;
    }
    int status;
    waitpid(info.si_pid, &status, WNOHANG);
  }
}

SupervisedProcess::SupervisedProcess(const std::vector<std::string>& argv, const Limits& limits,
                                     const fs::path& output_log, bool echo, int child_fd,
                                     const std::string& tag)
    : echo_(echo), limits_(limits), tag_(tag) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(ErrorKind::Io, "pipe failed");
  log_fd_ = ::open(output_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd_ < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(ErrorKind::Io,
                fmt::format("{}: cannot write: {}", output_log.string(), strerror(errno)));
  }
  cgroup_ = make_pids_cgroup(fmt::format("turnkey-{}-{}", getpid(), tag), limits.max_processes);
  SpawnOptions spawn;
  spawn.env = {{"TURNKEY_WORKER_TAG", tag}};
  spawn.new_session = true;
  spawn.die_with_parent = true;
  spawn.cgroup_procs_file = cgroup_.empty() ? "" : (cgroup_ / "cgroup.procs").string();
  spawn.data_limit_bytes = limits.memory_bytes;
  spawn.stdin_null = true;
  spawn.output_fd = fds[1];
  if (child_fd >= 0) spawn.inherit_fds = {child_fd};
  pid_t pid = -1;
  try {
    pid = spawn_process(argv, spawn);
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  out_fd_ = fds[0];
  fcntl(out_fd_, F_SETFL, fcntl(out_fd_, F_GETFL) | O_NONBLOCK);
  pid_ = pid;
  supervised_pids().insert(pid);
  start_ = Clock::now();
  deadline_ = start_ + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(limits.timeout_s));
  next_watch_ = start_;
}

SupervisedProcess::~SupervisedProcess() {
  if (!done_ && pid_ > 0)
    terminate(Status::Cancelled, "turnkey stopped before this input finished");
  if (out_fd_ >= 0) ::close(out_fd_);
  if (log_fd_ >= 0) ::close(log_fd_);
}

void SupervisedProcess::pump_output() {
  if (out_fd_ < 0) return;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) {  // every writer is gone
        ::close(out_fd_);
        out_fd_ = -1;
      }
      return;
    }
    int64_t keep = std::min<int64_t>(n, std::max<int64_t>(0, kLogCapBytes - output_bytes_));
    if (keep > 0) write_fd_all(log_fd_, buf, static_cast<size_t>(keep));
    if (output_bytes_ < kLogCapBytes && output_bytes_ + n >= kLogCapBytes) {
      static const char note[] = "\n[turnkey: output beyond 8 MiB not kept]\n";
      write_fd_all(log_fd_, note, sizeof note - 1);
    }
    if (echo_) {
      int64_t show = std::min<int64_t>(n, std::max<int64_t>(0, kEchoCapBytes - echoed_bytes_));
      if (show > 0) write_fd_all(1, buf, static_cast<size_t>(show));
      if (echoed_bytes_ < kEchoCapBytes && echoed_bytes_ + n >= kEchoCapBytes) {
        static const char note[] = "\n[turnkey: more output in the input's log]\n";
        write_fd_all(1, note, sizeof note - 1);
      }
      echoed_bytes_ += n;
    }
    output_bytes_ += n;
  }
}

std::vector<pid_t> SupervisedProcess::members() const {
  std::set<pid_t> found;
  for (const ProcInfo& p : all_processes()) {
    if (p.state == 'Z' || p.pid == pid_) continue;
    if (p.sid == pid_ || p.pgid == pid_) found.insert(p.pid);
  }
  if (!cgroup_.empty()) {
    for (pid_t p : cgroup_members(cgroup_)) {
      if (p != pid_) found.insert(p);
    }
  }
  return {found.begin(), found.end()};
}

void SupervisedProcess::kill_all() {
  const std::string tag_entry = "TURNKEY_WORKER_TAG=" + tag_;
  const pid_t self = getpid();
  for (int round = 0; round < 200; ++round) {
    ::kill(-pid_, SIGKILL);
    std::vector<pid_t> live = members();
    // Processes that left the session (setsid, double fork) but carry our tag; re-parented to
    // us (the subreaper) or elsewhere. Only looked for when killing: reading every environ is
    // too costly for the watchdog.
    if (round < 3) {
      for (const ProcInfo& p : all_processes()) {
        if (p.state == 'Z' || p.pid == self || p.pid == pid_) continue;
        if (std::find(live.begin(), live.end(), p.pid) != live.end()) continue;
        if (environ_has(p.pid, tag_entry)) live.push_back(p.pid);
      }
    }
    live.erase(std::remove(live.begin(), live.end(), self), live.end());
    if (live.empty()) break;
    for (pid_t p : live) ::kill(p, SIGKILL);
    reap_orphans({pid_});
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void SupervisedProcess::finish(int wait_status) {
  done_ = true;
  supervised_pids().erase(pid_);
  if (!ended_.status) {
    if (WIFSIGNALED(wait_status)) {
      ended_.status = Status::Crashed;
      ended_.signal = WTERMSIG(wait_status);
      ended_.detail = describe_wait_status(wait_status);
    } else if (WIFEXITED(wait_status)) {
      ended_.exit_code = WEXITSTATUS(wait_status);
    }
  }
  pump_output();
  if (out_fd_ >= 0) {
    ::close(out_fd_);
    out_fd_ = -1;
  }
  if (!cgroup_.empty()) {
    for (int i = 0; i < 100 && ::rmdir(cgroup_.c_str()) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

bool SupervisedProcess::poll() {
  if (done_) return true;
  pump_output();
  siginfo_t info{};
  // WNOWAIT: the worker stays a zombie while we kill what it left behind, so its pid (the
  // session id we look for) cannot be reused meanwhile.
  const int w = waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  if (w != 0 && errno == ECHILD) {  // reaped elsewhere (should not happen): it has ended
    kill_all();
    finish(0);
    return true;
  }
  if (w == 0 && info.si_pid == pid_) {
    kill_all();
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    finish(status);
    return true;
  }
  const auto now = Clock::now();
  if (!paused_ && now >= deadline_) {
    terminate(Status::Timeout, fmt::format("exceeded the {:g} s timeout", limits_.timeout_s));
    return true;
  }
  if (paused_ || now < next_watch_) return false;
  // While it measures, the watchdog looks 20 times less often: reading /proc (smaps_rollup
  // takes the process's mmap lock) must not disturb the numbers.
  next_watch_ = now + (measuring_ ? kWatchInterval * 20 : kWatchInterval);
  if (!cgroup_.empty() && limits_.memory_bytes <= 0) {
    // The cgroup counts processes: no need to scan /proc.
    if (cgroup_fork_failures(cgroup_) > 0) {
      terminate(Status::ProcessLimit,
                fmt::format("tried to run more than {} processes", limits_.max_processes));
      return true;
    }
    return false;
  }
  std::vector<pid_t> live = members();
  live.push_back(pid_);
  const bool over = cgroup_.empty() ? static_cast<int>(live.size()) > limits_.max_processes
                                    : cgroup_fork_failures(cgroup_) > 0;
  if (over) {
    terminate(Status::ProcessLimit,
              fmt::format("tried to run more than {} processes", limits_.max_processes));
    return true;
  }
  if (limits_.memory_bytes > 0) {
    const int64_t total = memory_against_limit(live, limits_.memory_bytes);
    if (total > limits_.memory_bytes) {
      terminate(Status::OutOfMemory,
                fmt::format("its processes used {} MiB, over the {} MiB memory limit", total >> 20,
                            limits_.memory_bytes >> 20));
      return true;
    }
  }
  return false;
}

void SupervisedProcess::terminate(Status status, const std::string& detail) {
  if (done_) return;
  ended_.status = status;
  ended_.detail = detail;
  kill_all();
  int wait_status = 0;
  while (waitpid(pid_, &wait_status, 0) < 0 && errno == EINTR) {
  }
  kill_all();  // anything the worker forked between the first sweep and its death
  finish(wait_status);
}

void SupervisedProcess::pause() {
  if (done_ || paused_) return;
  paused_ = true;
  paused_at_ = Clock::now();
  ::kill(-pid_, SIGSTOP);
  for (pid_t p : members()) ::kill(p, SIGSTOP);
  ::kill(pid_, SIGSTOP);
}

void SupervisedProcess::resume() {
  if (done_ || !paused_) return;
  paused_ = false;
  deadline_ += Clock::now() - paused_at_;
  for (pid_t p : members()) ::kill(p, SIGCONT);
  ::kill(-pid_, SIGCONT);
  ::kill(pid_, SIGCONT);
}

void SupervisedProcess::set_cpus(const std::vector<int>& cpus) {
  if (done_ || cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  std::vector<pid_t> procs = members();
  procs.push_back(pid_);
  for (pid_t p : procs) {
    std::error_code ec;
    for (const auto& t : fs::directory_iterator(fmt::format("/proc/{}/task", p), ec)) {
      sched_setaffinity(static_cast<pid_t>(std::atoi(t.path().filename().c_str())), sizeof set,
                        &set);
    }
  }
}

void SupervisedProcess::extend_deadline(double seconds) {
  deadline_ += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double SupervisedProcess::elapsed_s() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

}  // namespace turnkey::engine_internal
