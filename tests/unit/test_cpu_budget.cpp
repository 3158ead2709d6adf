// The default thread count and what it rests on (issue 18): kernel topology over libcpuinfo,
// cgroup quotas found through /proc/self/{cgroup,mountinfo}, the Slurm allocation; and the
// machine-speed probe's record.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/temp_dir.h"
#include "turnkey/common/files.h"
#include "turnkey/machine/cpu_budget.h"
#include "turnkey/machine/speed_probe.h"

namespace turnkey {
namespace {

namespace fs = std::filesystem;
using namespace cpu_budget_detail;

void put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A /sys with `cpus` CPUs, each (package, core) given.
fs::path fake_sys(const test::TempDir& dir, const std::vector<std::pair<int, int>>& topology) {
  const fs::path sys = dir / "sys";
  put(sys / "devices/system/cpu/online", fmt::format("0-{}\n", topology.size() - 1));
  for (size_t c = 0; c < topology.size(); ++c) {
    const fs::path t = sys / fmt::format("devices/system/cpu/cpu{}/topology", c);
    put(t / "physical_package_id", std::to_string(topology[c].first) + "\n");
    put(t / "core_id", std::to_string(topology[c].second) + "\n");
  }
  return sys;
}

TEST(CpuBudget, CoresComeFromTheKernelsTopologyAmongTheUsableCpus) {
  test::TempDir dir;
  // 2 packages x 2 cores x 2 hyperthreads: cpus 0-3 on package 0, 4-7 on package 1.
  const fs::path sys =
      fake_sys(dir, {{0, 0}, {0, 0}, {0, 1}, {0, 1}, {1, 0}, {1, 0}, {1, 1}, {1, 1}});
  EXPECT_EQ(online_cpus(sys), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(physical_cores_of(sys, online_cpus(sys)), 4);
  EXPECT_EQ(physical_cores_of(sys, {0, 1}), 1);     // two threads of one core
  EXPECT_EQ(physical_cores_of(sys, {0, 2, 4}), 3);  // core 0 of package 0 and 1 are different
  EXPECT_EQ(physical_cores_of(sys, {42}), 0);       // unreadable: no guess
}

TEST(CpuBudget, TheKernelWinsWhereLibcpuinfoCountsFewerCores) {
  // The AMD EPYC VM of issue 18: libcpuinfo said 1 core, the kernel 2 (1 thread per core).
  CpuBudget b;
  b.cpus = {0, 1};
  b.cores = 2;
  b.machine_cores_kernel = 2;
  b.machine_cores_cpuinfo = 1;
  decide_default(b);
  EXPECT_EQ(b.default_threads, 2);
  EXPECT_NE(b.basis.find("libcpuinfo counts 1 core on the machine, the kernel 2"),
            std::string::npos)
      << b.basis;
}

TEST(CpuBudget, ACpuQuotaOrASlurmAllocationCapsTheDefault) {
  CpuBudget b;
  b.cpus = {0, 1, 2, 3};
  b.cores = 4;
  b.quota_cpus = 2.5;
  b.quota_source = "cgroup v1 /x: 250000/100000 us";
  decide_default(b);
  EXPECT_EQ(b.default_threads, 2);
  EXPECT_NE(b.basis.find("CPU quota of 2.50 CPUs"), std::string::npos) << b.basis;

  b.quota_cpus = 0.5;  // half a CPU still gets one thread
  decide_default(b);
  EXPECT_EQ(b.default_threads, 1);

  b.quota_cpus = 0;
  b.slurm_cpus = 3;
  decide_default(b);
  EXPECT_EQ(b.default_threads, 3);
  EXPECT_NE(b.basis.find("Slurm allocation"), std::string::npos) << b.basis;
}

TEST(CpuBudget, PinnedCpusCountTheirPhysicalCores) {
  CpuBudget b;
  b.pinned = true;
  b.cpus = {0, 1};
  b.cores = 1;  // hyperthreads of one core
  decide_default(b);
  EXPECT_EQ(b.default_threads, 1);
  EXPECT_NE(b.basis.find("pinned"), std::string::npos) << b.basis;
}

TEST(CpuBudget, CgroupFoldersAreFoundForV1AndV2AndTheirAncestors) {
  const std::string cgroup =
      "9:name=systemd:/\n4:memory:/x\n1:cpu,cpuacct:/user/job42\n0::/slice/app\n";
  const std::string mountinfo =
      "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
      "31 25 0:27 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
      "32 25 0:28 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw\n";
  const std::vector<fs::path> dirs = cpu_cgroup_dirs(cgroup, mountinfo);
  const std::vector<fs::path> expected = {"/sys/fs/cgroup/cpu,cpuacct/user/job42",
                                          "/sys/fs/cgroup/cpu,cpuacct/user",
                                          "/sys/fs/cgroup/cpu,cpuacct",
                                          "/sys/fs/cgroup/unified/slice/app",
                                          "/sys/fs/cgroup/unified/slice",
                                          "/sys/fs/cgroup/unified"};
  EXPECT_EQ(dirs, expected);
}

TEST(CpuBudget, AContainersCgroupMountShowsOnlyItsSubtree) {
  // Inside a container: the mount's root is the container's cgroup, the path a child of it.
  const std::string cgroup = "0::/docker/abc/inner\n";
  const std::string mountinfo = "40 30 0:30 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(cpu_cgroup_dirs(cgroup, mountinfo),
            (std::vector<fs::path>{"/sys/fs/cgroup/inner", "/sys/fs/cgroup"}));
  // A path outside the mount's subtree is not guessed at.
  EXPECT_TRUE(cpu_cgroup_dirs("0::/other\n", mountinfo).empty());
  EXPECT_TRUE(cpu_cgroup_dirs("", "").empty());
}

TEST(CpuBudget, QuotaAndThrottlingAreReadFromV1AndV2Files) {
  test::TempDir dir;
  put(dir / "v1/cpu.cfs_quota_us", "50000\n");
  put(dir / "v1/cpu.cfs_period_us", "100000\n");
  put(dir / "v1/cpu.stat", "nr_periods 80\nnr_throttled 37\nthrottled_time 412000000\n");
  std::string what;
  EXPECT_DOUBLE_EQ(quota_of(dir / "v1", &what), 0.5);
  EXPECT_NE(what.find("50000/100000 us"), std::string::npos) << what;
  ThrottleCounters t = throttle_of(dir / "v1");
  EXPECT_TRUE(t.readable);
  EXPECT_EQ(t.periods, 80);
  EXPECT_EQ(t.throttled, 37);
  EXPECT_DOUBLE_EQ(t.throttled_ms, 412);

  put(dir / "v2/cpu.max", "150000 100000\n");
  put(dir / "v2/cpu.stat", "usage_usec 5\nnr_periods 10\nnr_throttled 2\nthrottled_usec 3000\n");
  EXPECT_DOUBLE_EQ(quota_of(dir / "v2"), 1.5);
  EXPECT_DOUBLE_EQ(throttle_of(dir / "v2").throttled_ms, 3);

  put(dir / "none/cpu.max", "max 100000\n");
  EXPECT_EQ(quota_of(dir / "none"), 0);
  put(dir / "unlimited/cpu.cfs_quota_us", "-1\n");
  put(dir / "unlimited/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(quota_of(dir / "unlimited"), 0);
  EXPECT_EQ(quota_of(dir / "missing"), 0);
  EXPECT_FALSE(throttle_of(dir / "missing").readable);
}

TEST(CpuBudget, ThisMachinesBudgetIsConsistent) {
  const CpuBudget b = cpu_budget();
  EXPECT_FALSE(b.cpus.empty());
  EXPECT_GE(b.default_threads, 1);
  EXPECT_LE(b.default_threads, static_cast<int>(b.cpus.size()));
  EXPECT_FALSE(b.basis.empty());
}

TEST(SpeedProbe, TakesMillisecondsOnEveryThreadCount) {
  for (int threads : {1, 2}) {
    const double ms = run_speed_probe(threads);
    EXPECT_GT(ms, 0.5) << threads;  // a real workload, not optimized away
    EXPECT_LT(ms, 5000) << threads;
  }
}

// A runtime's worker spinning after a call: the wait outlasts it, and gives up at its limit
// when the spinning never ends; a process that is gone is nothing to wait for.
TEST(SpeedProbe, WaitsForSpinningThreadsToGoIdleAndNoLonger) {
  std::atomic<bool> stop{false};
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(60);
  std::thread spinner([&] {
    while (std::chrono::steady_clock::now() < spin_until) {
    }
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the spinner is running
  const double waited = wait_for_quiet_threads({getpid()}, 1000);
  EXPECT_GT(waited, 30);   // it saw the spin
  EXPECT_LT(waited, 900);  // and stopped waiting once the spin ended

  std::atomic<bool> spin{true};
  std::thread busy([&] {
    while (spin.load()) {
    }
  });
  const double capped = wait_for_quiet_threads({getpid()}, 50);
  EXPECT_GE(capped, 50);
  EXPECT_LT(capped, 500);
  spin = false;
  busy.join();
  stop = true;
  spinner.join();
  EXPECT_LT(wait_for_quiet_threads({999999999}, 50), 50);
}

TEST(SpeedProbe, TheRecordKeepsTheFastestProbePerKeyAndSurvivesDamage) {
  test::TempDir dir;
  setenv("TURNKEY_STATE_DIR", dir.path().c_str(), 1);
  const std::string a = speed_probe_key("cpu", 2, 2, "", 0);
  const std::string b = speed_probe_key("cpu", 2, 1, "0", 0);
  EXPECT_NE(a, b);
  EXPECT_EQ(remember_speed_probe(a, 6.0), 0);  // nothing known yet
  EXPECT_EQ(remember_speed_probe(a, 9.0), 6.0);
  EXPECT_EQ(remember_speed_probe(a, 5.0), 6.0);
  EXPECT_EQ(remember_speed_probe(a, 7.0), 5.0);
  EXPECT_EQ(remember_speed_probe(b, 3.0), 0);  // another key: its own record
  const auto record = nlohmann::json::parse(read_file(dir / "machine_speed.json"));
  EXPECT_EQ(record["entries"][a]["best_ms"], 5.0);
  EXPECT_EQ(record["entries"][a]["runs"], 4);

  put(dir / "machine_speed.json", "{not json");
  EXPECT_EQ(remember_speed_probe(a, 8.0), 0);  // damaged: started again, never a failure
  EXPECT_EQ(remember_speed_probe(a, 9.0), 8.0);

  setenv("TURNKEY_STATE_DIR", "/proc/no/such/dir", 1);  // unwritable: no record, no failure
  EXPECT_EQ(remember_speed_probe(a, 1.0), 0);
  unsetenv("TURNKEY_STATE_DIR");
}

}  // namespace
}  // namespace turnkey
