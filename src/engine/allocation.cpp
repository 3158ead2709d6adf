#include "allocation.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "turnkey/measure/system_info.h"

namespace turnkey::engine_internal {

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

nlohmann::json current_allocation() {
  nlohmann::json a = nlohmann::json::object();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) a["host"] = std::string(host);
  a["cpus"] = cpu_list_text(allowed_cpus());
  const char* job = std::getenv("SLURM_JOB_ID");
  if (job && *job) {
    a["slurm_job_id"] = std::string(job);
    if (const char* node = std::getenv("SLURMD_NODENAME")) a["slurm_node"] = std::string(node);
    // Recorded as Slurm gave it; a value that is not a count is left out (never an error here).
    if (const char* cpus = std::getenv("SLURM_CPUS_ON_NODE")) {
      char* end = nullptr;
      long n = std::strtol(cpus, &end, 10);
      if (end != cpus && *end == 0 && n > 0) a["slurm_cpus_on_node"] = n;
    }
  }
  return a;
}

}  // namespace turnkey::engine_internal
