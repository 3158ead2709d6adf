// Internal to the engine: where this process runs, for the records of a result and of a corpus
// input (docs/corpus_runs.md): the host, and inside a Slurm job the job, its node and the CPUs
// the job holds there, as slurmd put them in the job's environment, with the CPU set this
// process may run on. Reading them is cheap (environment, gethostname, sched_getaffinity) and
// thread-safe. Thread counts are not decided here (the measure layer's thread default is).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace turnkey::engine_internal {

// {"host", "cpus" ("0-3,8"), and inside a Slurm job "slurm_job_id", "slurm_node",
// "slurm_cpus_on_node"}. Keys outside a job are left out rather than empty.
nlohmann::json current_allocation();

// {0, 1, 2, 5} -> "0-2,5" (ascending input; "" for none).
std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace turnkey::engine_internal
