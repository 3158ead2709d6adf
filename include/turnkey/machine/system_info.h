// Facts about this machine for results and `turnkey system-info`: read from cpuinfo, /proc and
// /sys only (no sudo, no external commands, never blocks). Values are cached after the first call;
// thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "turnkey/common/flags.h"
#include "turnkey/machine/cpu_budget.h"

namespace turnkey {

struct CpuFacts {
  std::string model;                   // "AMD EPYC 9B45"; "unknown CPU" if unreadable
  int physical_cores = 0;  // the kernel's topology (/sys); libcpuinfo's count when unreadable
  int cpuinfo_cores = 0;   // libcpuinfo's count (0: unreadable); VMs sometimes report fewer
  int logical_cpus = 0;
  std::vector<std::string> isa_flags;  // "avx2", "avx512f", "avx512_vnni", ...
};

struct MachineFacts {
  CpuFacts cpu;
  int64_t memory_bytes = 0;  // MemTotal
  std::string os;            // PRETTY_NAME of /etc/os-release
  std::string kernel;        // uname -sr
  std::string governor;      // cpufreq governor of cpu0, "" when not readable
  double load_average_1m = -1;
};

const CpuFacts& cpu_facts();
MachineFacts machine_facts();  // load average re-read on every call

// The "Key:   N kB" value of a /proc file (/proc/<pid>/status, smaps_rollup, meminfo) in bytes;
// -1 when the file or key is absent or unreadable. Never blocks.
int64_t proc_kib_as_bytes(const std::string& path, const std::string& key);

// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();

// "0-1,3" -> {0, 1, 3}. Throws Error(InvalidInput) naming the problem for a malformed list or a
// CPU this process may not run on.
std::vector<int> parse_cpu_list(const std::string& text);

// One thread as /proc/<pid>/task/<tid>/stat shows it: its state ('R' running or runnable) and
// the CPU whose run queue it is on (field 39). parse_task_stat: nullopt for a line it cannot
// read (the command name may hold spaces and parentheses: the fields follow the last ')').
struct TaskState {
  pid_t pid = 0;  // the process (thread group) it belongs to
  char state = '?';
  int cpu = -1;
};
std::optional<TaskState> parse_task_stat(pid_t pid, const std::string& line);
// Every thread of every process as /proc shows them now (threads that end meanwhile skipped).
std::vector<TaskState> read_tasks();

// The threads in `tasks` that want one of `cpus` (every CPU when empty): running or runnable on
// it, and of none of `own` processes (the benchmark's: its own threads and the process holding
// the model are the measurement, not a competitor).
int count_competing(const std::vector<TaskState>& tasks, const std::vector<int>& cpus,
                    const std::vector<pid_t>& own);

// How many threads of other processes want one of `cpus` right now: count_competing over every
// thread in /proc, the mean of `samples` reads `interval_ms` apart. Blocks samples * interval_ms.
double runnable_other_threads(const std::vector<int>& cpus, const std::vector<pid_t>& own,
                              int samples = 3, int interval_ms = 5);

// The environment a measurement ran in, recorded with every result.
struct EnvironmentFingerprint {
  std::string cpu_model;
  int physical_cores = 0, logical_cpus = 0;
  int threads = 0;           // threads the runtime was asked to use
  std::vector<int> cpus;     // --pin, empty = not pinned
  std::string governor;      // "" when not readable
  double cpu_mhz = 0;        // current frequency of cpu0 when readable, else 0
  double load_average_1m = -1;
  double runnable_before = 0, runnable_after = 0;  // runnable_other_threads() around the run
  std::vector<pid_t> own_pids;        // the benchmark's processes, not counted as other threads
  CpuBudget budget;                   // usable CPUs, both core counts, CPU quota, Slurm allocation
  FrequencyLimit frequency;           // cpufreq's cap on the first usable CPU, when readable
  std::vector<Flag> warnings;  // machine busy, threads exceed cores, frequency capped
};

// Fills everything but runnable_after (call finish_fingerprint after the run). `own`: the
// benchmark's processes (this one and the one holding the model), whose threads are not others.
EnvironmentFingerprint start_fingerprint(int threads, const std::vector<int>& cpus,
                                         const std::vector<pid_t>& own);
void finish_fingerprint(EnvironmentFingerprint& fp);

}  // namespace turnkey
