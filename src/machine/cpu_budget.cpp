#include "turnkey/machine/cpu_budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "turnkey/common/text.h"
#include "turnkey/machine/system_info.h"

namespace turnkey {

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool read_number(const fs::path& path, double& value) {
  std::ifstream in(path);
  return static_cast<bool>(in >> value);
}

// "0-3,6" -> {0,1,2,3,6}; stops at the first malformed item (kernel lists are well formed).
std::vector<int> parse_kernel_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream items(trim(text));
  std::string item;
  while (std::getline(items, item, ',')) {
    const size_t dash = item.find('-');
    char* end = nullptr;
    const long lo = std::strtol(item.c_str(), &end, 10);
    if (end == item.c_str()) break;
    const long hi = dash == std::string::npos ? lo : std::strtol(item.c_str() + dash + 1, &end, 10);
    for (long c = lo; c <= hi && c - lo < 65536; ++c) out.push_back(static_cast<int>(c));
  }
  return out;
}

// mountinfo escapes blanks in paths as octal (\040).
std::string unescape_octal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto octal = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '7'; };
    if (s[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool has_token(const std::string& list, const std::string& token) {
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item == token) return true;
  }
  return false;
}

}  // namespace

namespace cpu_budget_detail {

std::vector<int> online_cpus(const fs::path& sys) {
  return parse_kernel_list(slurp(sys / "devices/system/cpu/online"));
}

int physical_cores_of(const fs::path& sys, const std::vector<int>& cpus) {
  std::set<std::pair<long, long>> cores;
  for (int c : cpus) {
    const fs::path topo = sys / fmt::format("devices/system/cpu/cpu{}/topology", c);
    double package = 0, core = 0;
    if (!read_number(topo / "physical_package_id", package) ||
        !read_number(topo / "core_id", core)) {
      continue;
    }
    cores.insert({std::lround(package), std::lround(core)});
  }
  return static_cast<int>(cores.size());
}

std::vector<fs::path> cpu_cgroup_dirs(const std::string& proc_self_cgroup,
                                      const std::string& proc_self_mountinfo) {
  // The process's path in each hierarchy: v1 "4:cpu,cpuacct:/a/b", v2 "0::/a/b".
  std::string v1_path, v2_path;
  bool has_v1 = false, has_v2 = false;
  std::stringstream lines(proc_self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {
      has_v2 = true;
      v2_path = path;
    } else if (has_token(controllers, "cpu")) {
      has_v1 = true;
      v1_path = path;
    }
  }
  std::vector<fs::path> dirs;
  std::stringstream mounts(proc_self_mountinfo);
  while (std::getline(mounts, line)) {
    std::stringstream fields(line);
    std::vector<std::string> f;
    std::string word;
    while (fields >> word) f.push_back(word);
    const auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || std::distance(dash, f.end()) < 4) continue;
    const std::string& fstype = *(dash + 1);
    const std::string& superopts = *(dash + 3);
    const std::string mount_root = unescape_octal(f[3]);
    const fs::path mount_point = unescape_octal(f[4]);
    std::string path;
    if (fstype == "cgroup" && has_v1 && has_token(superopts, "cpu")) {
      path = v1_path;
    } else if (fstype == "cgroup2" && has_v2) {
      path = v2_path;
    } else {
      continue;
    }
    // The mount shows the hierarchy from mount_root down (a container sees its own subtree).
    std::string relative = path;
    if (mount_root != "/") {
      if (path.compare(0, mount_root.size(), mount_root) != 0) continue;
      relative = path.substr(mount_root.size());
    }
    fs::path dir = mount_point / fs::path(relative).relative_path();
    for (;;) {
      dirs.push_back(dir);
      if (dir == mount_point || !dir.has_parent_path() || dir.parent_path() == dir) break;
      dir = dir.parent_path();
    }
  }
  return dirs;
}

double quota_of(const fs::path& dir, std::string* what) {
  double quota = 0, period = 0;
  if (read_number(dir / "cpu.cfs_quota_us", quota) &&
      read_number(dir / "cpu.cfs_period_us", period)) {
    if (quota > 0 && period > 0) {
      if (what) *what = fmt::format("cgroup v1 {}: {:g}/{:g} us", dir.string(), quota, period);
      return quota / period;
    }
    return 0;
  }
  std::stringstream max(slurp(dir / "cpu.max"));  // "max 100000" or "50000 100000"
  std::string q;
  if (max >> q >> period && q != "max" && period > 0) {
    quota = std::atof(q.c_str());
    if (quota > 0) {
      if (what) *what = fmt::format("cgroup v2 {}: {:g}/{:g} us", dir.string(), quota, period);
      return quota / period;
    }
  }
  return 0;
}

ThrottleCounters throttle_of(const fs::path& dir) {
  ThrottleCounters t;
  std::stringstream stat(slurp(dir / "cpu.stat"));
  std::string key;
  double value = 0;
  while (stat >> key >> value) {
    t.readable = true;
    if (key == "nr_periods") t.periods = static_cast<int64_t>(value);
    if (key == "nr_throttled") t.throttled = static_cast<int64_t>(value);
    if (key == "throttled_time") t.throttled_ms = value / 1e6;  // v1: ns
    if (key == "throttled_usec") t.throttled_ms = value / 1e3;  // v2: us
  }
  return t;
}

void decide_default(CpuBudget& b) {
  std::vector<std::string> why;
  int threads = b.cores > 0 ? b.cores : static_cast<int>(b.cpus.size());
  why.push_back(fmt::format("{} physical core{} of the {} CPU{} {}", threads,
                            threads == 1 ? "" : "s", b.cpus.size(), b.cpus.size() == 1 ? "" : "s",
                            b.pinned ? "pinned" : "this process may run on"));
  if (b.machine_cores_cpuinfo > 0 && b.machine_cores_kernel > 0 &&
      b.machine_cores_cpuinfo != b.machine_cores_kernel) {
    why.push_back(fmt::format(
        "libcpuinfo counts {} core{} on the machine, the kernel {}: the "
        "kernel's topology is used",
        b.machine_cores_cpuinfo, b.machine_cores_cpuinfo == 1 ? "" : "s", b.machine_cores_kernel));
  }
  if (b.quota_cpus > 0) {
    // More threads than the quota's CPUs only queue for quota (and get throttled together).
    const int cap = std::max(1, static_cast<int>(std::floor(b.quota_cpus + 1e-6)));
    if (cap < threads) {
      threads = cap;
      why.push_back(fmt::format("capped at {} by the CPU quota of {:.2f} CPUs ({})", cap,
                                b.quota_cpus, b.quota_source));
    }
  }
  if (b.slurm_cpus > 0 && b.slurm_cpus < threads) {
    threads = b.slurm_cpus;
    why.push_back(
        fmt::format("capped at {} by the Slurm allocation (SLURM_CPUS_ON_NODE)", b.slurm_cpus));
  }
  b.default_threads = std::max(1, threads);
  b.basis = fmt::format("{}", fmt::join(why, "; "));
}

}  // namespace cpu_budget_detail

CpuBudget cpu_budget(const std::vector<int>& pinned) {
  using namespace cpu_budget_detail;
  CpuBudget b;
  b.pinned = !pinned.empty();
  b.cpus = b.pinned ? pinned : allowed_cpus();
  const fs::path sys = "/sys";
  b.cores = physical_cores_of(sys, b.cpus);
  b.machine_cores_kernel = physical_cores_of(sys, online_cpus(sys));
  b.machine_cores_cpuinfo = cpu_facts().cpuinfo_cores;
  for (const fs::path& dir :
       cpu_cgroup_dirs(slurp("/proc/self/cgroup"), slurp("/proc/self/mountinfo"))) {
    std::string what;
    const double q = quota_of(dir, &what);
    if (q > 0 && (b.quota_cpus == 0 || q < b.quota_cpus)) {
      b.quota_cpus = q;
      b.quota_source = what;
    }
  }
  if (std::getenv("SLURM_JOB_ID")) {
    if (const char* n = std::getenv("SLURM_CPUS_ON_NODE")) b.slurm_cpus = std::max(0, std::atoi(n));
  }
  decide_default(b);
  return b;
}

int default_threads(const std::vector<int>& pinned) { return cpu_budget(pinned).default_threads; }

ThrottleCounters read_throttle_counters() {
  using namespace cpu_budget_detail;
  ThrottleCounters sum;
  for (const fs::path& dir :
       cpu_cgroup_dirs(slurp("/proc/self/cgroup"), slurp("/proc/self/mountinfo"))) {
    const ThrottleCounters t = throttle_of(dir);
    if (!t.readable) continue;
    sum.readable = true;
    sum.periods += t.periods;
    sum.throttled += t.throttled;
    sum.throttled_ms += t.throttled_ms;
  }
  return sum;
}

FrequencyLimit read_frequency_limit(int cpu) {
  FrequencyLimit f;
  const fs::path dir = fmt::format("/sys/devices/system/cpu/cpu{}/cpufreq", cpu);
  double khz = 0;
  if (read_number(dir / "scaling_max_freq", khz)) f.max_mhz = khz / 1000;
  if (read_number(dir / "cpuinfo_max_freq", khz)) f.hardware_max_mhz = khz / 1000;
  return f;
}

}  // namespace turnkey
