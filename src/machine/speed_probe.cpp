#include "turnkey/machine/speed_probe.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "turnkey/common/env.h"
#include "turnkey/common/files.h"
#include "turnkey/machine/system_info.h"

namespace turnkey {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

// About 5 ms on one core of this project's machines (2.6 GHz Xeon, AMD EPYC): long enough to
// span a 5 ms quota window, short enough that two probes stay under 1% of a resnet18 benchmark.
constexpr int kRounds = 2800000;

using Float4 = float __attribute__((vector_size(16)));  // one SSE / NEON register

// Keeps the chains in registers and each round's results materialized (no folding of rounds).
#if defined(__x86_64__) || defined(__i386__)
#define TURNKEY_PROBE_REG "+x"
#else
#define TURNKEY_PROBE_REG "+w"
#endif

// Compute-bound and deterministic: the same multiply-adds every time, converging to 1.0 (no
// denormals, no overflow), in 8 independent chains held in registers, so the time is the core's
// arithmetic throughput and nothing else. An earlier version updated an array in memory each
// round: its speed moved by 20% with where the loop landed in the binary (a store reloaded the
// next round), so two builds of turnkey disagreed about the same machine. Aligned for the same
// reason.
__attribute__((noinline, aligned(64))) float workload() {
  // Eight named variables, not an array: GCC keeps an array on the stack and reloads it each
  // round, which brings back the store-to-load dependency this version exists to avoid.
  Float4 a0 = {0.000f, 0.01f, 0.02f, 0.03f}, a1 = {0.125f, 0.135f, 0.145f, 0.155f};
  Float4 a2 = {0.250f, 0.26f, 0.27f, 0.28f}, a3 = {0.375f, 0.385f, 0.395f, 0.405f};
  Float4 a4 = {0.500f, 0.51f, 0.52f, 0.53f}, a5 = {0.625f, 0.635f, 0.645f, 0.655f};
  Float4 a6 = {0.750f, 0.76f, 0.77f, 0.78f}, a7 = {0.875f, 0.885f, 0.895f, 0.905f};
  const Float4 scale = {0.999f, 0.999f, 0.999f, 0.999f};
  const Float4 shift = {0.001f, 0.001f, 0.001f, 0.001f};
  for (int r = 0; r < kRounds; ++r) {
    a0 = a0 * scale + shift;
    a1 = a1 * scale + shift;
    a2 = a2 * scale + shift;
    a3 = a3 * scale + shift;
    a4 = a4 * scale + shift;
    a5 = a5 * scale + shift;
    a6 = a6 * scale + shift;
    a7 = a7 * scale + shift;
    asm volatile(""
                 : TURNKEY_PROBE_REG(a0), TURNKEY_PROBE_REG(a1), TURNKEY_PROBE_REG(a2),
                   TURNKEY_PROBE_REG(a3), TURNKEY_PROBE_REG(a4), TURNKEY_PROBE_REG(a5),
                   TURNKEY_PROBE_REG(a6), TURNKEY_PROBE_REG(a7));
  }
  const Float4 sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  return sum[0] + sum[1] + sum[2] + sum[3];
}

constexpr int kMaxRecords = 64;

// An flock on <state dir>/machine_speed.lock for the read-modify-write of the record.
class RecordLock {
 public:
  explicit RecordLock(const fs::path& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RecordLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  RecordLock(const RecordLock&) = delete;
  RecordLock& operator=(const RecordLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace

double run_speed_probe(int threads) {
  threads = std::clamp(threads, 1, 4096);
  // Each copy on a thread of its own, pinned to one of the caller's CPUs in turn: the scheduler
  // otherwise sometimes starts two new threads on one CPU and moves one only after a few ms,
  // which doubled the probe of an idle 2-CPU machine in about half the runs. The probe is to
  // see the machine, not where the scheduler first put a thread.
  const std::vector<int> cpus = allowed_cpus();
  std::atomic<bool> go{false};
  std::atomic<int> ready{0};
  std::vector<Clock::time_point> ends(static_cast<size_t>(threads));
  std::vector<float> sinks(static_cast<size_t>(threads));
  auto body = [&](int k) {
    if (!cpus.empty()) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[static_cast<size_t>(k) % cpus.size()], &one);
      pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    }
    ready.fetch_add(1);
    while (!go.load(std::memory_order_acquire)) {
    }
    sinks[static_cast<size_t>(k)] = workload();
    ends[static_cast<size_t>(k)] = Clock::now();
  };
  std::vector<std::thread> copies;
  for (int k = 0; k < threads; ++k) copies.emplace_back(body, k);
  while (ready.load() < threads) std::this_thread::yield();
  const Clock::time_point start = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& t : copies) t.join();
  const Clock::time_point end = *std::max_element(ends.begin(), ends.end());
  asm volatile("" : : "r"(sinks.data()) : "memory");
  return std::chrono::duration<double, std::milli>(end - start).count();
}

namespace {

// Threads of `pid` in state R, the calling thread left out.
int runnable_threads(pid_t pid, pid_t self_tid) try {
  int n = 0;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    if (task.path().filename() == std::to_string(self_tid)) continue;
    std::string stat;
    try {
      stat = read_file(task.path() / "stat");
    } catch (const std::exception&) {
      continue;  // the thread ended meanwhile
    }
    const size_t close = stat.rfind(')');  // the name may hold blanks and parentheses
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'R') ++n;
  }
  return n;
} catch (const std::exception&) {
  return 0;  // the process ended, or /proc went away under us: nothing left to wait for
}

}  // namespace

double wait_for_quiet_threads(const std::vector<pid_t>& pids, double max_ms) {
  const auto start = Clock::now();
  const pid_t self = static_cast<pid_t>(gettid());
  for (;;) {
    int busy = 0;
    for (pid_t pid : pids) busy += runnable_threads(pid, self);
    const double waited = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (busy == 0 || waited >= max_ms) return waited;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::string speed_probe_key(const std::string& cpu_model, int logical_cpus, int threads,
                            const std::string& pinned_cpus, double quota_cpus) {
  // The workload's version first: a changed workload is another measure, never compared with
  // the bests of an earlier one.
  return fmt::format("probe {} | {} | {} CPUs | {} threads | pinned {} | quota {:g}",
                     kProbeWorkloadVersion, cpu_model, logical_cpus, threads,
                     pinned_cpus.empty() ? "-" : pinned_cpus, quota_cpus);
}

double remember_speed_probe(const std::string& key, double probe_ms) {
  try {
    const fs::path dir = state_dir();
    fs::create_directories(dir);
    RecordLock lock(dir / "machine_speed.lock");
    if (!lock.held()) return 0;
    const fs::path file = dir / "machine_speed.json";
    json record = json::object();
    std::error_code ec;
    if (fs::exists(file, ec)) {
      try {
        record = json::parse(read_file(file));
        if (!record.is_object() || record.value("version", 0) != 1) record = json::object();
      } catch (const std::exception&) {
        record = json::object();  // damaged: started again
      }
    }
    json entries = record.value("entries", json::object());
    if (!entries.is_object()) entries = json::object();
    double best = 0;
    if (entries.contains(key) && entries[key].is_object()) {
      best = entries[key].value("best_ms", 0.0);
    }
    const auto now = static_cast<int64_t>(std::time(nullptr));
    json entry = entries.value(key, json::object());
    if (!entry.is_object()) entry = json::object();
    if (best <= 0 || probe_ms < best) {
      entry["best_ms"] = probe_ms;
      entry["best_utc"] = now;
    }
    entry["runs"] = entry.value("runs", 0) + 1;
    entry["used"] = now;
    entries[key] = entry;
    while (entries.size() > kMaxRecords) {
      auto oldest = entries.begin();
      for (auto it = entries.begin(); it != entries.end(); ++it) {
        if (it->value("used", int64_t{0}) < oldest->value("used", int64_t{0})) oldest = it;
      }
      entries.erase(oldest);
    }
    write_file_atomic(file, json{{"version", 1}, {"entries", entries}}.dump(1) + "\n");
    return best;
  } catch (const std::exception&) {
    return 0;  // remembering is an aid; a read-only home never fails a benchmark
  }
}

}  // namespace turnkey
