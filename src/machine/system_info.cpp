#include "turnkey/machine/system_info.h"

#include <cpuinfo.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "turnkey/common/error.h"
#include "turnkey/common/text.h"
#include "turnkey/machine/cpu_budget.h"

namespace turnkey {

namespace fs = std::filesystem;

namespace {

// Values in /proc and /etc/os-release files: blanks and the quotes around them go.
std::string trim_value(const std::string& s) { return trim(s, " \t\n\""); }

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return trim_value(line);
}

// "key<sep>value" lookup in a /proc-style file; "" when absent.
std::string proc_value(const char* path, const std::string& key, char sep) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      size_t p = line.find(sep);
      if (p != std::string::npos) return trim_value(line.substr(p + 1));
    }
  }
  return "";
}

CpuFacts read_cpu_facts() {
  CpuFacts f;
  if (cpuinfo_initialize()) {
    if (cpuinfo_get_packages_count() > 0) f.model = trim_value(cpuinfo_get_package(0)->name);
    f.cpuinfo_cores = static_cast<int>(cpuinfo_get_cores_count());
    f.logical_cpus = static_cast<int>(cpuinfo_get_processors_count());
  }
  // ISA flags from the kernel's list, filtered to the ones that matter for inference kernels.
  std::string flags = fmt::format(" {} ", proc_value("/proc/cpuinfo", "flags", ':'));
  for (const char* flag : {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw",
                           "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni",
                           "amx_bf16", "amx_int8", "amx_tile", "neon", "asimd", "sve"}) {
    if (flags.find(fmt::format(" {} ", flag)) != std::string::npos) {
      f.isa_flags.push_back(flag);
    }
  }
  // cpuinfo's package name is sometimes empty in VMs; /proc/cpuinfo's "model name" is the
  // string users know.
  std::string proc_model = proc_value("/proc/cpuinfo", "model name", ':');
  if (!proc_model.empty()) f.model = proc_model;
  if (f.model.empty()) f.model = "unknown CPU";
  if (f.logical_cpus <= 0) f.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  // The kernel's topology, not libcpuinfo's: on some VMs (an AMD EPYC guest here) libcpuinfo
  // counts 1 core where the kernel and lscpu count 2 (docs/measurement.md, "Threads").
  const fs::path sys = "/sys";
  f.physical_cores = cpu_budget_detail::physical_cores_of(sys, cpu_budget_detail::online_cpus(sys));
  if (f.physical_cores <= 0) f.physical_cores = f.cpuinfo_cores;
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
  if (uname(&u) == 0) m.kernel = fmt::format("{} {}", u.sysname, u.release);
  m.governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  std::ifstream load("/proc/loadavg");
  if (load) load >> m.load_average_1m;
  return m;
}

int64_t proc_kib_as_bytes(const std::string& path, const std::string& key) {
  const std::string v = proc_value(path.c_str(), key + ":", ':');
  if (v.empty()) return -1;
  try {
    return std::stoll(v) * 1024;
  } catch (const std::exception&) {
    return -1;
  }
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

std::vector<int> parse_cpu_list(const std::string& text) {
  auto bad = [&](const std::string& why) {
    throw Error(ErrorKind::InvalidInput, fmt::format("--pin '{}': {}", text, why));
  };
  auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string::npos) {
      bad(fmt::format("'{}' is not a CPU number (expected a list like 0-3,6)", s));
    }
    return std::stoi(s);
  };
  std::vector<int> cpus;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                      : comma - start);
    size_t dash = item.find('-');
    int lo = number(item.substr(0, dash));
    int hi = dash == std::string::npos ? lo : number(item.substr(dash + 1));
    if (hi < lo) bad(fmt::format("range '{}' runs backwards", item));
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  const std::vector<int> allowed = allowed_cpus();
  for (int c : cpus) {
    if (!std::binary_search(allowed.begin(), allowed.end(), c)) {
      bad(fmt::format("CPU {} is not available to this process (available: {})", c,
                      fmt::join(allowed, ",")));
    }
  }
  return cpus;
}

std::optional<TaskState> parse_task_stat(pid_t pid, const std::string& line) {
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  // After "pid (comm)": field 3 (state) is the first, field 39 (processor) the 37th.
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  TaskState t;
  t.pid = pid;
  for (int i = 3; i <= 39 && rest >> field; ++i) {
    if (i == 3) t.state = field.empty() ? '?' : field[0];
    if (i == 39) {
      try {
        t.cpu = std::stoi(field);
      } catch (const std::exception&) {
        return std::nullopt;
      }
      return t;
    }
  }
  return std::nullopt;
}

int count_competing(const std::vector<TaskState>& tasks, const std::vector<int>& cpus,
                    const std::vector<pid_t>& own) {
  int n = 0;
  for (const TaskState& t : tasks) {
    if (t.state != 'R') continue;
    if (std::find(own.begin(), own.end(), t.pid) != own.end()) continue;
    if (!cpus.empty() && std::find(cpus.begin(), cpus.end(), t.cpu) == cpus.end()) continue;
    ++n;
  }
  return n;
}

std::vector<TaskState> read_tasks() {
  std::vector<TaskState> tasks;
  std::error_code ec;
  for (const auto& proc : fs::directory_iterator("/proc", ec)) {
    const std::string name = proc.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    std::error_code task_ec;
    for (const auto& task : fs::directory_iterator(proc.path() / "task", task_ec)) {
      std::ifstream in(task.path() / "stat");
      std::string line;
      if (!std::getline(in, line)) continue;
      if (auto t = parse_task_stat(pid, line)) tasks.push_back(*t);
    }
  }
  return tasks;
}

double runnable_other_threads(const std::vector<int>& cpus, const std::vector<pid_t>& own,
                              int samples, int interval_ms) {
  double sum = 0;
  for (int i = 0; i < samples; ++i) {
    if (i) std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
    sum += count_competing(read_tasks(), cpus, own);
  }
  return samples > 0 ? sum / samples : 0;
}

EnvironmentFingerprint start_fingerprint(int threads, const std::vector<int>& cpus,
                                         const std::vector<pid_t>& own) {
  EnvironmentFingerprint fp;
  fp.own_pids = own;
  const MachineFacts m = machine_facts();
  fp.cpu_model = m.cpu.model;
  fp.physical_cores = m.cpu.physical_cores;
  fp.logical_cpus = m.cpu.logical_cpus;
  fp.threads = threads;
  fp.cpus = cpus;
  fp.governor = m.governor;
  fp.load_average_1m = m.load_average_1m;
  std::string khz = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq");
  if (!khz.empty()) {
    try {
      fp.cpu_mhz = std::stod(khz) / 1000.0;
    } catch (const std::exception&) {
    }
  }
  if (fp.cpu_mhz == 0) {
    std::string mhz = proc_value("/proc/cpuinfo", "cpu MHz", ':');
    try {
      if (!mhz.empty()) fp.cpu_mhz = std::stod(mhz);
    } catch (const std::exception&) {
    }
  }
  fp.budget = cpu_budget(cpus);
  fp.frequency = read_frequency_limit(fp.budget.cpus.empty() ? 0 : fp.budget.cpus.front());
  const int cores =
      std::max(1, fp.budget.cores > 0 ? fp.budget.cores : static_cast<int>(fp.budget.cpus.size()));
  if (threads > cores) {
    fp.warnings.push_back({FlagCode::ThreadsExceedCores, fmt::format("threads exceed cores: {} threads on {} {}", threads, cores,
                                      cpus.empty() ? "physical cores" : "pinned cores")});
  }
  if (fp.frequency.max_mhz > 0 && fp.frequency.hardware_max_mhz > 0 &&
      fp.frequency.max_mhz < 0.95 * fp.frequency.hardware_max_mhz) {
    fp.warnings.push_back({FlagCode::FrequencyCapped,
                           fmt::format("CPU frequency capped: at most {:.0f} of {:.0f} MHz "
                                       "(cpufreq scaling_max_freq)",
                                       fp.frequency.max_mhz, fp.frequency.hardware_max_mhz)});
  }
  fp.runnable_before = runnable_other_threads(fp.budget.cpus, fp.own_pids);
  return fp;
}

void finish_fingerprint(EnvironmentFingerprint& fp) {
  fp.runnable_after = runnable_other_threads(fp.budget.cpus, fp.own_pids);
  const int cpus = !fp.budget.cpus.empty() ? static_cast<int>(fp.budget.cpus.size())
                   : fp.cpus.empty()       ? std::max(fp.logical_cpus, 1)
                                           : static_cast<int>(fp.cpus.size());
  // Busy: other processes' threads that want our CPUs and ours do not fit on them (half a CPU
  // of slack, as the count is sampled). Threads on CPUs the benchmark may not use are no
  // competitor, nor are the benchmark's own (its runtime's workers, the Python side).
  const double others = std::max(fp.runnable_before, fp.runnable_after);
  if (others + fp.threads > cpus + 0.5) {
    fp.warnings.push_back(
        {FlagCode::MachineBusy,
         fmt::format("machine busy: {:.1f} runnable threads of other processes on its CPUs "
                     "before / {:.1f} after the run, {} threads of ours, {} CPUs (load average "
                     "{:.2f})",
                     fp.runnable_before, fp.runnable_after, fp.threads, cpus, fp.load_average_1m)});
  }
}

}  // namespace turnkey
