// Internal to the engine: what the parts of a corpus run share. corpus.cpp (the run),
// corpus_request.cpp (request <-> JSON), corpus_records.cpp (per-input files, the worker command
// line, resume, and the finalization that turns however a worker ended into one status),
// corpus_summary.cpp, corpus_local.cpp (the local scheduler), slurm.cpp (the Slurm loop) and
// corpus_worker.cpp (the hidden entry points).
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "corpus/isolation.h"
#include "pipeline/progress.h"
#include "turnkey/catalog/request.h"
#include "turnkey/inputs/inputs.h"

namespace turnkey::engine_internal {

struct CorpusInput {
  InputItem item;
  std::string key;                              // <stem>_<hash8 of path and ::hash filter>
  std::filesystem::path record, log, progress;  // <cache>/inputs/<key>.{yaml,log,progress.jsonl}
};

struct InputResult {
  std::string given;
  Status status = Status::Crashed;  // its name only where it is written or shown
  int signal = 0;
  std::string stage, error;
  std::filesystem::path log;
  bool earlier = false;  // taken from an earlier run's record (resume)
  std::vector<std::string> builds;  // the builds the input started (names in the cache dir)
};

class Corpus {
 public:
  // `write_request`: the parent stores the request for its workers; a worker/job reads it.
  Corpus(const RunRequest& request, bool write_request);

  const RunRequest& request() const { return request_; }
  const std::filesystem::path& cache_dir() const { return cache_dir_; }
  const std::filesystem::path& inputs_dir() const { return inputs_dir_; }
  const Limits& limits() const { return limits_; }

  CorpusInput input_for(const InputItem& item) const;
  std::vector<std::string> worker_argv(const CorpusInput& in, int control_fd) const;
  std::vector<std::string> isolate_argv(const CorpusInput& in) const;

  // An earlier run's result for this input when it is complete and still valid (same request,
  // same input content, builds still there) and not a failure to retry.
  std::optional<InputResult> earlier_result(const CorpusInput& in) const;
  // The input's record as a worker or job wrote it: null when there is none or it is unreadable.
  nlohmann::json read_record(const CorpusInput& in) const;
  // The result a record holds (status, stage, error, signal, log, builds); none when the record
  // names no status of the table (no record, or a damaged one).
  std::optional<InputResult> result_of_record(const CorpusInput& in,
                                              const nlohmann::json& record) const;

  // Reads the worker's progress, decides the input's status, marks builds the worker left
  // unfinished with it (and the last stage reached), and writes the input record, with the keys
  // of `extra` (an object: where it ran, its Slurm jobs) added.
  InputResult finalize(const CorpusInput& in, const Ended& ended, double duration_s,
                       const nlohmann::json& extra = nlohmann::json::object()) const;
  // Adds the keys of `extra` to the input's record (one a job wrote); false when there is no
  // record to add them to.
  bool annotate_record(const CorpusInput& in, const nlohmann::json& extra) const;

 private:
  // The input's record (finalize's last part).
  void write_record(const CorpusInput& in, const InputResult& r, double duration_s,
                    const nlohmann::json& extra) const;

  RunRequest request_;
  std::filesystem::path cache_dir_, inputs_dir_, request_file_, exe_;
  std::string request_key_;
  Limits limits_;
};

// Request <-> JSON (the worker's copy of what the user asked for).
nlohmann::json request_to_json(const RunRequest& request);
RunRequest request_from_json(const nlohmann::json& j);
nlohmann::json item_to_json(const InputItem& item);
InputItem item_from_json(const nlohmann::json& j);

// Prints the closing summary table; returns the exit code (1 when any input failed).
int print_summary(const std::vector<InputResult>& results, const std::filesystem::path& inputs_dir,
                  double wall_s);

// The local loop (corpus_local.cpp): up to -j supervised workers, one benchmark at a time.
// `total_inputs` counts the inputs of the run (for progress lines).
std::vector<InputResult> run_local(const Corpus& corpus, const std::vector<CorpusInput>& todo,
                                   size_t total_inputs);

// The Slurm loop (slurm.cpp): one job per input, waits with progress, collects results.
std::vector<InputResult> run_on_slurm(const Corpus& corpus, const std::vector<CorpusInput>& todo);

// Set by SIGINT/SIGTERM during a corpus run (0 = none); the loops stop their workers and jobs.
extern std::atomic<int> g_corpus_stop_signal;
void on_corpus_stop_signal(int sig);  // a signal handler: stores sig

// A worker dead of SIGINT or SIGTERM while the run is being stopped died of the stop itself: a
// Ctrl-C reaches the whole foreground process group, workers included, and scancel signals every
// process of a job, so the worker can die and be reaped before this process's own handler has run
// (waits up to 200 ms for it). Such an end is `cancelled`, with why(the stop signal) as its
// detail; any other end is kept.
Ended stopped_from_outside(Ended ended, const std::function<std::string(int)>& why);

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace turnkey::engine_internal
