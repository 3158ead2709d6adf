// Internal to the engine: the Slurm commands a --use-slurm run uses (sbatch, squeue, scontrol,
// scancel), the sbatch options it asks for, and how it reads what they print
// (docs/corpus_runs.md#slurm---use-slurm). The parsing and the judgement of an ended job are pure
// functions (unit-tested with Slurm's own output); SlurmClient runs the commands (not
// thread-safe: it starts child processes).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "turnkey/catalog/request.h"
#include "turnkey/catalog/status.h"

namespace turnkey::engine_internal {

// Exit codes of a job's own script when its node cannot take part (the parent excludes that
// node): the cache dir is not there or not writable; the turnkey binary cannot be run there.
inline constexpr int kJobExitNoCache = 3;
inline constexpr int kJobExitNoBinary = 4;

// One job as `scontrol show job -o` reports it.
struct SlurmJobInfo {
  std::string id;
  std::string state;    // JobState: PENDING, RUNNING, COMPLETED, NODE_FAIL, ...; "" = unknown
  std::string reason;   // Reason: NodeDown, JobLaunchFailure, NonZeroExitCode, None, ...
  std::string node;     // BatchHost, else NodeList; "" before it ran
  int exit_code = -1;   // ExitCode=N:S -> N (-1 when not reported)
  int exit_signal = 0;  //                -> S
  std::string start_time, end_time;  // StartTime, EndTime as Slurm prints them (local time)
  bool purged = false;  // "Invalid job id": ended long enough ago that the controller forgot it
};

// Field `key` of a `scontrol show job -o` line ("" when absent or "(null)").
std::string scontrol_field(const std::string& line, const std::string& key);
SlurmJobInfo parse_scontrol_job(const std::string& text);
// Lines "ID STATE" (squeue -o '%i %T') -> id -> state; other lines (warnings) are skipped.
std::map<std::string, std::string> parse_squeue_states(const std::string& text);
// The job id `sbatch --parsable` printed ("12" or "12;cluster"), "" when there is none.
std::string parse_sbatch_id(const std::string& text);

// Why a job ended, for one that left no record of its own.
enum class JobEnd {
  NodeLost,     // NODE_FAIL, BOOT_FAIL: the node went away under it; run again elsewhere
  NodeUnfit,    // it could not start or see the cache on that node (FAILED with
                // JobLaunchFailure, our exit codes 3 and 4): exclude the node for the rest of
                // the run, run again elsewhere
  Preempted,    // PREEMPTED: not the input's fault; run again
  Cancelled,    // CANCELLED (scancel, or turnkey was interrupted)
  Timeout,      // TIMEOUT, DEADLINE
  OutOfMemory,  // OUT_OF_MEMORY
  Other,        // COMPLETED or FAILED without a result, and anything else
};

// The one table of how a Slurm job ends (docs/corpus_runs.md#slurm---use-slurm): per way, the
// JobStates Slurm ends a job in that way and everything the Slurm run decides from it. Every
// state a job ends in for good is in exactly one row; NodeUnfit has none (FAILED, refined by
// classify_job_end).
struct JobEndRow {
  JobEnd end;
  std::vector<const char*> states;
  Status status;      // the input's, when the job left no record of its own
  bool run_again;     // not the input's fault: run it again on another node (--slurm-retries)
  bool exclude_node;  // the node cannot take part: no more jobs of this run go there
  // Slurm's time limit ended it: the job's supervisor records that SIGTERM as cancelled, which
  // is this end, not the input's record.
  bool time_limit;
  // The status's detail, a format with {job} (the id), {described} (describe_job_end's line),
  // {cache_dir} and {job_output} (the job's output file).
  const char* detail;
};
const std::vector<JobEndRow>& job_end_table();
// The row of `end`.
const JobEndRow& job_end_row(JobEnd end);

// True once a job has ended for good (a state of job_end_table()); COMPLETING, REQUEUED and the
// like are not ended: its processes may still run.
bool is_terminal_job_state(const std::string& state);
// The row's way for the job's state (Other for a state the table does not name), with FAILED
// told apart: a launch failure or our exit codes 3 and 4 are NodeUnfit.
JobEnd classify_job_end(const SlurmJobInfo& job);
// One line for the ended job: "Slurm job 12 on node n1 ended NODE_FAIL (the node was lost)".
std::string describe_job_end(const SlurmJobInfo& job);

// What every job of a run asks sbatch for.
struct SlurmJobShape {
  bool exclusive = false;  // the whole node (--exclusive)
  int time_minutes = 1;    // --time
  std::string memory;      // --mem ("" = none)
  std::string partition, account, constraint;
};
// The options a shape stands for (what a user may need to see when Slurm refuses them).
std::vector<std::string> shape_options(const SlurmJobShape& shape);
// The sbatch options of one job (without the script): name, output file, shape, and the nodes
// it must avoid. Always --no-requeue: turnkey runs a job again itself, on another node, and
// says so, rather than Slurm re-running it silently under the same id.
std::vector<std::string> sbatch_options(const SlurmJobShape& shape, const std::string& job_name,
                                        const std::string& output_file,
                                        const std::vector<std::string>& exclude_nodes);

class SlurmClient {
 public:
  // Finds sbatch, squeue, scontrol and scancel on PATH; throws Error(InvalidInput) naming
  // what is missing.
  SlurmClient();
  // Submits `script` with `options`; returns the job id, or "" with `error` set to one line.
  std::string submit(const std::vector<std::string>& options, const std::string& script,
                     std::string& error) const;
  // sbatch --test-only with `options` (shape_options): "" when Slurm would take such a job,
  // else its one-line refusal (bad partition, account, constraint, no controller, ...).
  std::string refusal(const std::vector<std::string>& options, const std::string& script) const;
  // The states of `ids` in one squeue call; ids Slurm no longer lists are absent. `error` is ""
  // when squeue answered, else its one-line reason (no controller, timed out after 30 s, ...).
  // No ids: the states of the user's current jobs (whether the controller answers at all).
  // squeue gets `timeout_s` to answer (a stopped controller can keep it waiting for good).
  std::map<std::string, std::string> states(const std::vector<std::string>& ids, double timeout_s,
                                            std::string& error) const;
  SlurmJobInfo show(const std::string& id) const;
  void cancel(const std::vector<std::string>& ids) const;

 private:
  std::string sbatch_, squeue_, scontrol_, scancel_;
};

}  // namespace turnkey::engine_internal
