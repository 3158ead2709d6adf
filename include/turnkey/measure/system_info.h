// Facts about this machine for results and `turnkey system-info`: read from cpuinfo, /proc and
// /sys only (no sudo, no external commands, never blocks). Values are cached after the first call;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace turnkey {

struct CpuFacts {
  std::string model;                   // "AMD EPYC 9B45"; "unknown CPU" if unreadable
  int physical_cores = 0;
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

}  // namespace turnkey
