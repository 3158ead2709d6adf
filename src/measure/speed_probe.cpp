#include "turnkey/measure/speed_probe.h"

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
#include "turnkey/measure/system_info.h"

namespace turnkey {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

// About 5 ms on one core of this project's machines (2.6 GHz Xeon, AMD EPYC): long enough to
// span a 5 ms quota window, short enough that two probes stay under 1% of a resnet18 benchmark.
constexpr int kRounds = 200000;
constexpr int kWidth = 256;  // floats: 1 KB, in L1, so memory bandwidth does not enter

// Compute-bound and deterministic: the same multiply-adds every time, converging to 1.0 (no
// denormals, no overflow), with a result the compiler must produce.
__attribute__((noinline)) float workload() {
  alignas(64) float a[kWidth];
  for (int i = 0; i < kWidth; ++i) a[i] = static_cast<float>(i) / kWidth;
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < kWidth; ++i) a[i] = a[i] * 0.999f + 0.001f;
    asm volatile("" : : "r"(a) : "memory");
  }
  float sum = 0;
  for (float v : a) sum += v;
  return sum;
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

std::string speed_probe_key(const std::string& cpu_model, int logical_cpus, int threads,
                            const std::string& pinned_cpus, double quota_cpus) {
  return fmt::format("{} | {} CPUs | {} threads | pinned {} | quota {:g}", cpu_model, logical_cpus,
                     threads, pinned_cpus.empty() ? "-" : pinned_cpus, quota_cpus);
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
