#include "turnkey/measure/system_info.h"

#include <cpuinfo.h>
#include <sys/utsname.h>

#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace turnkey {

namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\n\"");
  size_t e = s.find_last_not_of(" \t\n\"");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return trim(line);
}

// "key<sep>value" lookup in a /proc-style file; "" when absent.
std::string proc_value(const char* path, const std::string& key, char sep) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      size_t p = line.find(sep);
      if (p != std::string::npos) return trim(line.substr(p + 1));
    }
  }
  return "";
}

CpuFacts read_cpu_facts() {
  CpuFacts f;
  if (cpuinfo_initialize()) {
    if (cpuinfo_get_packages_count() > 0) f.model = trim(cpuinfo_get_package(0)->name);
    f.physical_cores = static_cast<int>(cpuinfo_get_cores_count());
    f.logical_cpus = static_cast<int>(cpuinfo_get_processors_count());
  }
  // ISA flags from the kernel's list, filtered to the ones that matter for inference kernels.
  std::string flags = " " + proc_value("/proc/cpuinfo", "flags", ':') + " ";
  for (const char* flag : {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw",
                           "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni",
                           "amx_bf16", "amx_int8", "amx_tile", "neon", "asimd", "sve"}) {
    if (flags.find(std::string(" ") + flag + " ") != std::string::npos) {
      f.isa_flags.push_back(flag);
    }
  }
  // cpuinfo's package name is sometimes empty in VMs; /proc/cpuinfo's "model name" is the
  // string users know.
  std::string proc_model = proc_value("/proc/cpuinfo", "model name", ':');
  if (!proc_model.empty()) f.model = proc_model;
  if (f.model.empty()) f.model = "unknown CPU";
  if (f.logical_cpus <= 0) f.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (f.physical_cores <= 0) f.physical_cores = f.logical_cpus;
  return f;
}

}  // namespace

const CpuFacts& cpu_facts() {
  static const CpuFacts facts = read_cpu_facts();
  return facts;
}

MachineFacts machine_facts() {
  MachineFacts m;
  m.cpu = cpu_facts();
  std::string mem = proc_value("/proc/meminfo", "MemTotal", ':');  // "24576000 kB"
  if (!mem.empty()) m.memory_bytes = std::stoll(mem) * 1024;
  m.os = proc_value("/etc/os-release", "PRETTY_NAME", '=');
  struct utsname u {};
  if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release;
  m.governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  std::ifstream load("/proc/loadavg");
  if (load) load >> m.load_average_1m;
  return m;
}

}  // namespace turnkey
