// Internal to the engine: what a process running inputs tells its supervisor (supervisor.h),
// one JSON object per line of the progress file, and an input's outcome. The one schema for the
// producers (the pipeline, the input loop, the corpus worker and scheduler) and the consumer (the
// corpus records, corpus/corpus_records.cpp): no event key is spelled anywhere else.
// Value types; thread-safe.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "turnkey/catalog/status.h"

namespace turnkey::engine_internal {

// What one input came to: its status (none until decided; its name only in the JSON), the stage
// its first failure happened in, one line of why, the log that says more, and the builds it
// opened.
struct InputOutcome {
  std::optional<Status> status;
  std::string stage, error;
  std::filesystem::path log;
  int signal = 0;  // the signal that crashed it (> 0), else 0
  struct BuildRef {
    std::string build, dir;
    bool operator==(const BuildRef&) const = default;
  };
  std::vector<BuildRef> builds;

  // {status, stage, error, builds: [{build, dir}], log?, signal?}
  nlohmann::json to_json() const;
  // Missing or mistyped members are left empty (a torn line from a killed worker); a status
  // name the table does not know leaves the status none.
  static InputOutcome from_json(const nlohmann::json& j);
};

enum class ProgressKind {
  Start,      // the worker started (pid)
  Build,      // a build dir was opened (build, dir)
  Stage,      // a tool started (stage; build, "" while discovering)
  Benchmark,  // the benchmark slot was taken or given back (phase: start|end; cpus)
  Paused,     // the scheduler paused this input's builds while another benchmarks (for)
  Resumed,    // ... and let them go on
  Cpus,       // the CPUs this input's builds may use now (cpus; for)
  Done,       // the input ended (outcome)
};

struct ProgressEvent {
  ProgressKind kind = ProgressKind::Start;
  std::string build, dir, stage, phase, for_input;
  std::vector<int> cpus;  // CPU numbers
  long long pid = 0;
  InputOutcome outcome;

  static ProgressEvent start(long long pid);
  static ProgressEvent opened(const std::string& build, const std::string& dir);
  static ProgressEvent stage_started(const std::string& stage, const std::string& build = "");
  static ProgressEvent benchmark(const std::string& phase, const std::vector<int>& cpus = {});
  static ProgressEvent paused(const std::string& for_input);
  static ProgressEvent resumed();
  static ProgressEvent cpus_now(const std::vector<int>& cpus, const std::string& for_input = "");
  static ProgressEvent done(const InputOutcome& outcome);

  nlohmann::json to_json() const;
  // One line of the progress file: to_json() with the time ("t") and, for the scheduler's own
  // notes, who wrote it ("by": "parent"), newline-terminated.
  std::string line(bool by_parent = false) const;
  // nullopt for a line that is no event of this schema (unknown kind, not an object).
  static std::optional<ProgressEvent> from_json(const nlohmann::json& j);
};

}  // namespace turnkey::engine_internal
