// --use-slurm: one Slurm job per input. Each job runs `turnkey __isolate`, the same supervisor
// the local mode uses (own session, precise timeout, memory and process limits), so results and
// statuses land in the shared cache dir exactly as in a local run. This side submits (at most
// --slurm-nodes jobs at once; a job that benchmarks gets its node to itself), waits with progress
// (one squeue call per poll, not `sbatch --wait`), runs an input again on another node when its
// job's node was lost or could not use the cache dir (up to --slurm-retries), and records what
// Slurm did with every job of the input.
#include <fmt/format.h>
#include <sys/vfs.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <iostream>
#include <limits>
#include <set>
#include <thread>

#include "corpus/corpus_internal.h"
#include "corpus/slurm/slurm_jobs.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/text.h"
#include "turnkey/catalog/status.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Task {
  const CorpusInput* in = nullptr;
  json jobs = json::array();         // every job of this input: {job_id, node, state, ...}
  std::vector<std::string> lost_on;  // nodes its jobs were lost on: it avoids them
  std::string job_id;                // the current job, "" while queued
  std::string state;
  Clock::time_point first_submitted, running_since;
  bool started = false, done = false;
};

bool sequence_benchmarks(const RunRequest& request) {
  return std::any_of(request.sequence.begin(), request.sequence.end(),
                     [](const ToolCall& c) { return c.name == "benchmark"; });
}

SlurmJobShape job_shape(const Corpus& corpus) {
  const GlobalOptions& g = corpus.request().global;
  SlurmJobShape shape;
  // A benchmark must not share its node with anything: not with another turnkey job, not with
  // another user's. Builds alone do not need that (--slurm-exclusive always/never overrides).
  shape.exclusive = g.slurm_exclusive == "always" ||
                    (g.slurm_exclusive == "benchmark" && sequence_benchmarks(corpus.request()));
  // Slurm's limit is whole minutes and enforced late; the job's own supervisor enforces the
  // precise timeout, Slurm's is the backstop.
  shape.time_minutes = static_cast<int>(std::ceil(corpus.limits().timeout_s / 60.0)) + 1;
  shape.memory = g.slurm_memory;
  if (shape.memory.empty() && corpus.limits().memory_bytes > 0) {
    shape.memory = std::to_string((corpus.limits().memory_bytes >> 20) + 256) + "M";
  }
  shape.partition = g.slurm_partition;
  shape.account = g.slurm_account;
  shape.constraint = g.slurm_constraint;
  return shape;
}

// The job's own script: checks what a node needs before running the supervisor, so that a node
// without the shared cache dir or binary says so (and is excluded) instead of failing the input.
std::string job_script(const Corpus& corpus, const CorpusInput& in) {
  const std::vector<std::string> argv = corpus.isolate_argv(in);
  const fs::path request_dir = corpus.inputs_dir() / "requests";
  std::string body = "#!/bin/sh\n# turnkey --use-slurm job for " + one_line(in.item.given) + "\n";
  body += fmt::format(
      "if [ ! -d {0} ]; then echo \"turnkey: node ${{SLURMD_NODENAME:-$(hostname)}}: the cache "
      "dir {1} is not visible here (--use-slurm needs a cache dir shared with every node)\" >&2; "
      "exit {2}; fi\n",
      shell_quote(request_dir.string()), shell_quote(corpus.cache_dir().string()), kJobExitNoCache);
  body += fmt::format(
      "if [ ! -x {0} ]; then echo \"turnkey: node ${{SLURMD_NODENAME:-$(hostname)}}: cannot run "
      "{0} here (--use-slurm needs the turnkey binary at the same path on every node)\" >&2; "
      "exit {1}; fi\n",
      shell_quote(argv.front()), kJobExitNoBinary);
  body += "exec";
  for (const std::string& a : argv) {
    body += ' ';
    body += shell_quote(a);
  }
  body += "\n";
  return body;
}

json job_entry(const SlurmJobInfo& job) {
  json j = {{"job_id", job.id}, {"node", job.node}, {"state", job.state}};
  if (!job.reason.empty()) j["reason"] = job.reason;
  if (job.exit_code >= 0) j["exit_code"] = job.exit_code;
  if (job.exit_signal > 0) j["exit_signal"] = job.exit_signal;
  if (!job.start_time.empty()) j["start"] = job.start_time;
  if (!job.end_time.empty()) j["end"] = job.end_time;
  return j;
}

class SlurmRun {
 public:
  SlurmRun(const Corpus& corpus, const std::vector<CorpusInput>& todo)
      : corpus_(corpus), shape_(job_shape(corpus)) {
    const GlobalOptions& g = corpus.request().global;
    max_active_ = g.slurm_nodes > 0 ? g.slurm_nodes : std::numeric_limits<int>::max();
    retries_ = g.slurm_retries;
    controller_timeout_s_ = g.slurm_controller_timeout_s;
    tasks_.reserve(todo.size());
    for (const CorpusInput& in : todo) {
      Task t;
      t.in = &in;
      tasks_.push_back(std::move(t));
    }
    for (size_t i = 0; i < tasks_.size(); ++i) queue_.push_back(i);
  }

  std::vector<InputResult> run();

 private:
  void check_options();
  std::string unfit_node_line(const SlurmJobInfo& job) const;
  void submit(size_t index);
  bool poll();  // true when a job changed state
  bool collect_from_records();  // while the controller is silent: jobs that wrote their record
  void give_up();               // the controller was silent for too long
  // `record`: the input's record when the caller has read it already.
  void ended(Task& t, const SlurmJobInfo& job, const json* record = nullptr);
  void finish(Task& t, const InputResult& r);
  void fail(Task& t, Status status, const std::string& detail);
  double seconds(const Task& t) const { return seconds_since(t.first_submitted); }
  // sbatch reads %-patterns in the whole path: a cache dir with a '%' in its name stays itself.
  std::string output_file(const Task& t) const {
    std::string dir;
    for (char c : corpus_.inputs_dir().string())
      dir += c == '%' ? std::string("%%") : std::string(1, c);
    return dir + "/" + t.in->key + ".slurm-%j.txt";
  }

  const Corpus& corpus_;
  SlurmClient slurm_;
  SlurmJobShape shape_;
  int max_active_ = 0, retries_ = 0, active_ = 0;
  std::vector<Task> tasks_;
  std::deque<size_t> queue_;        // tasks waiting to be submitted, in order
  std::vector<std::string> unfit_;  // nodes that could not use the cache dir: no more jobs
  std::vector<InputResult> results_;
  bool cancelled_ = false;
  double controller_timeout_s_ = 600;
  Clock::time_point last_answer_ = Clock::now();  // the controller's last answer to squeue
  std::string silence_;  // why squeue failed on the last poll, "" when it answered
};

std::string SlurmRun::unfit_node_line(const SlurmJobInfo& job) const {
  const std::string cache = corpus_.cache_dir().string();
  const std::string rest = "no more jobs of this run go there";
  if (job.reason != "JobLaunchFailure" && job.exit_code == kJobExitNoBinary) {
    return fmt::format(
        "node {} cannot run the turnkey binary {} (Slurm job {}); {} (--use-slurm needs it at "
        "the same path on every node)",
        job.node, corpus_.isolate_argv(*tasks_.front().in).front(), job.id, rest);
  }
  if (job.reason != "JobLaunchFailure") {
    return fmt::format(
        "node {} cannot see or write the cache dir {} (Slurm job {}); {} (--use-slurm needs a "
        "cache dir every node can write)",
        job.node, cache, job.id, rest);
  }
  return fmt::format(
      "node {} cannot create files in the cache dir {}: Slurm job {} could not start there "
      "(JobLaunchFailure; its output file is in the cache dir); {} (--use-slurm needs a cache "
      "dir every node can write)",
      job.node, cache, job.id, rest);
}

void SlurmRun::check_options() {
  // One question to Slurm before the first job: a bad partition, account or constraint is the
  // user's mistake, said once, rather than a failure per input.
  const fs::path script = corpus_.inputs_dir() / (tasks_.front().in->key + ".sbatch");
  write_file_atomic(script, job_script(corpus_, *tasks_.front().in));
  const std::vector<std::string> options = shape_options(shape_);
  const std::string refusal = slurm_.refusal(options, script.string());
  if (!refusal.empty()) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("--use-slurm: Slurm refuses jobs of this run (sbatch {}): {}",
                            fmt::join(options, " "), refusal));
  }
}

void SlurmRun::submit(size_t index) {
  Task& t = tasks_[index];
  const fs::path script = corpus_.inputs_dir() / (t.in->key + ".sbatch");
  std::error_code ec;
  fs::remove(t.in->record, ec);
  fs::remove(t.in->progress, ec);
  try {
    write_file_atomic(script, job_script(corpus_, *t.in));
  } catch (const Error& e) {  // a full or read-only cache dir: this input fails, the run goes on
    if (!t.started) t.first_submitted = Clock::now();
    t.started = true;
    fail(t, Status::Crashed, "writing its Slurm job script: " + first_line(e.what()));
    return;
  }
  std::vector<std::string> exclude = unfit_;
  for (const std::string& n : t.lost_on) {
    if (std::find(exclude.begin(), exclude.end(), n) == exclude.end()) exclude.push_back(n);
  }
  std::string error;
  const std::string id =
      slurm_.submit(sbatch_options(shape_, "turnkey-" + t.in->key, output_file(t), exclude),
                    script.string(), error);
  if (!t.started) t.first_submitted = Clock::now();
  t.started = true;
  if (id.empty()) {
    if (t.jobs.empty()) {
      InputResult failed;
      failed.given = t.in->item.given;
      failed.status = Status::Crashed;
      failed.stage = "submit";
      failed.error = error;
      failed.log = t.in->log;
      std::cerr << fmt::format("turnkey: {}: {}\n", failed.given, error);
      finish(t, failed);
    } else {
      fail(t, Status::NodeFailed,
           fmt::format("{}; running it again on another node failed: {}",
                       t.jobs.back().value("summary", ""), error));
    }
    return;
  }
  t.job_id = id;
  t.state = "PENDING";
  ++active_;
  std::cerr << fmt::format(
      "turnkey: {}: Slurm job {}{}\n", t.in->item.given, id,
      t.jobs.empty() ? "" : fmt::format(" (attempt {} of {})", t.jobs.size() + 1, retries_ + 1));
}

void SlurmRun::finish(Task& t, const InputResult& r) {
  t.done = true;
  if (!t.jobs.empty()) {
    json jobs = t.jobs;
    for (json& j : jobs) j.erase("summary");
    corpus_.annotate_record(*t.in, {{"slurm_jobs", jobs}});
  }
  const std::string job = t.job_id.empty() ? "" : "Slurm job " + t.job_id;
  if (is_failure_status(r.status)) {
    std::cerr << fmt::format("turnkey: {}: {} ({}{}last stage: {}){}; log: {}\n", r.given,
                             status_display(r.status, r.signal), job, job.empty() ? "" : ", ",
                             r.stage.empty() ? "-" : r.stage,
                             r.error.empty() ? "" : ": " + first_line(r.error), r.log.string());
  } else {
    std::cerr << fmt::format("turnkey: {}: {} ({})\n", r.given, status_name(r.status), job);
  }
  results_.push_back(r);
}

void SlurmRun::fail(Task& t, Status status, const std::string& detail) {
  Ended e;
  e.status = status;
  e.detail = detail;
  InputResult r = corpus_.finalize(*t.in, e, t.started ? seconds(t) : 0);
  finish(t, r);
}

void SlurmRun::ended(Task& t, const SlurmJobInfo& job, const json* record_read) {
  --active_;
  json entry = job_entry(job);
  entry["summary"] = describe_job_end(job);
  t.jobs.push_back(entry);
  const json record = record_read ? *record_read : corpus_.read_record(*t.in);
  const JobEndRow& row = job_end_row(classify_job_end(job));
  // The job's own record says how the input ended, even when Slurm then lost the node. Slurm's
  // time limit sends SIGTERM, which the job's supervisor records as cancelled: it is a timeout.
  if (std::optional<InputResult> r = corpus_.result_of_record(*t.in, record);
      r && !(row.time_limit && r->status == Status::Cancelled)) {
    finish(t, *r);
    return;
  }
  if (row.exclude_node && !job.node.empty() &&
      std::find(unfit_.begin(), unfit_.end(), job.node) == unfit_.end()) {
    unfit_.push_back(job.node);
    std::cerr << "turnkey: " << unfit_node_line(job) << "\n";
  }
  if (row.run_again && !cancelled_ && static_cast<int>(t.jobs.size()) <= retries_) {
    if (!job.node.empty()) t.lost_on.push_back(job.node);
    std::cerr << fmt::format("turnkey: {}: {}; running it again elsewhere\n", t.in->item.given,
                             describe_job_end(job));
    t.job_id.clear();
    queue_.push_front(static_cast<size_t>(&t - tasks_.data()));
    return;
  }
  std::string detail = fmt::format(
      fmt::runtime(row.detail), fmt::arg("job", job.id),
      fmt::arg("described", describe_job_end(job)),
      fmt::arg("cache_dir", corpus_.cache_dir().string()),
      fmt::arg("job_output",
               (corpus_.inputs_dir() / (t.in->key + ".slurm-" + job.id + ".txt")).string()));
  if (row.status == Status::NodeFailed && t.jobs.size() > 1) {
    detail =
        fmt::format("{} ({} jobs, each lost its node or could not use it)", detail, t.jobs.size());
  }
  fail(t, row.status, detail);
}

bool SlurmRun::poll() {
  std::vector<std::string> ids;
  for (const Task& t : tasks_) {
    if (!t.done && !t.job_id.empty()) ids.push_back(t.job_id);
  }
  // With no job out, the controller is asked only while it was silent: inputs wait to be
  // submitted until it answers again.
  if (ids.empty() && silence_.empty()) return false;
  // One question waits at most half the silence allowed, so a hung controller is noticed in time.
  const double squeue_timeout_s = std::clamp(controller_timeout_s_ / 2, 1.0, 30.0);
  std::string error;
  const std::map<std::string, std::string> states = slurm_.states(ids, squeue_timeout_s, error);
  if (!error.empty()) {
    // The controller is down or hung: asking it per job would only wait longer (scontrol per
    // job, 30 s each). Jobs keep running on their nodes meanwhile and write their records.
    if (silence_.empty()) {
      std::cerr << fmt::format(
          "turnkey: Slurm: the controller does not answer ({}); reading finished jobs' results "
          "from the cache dir, waiting up to {:g} s (--slurm-controller-timeout)\n",
          error, controller_timeout_s_);
    }
    silence_ = error;
    return collect_from_records();
  }
  if (!silence_.empty()) {
    std::cerr << fmt::format("turnkey: Slurm: the controller answers again after {:.0f} s\n",
                             seconds_since(last_answer_));
  }
  silence_.clear();
  last_answer_ = Clock::now();
  bool changed = false;
  const double timeout_s = corpus_.limits().timeout_s;
  for (Task& t : tasks_) {
    if (t.done || t.job_id.empty()) continue;
    auto it = states.find(t.job_id);
    std::string state = it == states.end() ? "" : it->second;
    // Ended, or not listed (the controller forgot the job): scontrol says.
    SlurmJobInfo job;
    if (state.empty() || is_terminal_job_state(state)) {
      job = slurm_.show(t.job_id);
      if (job.purged) job.state = state.empty() ? "COMPLETED" : state;
      state = job.state;
    }
    if (state.empty()) continue;  // the controller did not answer: ask again next time
    if (state == "RUNNING" && t.state != "RUNNING") t.running_since = Clock::now();
    changed = changed || state != t.state;
    t.state = state;
    // A backstop in case the job's own supervisor is stuck: Slurm's time limit is late.
    if (t.state == "RUNNING" && seconds_since(t.running_since) > timeout_s + 90) {
      slurm_.cancel({t.job_id});
    }
    if (is_terminal_job_state(t.state)) ended(t, job);
  }
  return changed;
}

bool SlurmRun::collect_from_records() {
  bool changed = false;
  for (Task& t : tasks_) {
    if (t.done || t.job_id.empty()) continue;
    // submit() removed the input's record before the job started: one there now is the job's.
    const json record = corpus_.read_record(*t.in);
    if (!record.contains("status")) continue;
    SlurmJobInfo job;
    job.id = t.job_id;
    job.state = "UNKNOWN";
    job.reason = "the controller did not answer; the job's result was read from the cache dir";
    ended(t, job, &record);
    changed = true;
  }
  return changed;
}

void SlurmRun::give_up() {
  const std::string why = fmt::format("the Slurm controller did not answer for {:.0f} s ({})",
                                      seconds_since(last_answer_), silence_);
  // Its jobs are left alone: they run on their nodes whatever the controller does, and a job
  // that ends writes its result into the cache dir, where a later run finds it.
  for (Task& t : tasks_) {
    if (t.done || t.job_id.empty()) continue;
    fail(t, Status::SlurmUnreachable,
         fmt::format("{}; Slurm job {} may still run and write its result into the cache dir "
                     "(a later run of the same inputs takes it, or runs the input again)",
                     why, t.job_id));
  }
  for (size_t i : queue_) {
    fail(tasks_[i], Status::SlurmUnreachable, "not submitted: " + why);
  }
  queue_.clear();
}

std::vector<InputResult> SlurmRun::run() {
  if (tasks_.empty()) return {};
  check_options();
  std::string last_progress;
  int poll_ms = 300;
  for (;;) {
    if (g_corpus_stop_signal && !cancelled_) {
      cancelled_ = true;
      std::vector<std::string> ids;
      for (const Task& t : tasks_) {
        if (!t.done && !t.job_id.empty()) ids.push_back(t.job_id);
      }
      slurm_.cancel(ids);
      for (size_t i : queue_) {
        fail(tasks_[i], Status::Cancelled,
             "turnkey was interrupted before this input's Slurm job was submitted");
      }
      queue_.clear();
    }
    // Nothing is submitted while the controller is silent (sbatch would fail each input).
    while (!cancelled_ && silence_.empty() && active_ < max_active_ && !queue_.empty()) {
      const size_t next = queue_.front();
      queue_.pop_front();
      submit(next);
    }
    const bool changed = poll();
    int pending = static_cast<int>(queue_.size()), running = 0, done = 0;
    for (const Task& t : tasks_) {
      if (t.done) {
        ++done;
      } else if (!t.job_id.empty()) {
        (t.state == "RUNNING" || t.state == "COMPLETING" ? running : pending) += 1;
      }
    }
    const std::string progress =
        fmt::format("turnkey: Slurm: {} pending, {} running, {} done of {}", pending, running, done,
                    tasks_.size());
    if (progress != last_progress) {
      std::cerr << progress << "\n" << std::flush;
      last_progress = progress;
    }
    if (done == static_cast<int>(tasks_.size())) break;
    if (!silence_.empty() && seconds_since(last_answer_) > controller_timeout_s_) {
      give_up();
      break;
    }
    // Quick while jobs change state, then gentler on the controller: one squeue per 2 s at most
    // while nothing happens (a long run of long jobs).
    poll_ms = changed ? 300 : std::min(2000, poll_ms * 3 / 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
  return results_;
}

}  // namespace

std::vector<InputResult> run_on_slurm(const Corpus& corpus, const std::vector<CorpusInput>& todo) {
  struct statfs fsinfo {};
  if (statfs(corpus.cache_dir().c_str(), &fsinfo) == 0 && fsinfo.f_type == 0x01021994 /*tmpfs*/) {
    std::cerr << fmt::format(
        "turnkey: warning: the cache dir {} is on tmpfs, local to this machine: jobs on other "
        "nodes cannot write their results into it\n",
        corpus.cache_dir().string());
  }
  SlurmRun run(corpus, todo);
  return run.run();
}

}  // namespace turnkey::engine_internal
