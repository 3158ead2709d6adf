// --use-slurm: one Slurm job per input. Each job runs `turnkey __isolate`, the same supervisor
// the local mode uses (own session, precise timeout, memory and process limits), so results and
// statuses land in the shared cache dir exactly as in a local run; this side submits, waits with
// progress (polling `scontrol show job -o`, not `sbatch --wait`), and records jobs that Slurm
// cancelled or timed out before the job could write its own result.
#include <fmt/format.h>
#include <signal.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <thread>

#include "corpus_internal.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/error.h"
#include "turnkey/common/text.h"
#include "turnkey/common/files.h"
#include "turnkey/common/process.h"
#include "turnkey/engine/status.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string field(const std::string& text, const std::string& key) {
  size_t at = text.find(key + "=");
  if (at == std::string::npos) return "";
  at += key.size() + 1;
  size_t end = text.find_first_of(" \n", at);
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

bool is_terminal(const std::string& state) {
  for (const char* s : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                        "PREEMPTED", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED"}) {
    if (state == s) return true;
  }
  return false;
}

struct Job {
  const CorpusInput* in = nullptr;
  std::string id;
  std::string state = "PENDING";
  Clock::time_point submitted, running_since;
  bool done = false;
};

}  // namespace

std::vector<InputResult> run_on_slurm(const Corpus& corpus, const std::vector<CorpusInput>& todo);

std::vector<InputResult> run_on_slurm(const Corpus& corpus, const std::vector<CorpusInput>& todo) {
  std::vector<InputResult> results;
  const std::string sbatch = find_on_path("sbatch");
  const std::string scontrol = find_on_path("scontrol");
  const std::string scancel = find_on_path("scancel");
  if (sbatch.empty() || scontrol.empty() || scancel.empty()) {
    throw Error(ErrorKind::InvalidInput,
                "--use-slurm: sbatch, scontrol and scancel must be on PATH (Debian: slurm-client)");
  }
  const GlobalOptions& g = corpus.request().global;
  struct statfs fsinfo {};
  if (statfs(corpus.cache_dir().c_str(), &fsinfo) == 0 && fsinfo.f_type == 0x01021994 /*tmpfs*/) {
    std::cerr << fmt::format(
        "turnkey: warning: the cache dir {} is on tmpfs, local to this machine: jobs on other "
        "nodes cannot write their results into it\n",
        corpus.cache_dir().string());
  }
  const double timeout_s = corpus.limits().timeout_s;
  // Slurm's limit is whole minutes and enforced late; the job's own supervisor enforces the
  // precise timeout, Slurm's is the backstop.
  const int minutes = static_cast<int>(std::ceil(timeout_s / 60.0)) + 1;
  std::vector<Job> jobs;
  jobs.reserve(todo.size());
  for (const CorpusInput& in : todo) {
    std::error_code ec;
    fs::remove(in.record, ec);
    fs::remove(in.progress, ec);
    const fs::path script = corpus.inputs_dir() / (in.key + ".sbatch");
    std::string body = "#!/bin/sh\n# turnkey --use-slurm job for " + in.item.given + "\n";
    const fs::path request = corpus.inputs_dir() / "requests";
    body += fmt::format(
        "if [ ! -d {0} ]; then echo \"turnkey: the cache dir {1} is not visible on $(hostname): "
        "--use-slurm needs a cache dir shared with every node\" >&2; exit 3; fi\n",
        shell_quote(request.string()), corpus.cache_dir().string());
    body += "exec";
    for (const std::string& a : corpus.isolate_argv(in)) body += " " + shell_quote(a);
    body += "\n";
    write_file_atomic(script, body);
    std::vector<std::string> argv = {
        sbatch,       "--parsable",
        "--job-name", "turnkey-" + in.key,
        "--output",   (corpus.inputs_dir() / (in.key + ".slurm.txt")).string(),
        "--time",     std::to_string(minutes)};
    if (!g.slurm_partition.empty()) argv.insert(argv.end(), {"--partition", g.slurm_partition});
    std::string mem = g.slurm_memory;
    if (mem.empty() && corpus.limits().memory_bytes > 0) {
      mem = std::to_string((corpus.limits().memory_bytes >> 20) + 256) + "M";
    }
    if (!mem.empty()) argv.insert(argv.end(), {"--mem", mem});
    argv.push_back(script.string());
    CaptureResult r = run_capture(argv, 60);
    std::string out = r.out.substr(0, r.out.find('\n'));
    std::string id = out.substr(0, out.find(';'));
    bool ok = !r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && !id.empty() &&
              id.find_first_not_of("0123456789") == std::string::npos;
    if (!ok) {
      InputResult failed;
      failed.given = in.item.given;
      failed.status = "crashed";
      failed.stage = "submit";
      failed.error = "sbatch failed: " + first_line(r.out);
      failed.log = in.log;
      std::cerr << fmt::format("turnkey: {}: {}\n", in.item.given, failed.error);
      results.push_back(failed);
      continue;
    }
    Job job;
    job.in = &in;
    job.id = id;
    job.submitted = Clock::now();
    jobs.push_back(job);
    std::cerr << fmt::format("turnkey: {}: Slurm job {}\n", in.item.given, id);
  }

  std::string last_progress;
  bool cancelled_all = false;
  for (;;) {
    int pending = 0, running = 0, done = 0;
    if (g_corpus_stop_signal && !cancelled_all) {
      std::vector<std::string> argv = {scancel};
      for (const Job& j : jobs) {
        if (!j.done) argv.push_back(j.id);
      }
      if (argv.size() > 1) run_capture(argv, 30);
      cancelled_all = true;
    }
    for (Job& j : jobs) {
      if (j.done) {
        ++done;
        continue;
      }
      CaptureResult r = run_capture({scontrol, "show", "job", "-o", j.id}, 30);
      std::string state = field(r.out, "JobState");
      if (state.empty() && r.out.find("Invalid job id") != std::string::npos) state = "COMPLETED";
      if (!state.empty()) {
        if (state == "RUNNING" && j.state != "RUNNING") j.running_since = Clock::now();
        j.state = state;
      }
      // A backstop in case the job's own supervisor is stuck: Slurm's time limit is late.
      if (j.state == "RUNNING" &&
          std::chrono::duration<double>(Clock::now() - j.running_since).count() > timeout_s + 90) {
        run_capture({scancel, j.id}, 30);
      }
      if (!is_terminal(j.state)) {
        (j.state == "RUNNING" ? running : pending) += 1;
        continue;
      }
      j.done = true;
      ++done;
      const double duration = std::chrono::duration<double>(Clock::now() - j.submitted).count();
      json record;
      try {
        record = json_from_yaml(read_file(j.in->record));
      } catch (const Error&) {
      }
      InputResult r2;
      if (record.is_object() && record.contains("status") &&
          !(j.state == "TIMEOUT" && record.value("status", "") == "cancelled")) {
        r2.given = j.in->item.given;
        r2.status = record.value("status", "crashed");
        r2.signal = record.value("signal", 0);
        r2.stage = record.value("stage", "");
        r2.error = record.value("error", "");
        r2.log = j.in->log;
      } else {
        Ended ended;
        if (j.state == "CANCELLED") {
          ended.status = "cancelled";
          ended.detail = fmt::format("Slurm job {} was cancelled", j.id);
        } else if (j.state == "TIMEOUT" || j.state == "DEADLINE") {
          ended.status = "timeout";
          ended.detail = fmt::format("Slurm job {} reached its time limit", j.id);
        } else if (j.state == "OUT_OF_MEMORY") {
          ended.status = "out_of_memory";
          ended.detail = fmt::format("Slurm job {} ran out of memory", j.id);
        } else {
          ended.status = "crashed";
          ended.detail = fmt::format(
              "Slurm job {} ended {} without a result in the cache dir (is {} shared with the "
              "nodes? see {})",
              j.id, j.state, corpus.cache_dir().string(),
              (corpus.inputs_dir() / (j.in->key + ".slurm.txt")).string());
        }
        r2 = corpus.finalize(*j.in, ended, duration);
      }
      if (is_failure_status(r2.status)) {
        std::cerr << fmt::format(
            "turnkey: {}: {} (Slurm job {}, last stage: {}){}; log: {}\n", r2.given,
            status_display(r2.status, r2.signal), j.id, r2.stage.empty() ? "-" : r2.stage,
            r2.error.empty() ? "" : ": " + first_line(r2.error), r2.log.string());
      } else {
        std::cerr << fmt::format("turnkey: {}: {} (Slurm job {})\n", r2.given, r2.status, j.id);
      }
      results.push_back(r2);
    }
    std::string progress = fmt::format("turnkey: Slurm: {} pending, {} running, {} done of {}",
                                       pending, running, done, jobs.size());
    if (progress != last_progress) {
      std::cerr << progress << "\n" << std::flush;
      last_progress = progress;
    }
    if (done == static_cast<int>(jobs.size())) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return results;
}

}  // namespace turnkey::engine_internal
