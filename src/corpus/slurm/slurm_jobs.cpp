#include "corpus/slurm/slurm_jobs.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdlib>
#include <sstream>

#include "turnkey/common/error.h"
#include "turnkey/common/process.h"
#include "turnkey/common/text.h"

namespace turnkey::engine_internal {

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

bool succeeded(const CaptureResult& r) {
  return !r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
}

// The line of a command's output that says what went wrong: sbatch may print several
// ("error: ... DNS SRV lookup failed", ..., "fatal: Could not establish a configuration
// source"); the fatal one, else the last error, is the reason.
std::string error_line(const std::string& out) {
  std::istringstream in(out);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find("fatal") != std::string::npos) return trim(line);
    if (line.find("error") != std::string::npos || line.find("failure") != std::string::npos) {
      last = trim(line);
    }
  }
  return last.empty() ? first_line(out) : last;
}

}  // namespace

std::string scontrol_field(const std::string& line, const std::string& key) {
  // Fields are "Key=value" separated by spaces; a key is matched only at a field's start (so
  // "Reason" does not match inside "StateReason").
  const std::string needle = key + "=";
  size_t at = 0;
  while ((at = line.find(needle, at)) != std::string::npos) {
    if (at == 0 || line[at - 1] == ' ' || line[at - 1] == '\n') break;
    at += needle.size();
  }
  if (at == std::string::npos) return "";
  at += needle.size();
  const size_t end = line.find_first_of(" \n", at);
  std::string value = line.substr(at, end == std::string::npos ? std::string::npos : end - at);
  return value == "(null)" || value == "None" ? "" : value;
}

SlurmJobInfo parse_scontrol_job(const std::string& text) {
  SlurmJobInfo job;
  job.id = scontrol_field(text, "JobId");
  if (text.find("Invalid job id") != std::string::npos && job.id.empty()) {
    job.purged = true;
    return job;
  }
  job.state = scontrol_field(text, "JobState");
  job.reason = scontrol_field(text, "Reason");
  job.node = scontrol_field(text, "BatchHost");
  if (job.node.empty()) job.node = scontrol_field(text, "NodeList");
  const std::string exit = scontrol_field(text, "ExitCode");  // "3:0"
  const size_t colon = exit.find(':');
  if (colon != std::string::npos && all_digits(exit.substr(0, colon)) &&
      all_digits(exit.substr(colon + 1))) {
    job.exit_code = std::atoi(exit.substr(0, colon).c_str());
    job.exit_signal = std::atoi(exit.substr(colon + 1).c_str());
  }
  job.start_time = scontrol_field(text, "StartTime");
  job.end_time = scontrol_field(text, "EndTime");
  if (job.start_time == "Unknown") job.start_time.clear();
  if (job.end_time == "Unknown") job.end_time.clear();
  return job;
}

std::map<std::string, std::string> parse_squeue_states(const std::string& text) {
  std::map<std::string, std::string> states;
  std::istringstream in(text);
  std::string id, state;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (!(fields >> id >> state)) continue;
    std::string extra;
    if (fields >> extra) continue;
    if (all_digits(id) &&
        state.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == std::string::npos) {
      states[id] = state;
    }
  }
  return states;
}

std::string parse_sbatch_id(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    const std::string id = line.substr(0, line.find(';'));
    if (all_digits(id)) return id;
  }
  return "";
}

const std::vector<JobEndRow>& job_end_table() {
  // clang-format off
  static const std::vector<JobEndRow> kRows = {
      // end                 states                        status              again  exclude limit
      {JobEnd::NodeLost,    {"NODE_FAIL", "BOOT_FAIL"},    Status::NodeFailed,  true,  false, false,
       "{described}"},
      {JobEnd::NodeUnfit,   {},                            Status::NodeFailed,  true,  true,  false,
       "{described}"},
      {JobEnd::Preempted,   {"PREEMPTED"},                 Status::Cancelled,   true,  false, false,
       "{described}"},
      {JobEnd::Cancelled,   {"CANCELLED"},                 Status::Cancelled,   false, false, false,
       "Slurm job {job} was cancelled"},
      {JobEnd::Timeout,     {"TIMEOUT", "DEADLINE"},       Status::Timeout,     false, false, true,
       "Slurm job {job} reached its time limit"},
      {JobEnd::OutOfMemory, {"OUT_OF_MEMORY"},             Status::OutOfMemory, false, false, false,
       "Slurm job {job} ran out of memory"},
      {JobEnd::Other,       {"COMPLETED", "FAILED", "SPECIAL_EXIT", "REVOKED"},
                                                           Status::Crashed,     false, false, false,
       "{described} without a result in the cache dir (is {cache_dir} shared with the nodes? see "
       "{job_output})"},
  };
  // clang-format on
  return kRows;
}

const JobEndRow& job_end_row(JobEnd end) {
  for (const JobEndRow& row : job_end_table()) {
    if (row.end == end) return row;
  }
  return job_end_table().back();  // every JobEnd has a row (the unit test checks)
}

namespace {

const JobEndRow* row_of_state(const std::string& state) {
  for (const JobEndRow& row : job_end_table()) {
    for (const char* s : row.states) {
      if (state == s) return &row;
    }
  }
  return nullptr;
}

}  // namespace

bool is_terminal_job_state(const std::string& state) { return row_of_state(state) != nullptr; }

JobEnd classify_job_end(const SlurmJobInfo& job) {
  const JobEndRow* row = row_of_state(job.state);
  if (!row) return JobEnd::Other;
  if (job.state == "FAILED" && (job.reason == "JobLaunchFailure" ||
                                (job.exit_signal == 0 && (job.exit_code == kJobExitNoCache ||
                                                          job.exit_code == kJobExitNoBinary)))) {
    return JobEnd::NodeUnfit;
  }
  return row->end;
}

std::string describe_job_end(const SlurmJobInfo& job) {
  const std::string where = job.node.empty() ? "" : " on node " + job.node;
  switch (classify_job_end(job)) {
    case JobEnd::NodeLost:
      return fmt::format("Slurm job {}{} ended {}: the node was lost", job.id, where, job.state);
    case JobEnd::NodeUnfit:
      if (job.exit_code == kJobExitNoCache && job.reason != "JobLaunchFailure") {
        return fmt::format("Slurm job {}{} could not see or write the cache dir there", job.id,
                           where);
      }
      if (job.exit_code == kJobExitNoBinary && job.reason != "JobLaunchFailure") {
        return fmt::format("Slurm job {}{} could not run the turnkey binary there", job.id, where);
      }
      return fmt::format(
          "Slurm job {} could not start{} (JobLaunchFailure: most often its output file, in the "
          "cache dir, cannot be created there)",
          job.id, where);
    case JobEnd::Preempted:
      return fmt::format("Slurm job {}{} was preempted", job.id, where);
    default:
      return fmt::format("Slurm job {}{} ended {}{}", job.id, where,
                         job.state.empty() ? "unknown" : job.state,
                         job.reason.empty() ? "" : " (" + job.reason + ")");
  }
}

std::vector<std::string> shape_options(const SlurmJobShape& shape) {
  std::vector<std::string> o = {"--time", std::to_string(shape.time_minutes), "--nodes", "1",
                                "--no-requeue"};
  if (shape.exclusive) o.push_back("--exclusive");
  if (!shape.partition.empty()) o.insert(o.end(), {"--partition", shape.partition});
  if (!shape.account.empty()) o.insert(o.end(), {"--account", shape.account});
  if (!shape.constraint.empty()) o.insert(o.end(), {"--constraint", shape.constraint});
  if (!shape.memory.empty()) o.insert(o.end(), {"--mem", shape.memory});
  return o;
}

std::vector<std::string> sbatch_options(const SlurmJobShape& shape, const std::string& job_name,
                                        const std::string& output_file,
                                        const std::vector<std::string>& exclude_nodes) {
  std::vector<std::string> o = {"--parsable", "--job-name", job_name, "--output", output_file};
  for (std::string& s : shape_options(shape)) o.push_back(std::move(s));
  if (!exclude_nodes.empty()) {
    std::string list;
    for (const std::string& n : exclude_nodes) list += (list.empty() ? "" : ",") + n;
    o.insert(o.end(), {"--exclude", list});
  }
  return o;
}

SlurmClient::SlurmClient()
    : sbatch_(find_on_path("sbatch")),
      squeue_(find_on_path("squeue")),
      scontrol_(find_on_path("scontrol")),
      scancel_(find_on_path("scancel")) {
  if (sbatch_.empty() || squeue_.empty() || scontrol_.empty() || scancel_.empty()) {
    throw Error(ErrorKind::InvalidInput,
                "--use-slurm: sbatch, squeue, scontrol and scancel must be on PATH (Debian: "
                "slurm-client)");
  }
}

std::string SlurmClient::submit(const std::vector<std::string>& options, const std::string& script,
                                std::string& error) const {
  std::vector<std::string> argv = {sbatch_};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(script);
  const CaptureResult r = run_capture(argv, 60);
  const std::string id = succeeded(r) ? parse_sbatch_id(r.out) : "";
  if (id.empty()) {
    error =
        r.timed_out ? "sbatch did not answer within 60 s" : "sbatch failed: " + error_line(r.out);
  }
  return id;
}

std::string SlurmClient::refusal(const std::vector<std::string>& options,
                                 const std::string& script) const {
  std::vector<std::string> argv = {sbatch_, "--test-only", "--output", "/dev/null"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(script);
  const CaptureResult r = run_capture(argv, 60);
  if (succeeded(r)) return "";
  return r.timed_out ? "sbatch --test-only did not answer within 60 s" : error_line(r.out);
}

std::map<std::string, std::string> SlurmClient::states(const std::vector<std::string>& ids,
                                                       double timeout_s, std::string& error) const {
  std::string list;
  for (const std::string& id : ids) list += (list.empty() ? "" : ",") + id;
  // --states=all: ended jobs too, while the controller still knows them (MinJobAge).
  // No ids: the user's own jobs, a question that tells whether the controller answers at all.
  const CaptureResult r =
      ids.empty()
          ? run_capture({squeue_, "-h", "--me", "-o", "%i %T"}, timeout_s)
          : run_capture({squeue_, "-h", "--states=all", "-j", list, "-o", "%i %T"}, timeout_s);
  if (succeeded(r)) {
    error.clear();
    return parse_squeue_states(r.out);
  }
  error = r.timed_out ? fmt::format("squeue did not answer within {:g} s", timeout_s)
                      : "squeue failed: " + error_line(r.out);
  return {};
}

SlurmJobInfo SlurmClient::show(const std::string& id) const {
  const CaptureResult r = run_capture({scontrol_, "show", "job", "-o", id}, 30);
  SlurmJobInfo job = parse_scontrol_job(r.out);
  if (job.id.empty()) job.id = id;
  return job;
}

void SlurmClient::cancel(const std::vector<std::string>& ids) const {
  if (ids.empty()) return;
  std::vector<std::string> argv = {scancel_};
  argv.insert(argv.end(), ids.begin(), ids.end());
  run_capture(argv, 30);
}

}  // namespace turnkey::engine_internal
