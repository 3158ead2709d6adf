#include "turnkey/machine/allocation.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "turnkey/machine/cpu_budget.h"

namespace turnkey {

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

nlohmann::json where_running() {
  nlohmann::json a = nlohmann::json::object();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) a["host"] = std::string(host);
  const char* job = std::getenv("SLURM_JOB_ID");
  if (job && *job) {
    a["slurm_job_id"] = std::string(job);
    if (const char* node = std::getenv("SLURMD_NODENAME")) a["slurm_node"] = std::string(node);
  }
  return a;
}

nlohmann::json current_allocation() {
  nlohmann::json a = where_running();
  const CpuBudget budget = cpu_budget();
  a["cpus"] = cpu_list_text(budget.cpus);
  if (budget.slurm_cpus > 0) a["slurm_cpus_on_node"] = budget.slurm_cpus;
  return a;
}

}  // namespace turnkey
