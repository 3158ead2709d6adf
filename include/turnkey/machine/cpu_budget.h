// The CPUs a benchmark may use, and the thread count it gets when the user names none
// (docs/measurement.md, "Threads"). Read from the kernel only: the affinity mask, the CPU
// topology in /sys, cgroup CPU quotas (v1 and v2, the process's cgroup and its ancestors) and the
// Slurm allocation; libcpuinfo's core count is recorded beside the kernel's, never preferred to it
// (in some VMs it reports 1 core where the kernel has 2). No sudo, no external commands; never
// blocks. Thread-safe (no shared state but the callers' values).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace turnkey {

struct CpuBudget {
  std::vector<int> cpus;          // the CPUs the benchmark may run on: pinned, else the affinity
  bool pinned = false;            // `cpus` came from --pin
  int cores = 0;                  // physical cores among `cpus` (kernel topology)
  int machine_cores_kernel = 0;   // physical cores of the machine by the kernel (0: unreadable)
  int machine_cores_cpuinfo = 0;  // physical cores of the machine by libcpuinfo (0: unreadable)
  double quota_cpus = 0;          // tightest cgroup CPU quota, in CPUs (0: no quota)
  std::string quota_source;       // "cgroup v1 /sys/fs/cgroup/cpu/x: 50000/100000 us"
  int slurm_cpus = 0;             // SLURM_CPUS_ON_NODE inside a Slurm job (0: not in one)
  int default_threads = 1;        // what a runtime gets when the user names no thread count
  std::string basis;              // one line: how default_threads was decided
};

// The budget for a benchmark pinned to `pinned` (empty: not pinned). Cheap (a few small reads of
// /proc and /sys); call it per benchmark, the affinity and the quota may change.
CpuBudget cpu_budget(const std::vector<int>& pinned = {});
// cpu_budget().default_threads.
int default_threads(const std::vector<int>& pinned = {});

// CPU quota throttling of the process's cgroups, summed over the cgroup and its ancestors: a
// quota on any of them slows the process without showing in the load average.
struct ThrottleCounters {
  bool readable = false;    // some cgroup's cpu.stat could be read
  int64_t periods = 0;      // nr_periods: enforcement periods that saw the group run
  int64_t throttled = 0;    // nr_throttled: periods in which the group ran out of quota
  double throttled_ms = 0;  // time the group's threads waited for quota
};
ThrottleCounters read_throttle_counters();

// The kernel's cpufreq limit of cpu `cpu`: the maximum it may run at now (scaling_max_freq) and
// the hardware's (cpuinfo_max_freq), MHz; 0 when not readable (VMs often hide cpufreq).
struct FrequencyLimit {
  double max_mhz = 0, hardware_max_mhz = 0;
};
FrequencyLimit read_frequency_limit(int cpu = 0);

namespace cpu_budget_detail {
// The pieces of cpu_budget(), on files under a root folder, for tests with fake /proc and /sys.

// Physical cores (distinct package/core pairs) among `cpus` from
// <sys>/devices/system/cpu/cpuN/topology; 0 when no CPU's topology can be read.
int physical_cores_of(const std::filesystem::path& sys, const std::vector<int>& cpus);
// The online CPUs, from <sys>/devices/system/cpu/online ("0-3,6"); empty when unreadable.
std::vector<int> online_cpus(const std::filesystem::path& sys);

// The folders of the process's cgroups that limit CPU, leaf first then each ancestor up to the
// hierarchy's mount point, from the texts of /proc/self/cgroup and /proc/self/mountinfo. v1's
// `cpu` hierarchy and v2's unified one, whichever is mounted.
std::vector<std::filesystem::path> cpu_cgroup_dirs(const std::string& proc_self_cgroup,
                                                   const std::string& proc_self_mountinfo);
// The quota of one cgroup folder in CPUs: v1 cpu.cfs_quota_us / cpu.cfs_period_us, v2 cpu.max
// ("max 100000" = none); 0 when none or unreadable. `what` gets "50000/100000 us".
double quota_of(const std::filesystem::path& dir, std::string* what = nullptr);
// cpu.stat of one cgroup folder (v1: throttled_time in ns; v2: throttled_usec).
ThrottleCounters throttle_of(const std::filesystem::path& dir);

// The default thread count and its basis from the facts above (cpu_budget's rule, testable).
void decide_default(CpuBudget& budget);
}  // namespace cpu_budget_detail

}  // namespace turnkey
