// Where this process runs, for the records of a result and of a corpus
// input (docs/corpus_runs.md): the host, and inside a Slurm job the job and its node, as slurmd
// put them in the job's environment; with the CPUs the job holds there and the CPU set this
// process may run on (both from the measure layer's cpu_budget(), which also decides the default
// thread count). Cheap (environment, gethostname, a few reads of /proc and /sys); thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace turnkey {

// {"host", and inside a Slurm job "slurm_job_id", "slurm_node"}: keys left out when unknown.
nlohmann::json where_running();

// where_running() plus "cpus" (the CPU set, "0-3,8") and inside a Slurm job
// "slurm_cpus_on_node" (SLURM_CPUS_ON_NODE).
nlohmann::json current_allocation();

// {0, 1, 2, 5} -> "0-2,5" (ascending input; "" for none).
std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace turnkey
