// Internal to the engine: what the input loop and the build runner share during one run (the
// request, the cache dir, the build monitor, the worker's link to its supervisor and the input's
// outcome in worker mode). Not thread-safe: one run, one thread.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "console/monitor.h"
#include "pipeline/progress.h"
#include "turnkey/common/text.h"
#include "turnkey/catalog/request.h"
#include "turnkey/catalog/status.h"

namespace turnkey::engine_internal {

class Supervisor;


struct RunContext {
  RunContext(const RunRequest& request, Supervisor* link);

  const RunRequest& request;
  std::filesystem::path cache_dir;
  Monitor monitor;
  Supervisor* link = nullptr;
  bool sandbox = false;  // --sandbox or TURNKEY_SANDBOX (discovery/sandbox.h)
  // The input's outcome: first failure status, the stage it happened in, and the builds the
  // input started.
  InputOutcome outcome;
  bool any_failed = false;
  bool interrupted = false;  // a script stopped by Ctrl-C (KeyboardInterrupt, SIGINT): no more inputs

  // The id of the run's record (cache/build_cache.h RunRecord) that the builds name: the corpus
  // parent's (request.run_id), else written on the first call, so a run that builds nothing
  // leaves none. "" when the request has no command line (the Python API).
  const std::string& run_id();

  // "turnkey: <text>" on stderr, after what stdout has so far.
  void notice(const std::string& text) const;
  // Records the input's first failure for the supervisor (worker mode); later ones are ignored.
  // `signal` (> 0): the signal that crashed it, from a wait status. `log`: the failure's own log
  // (the one its block names), so the corpus summary names it too.
  void note_failure(Status status, const std::string& stage, const std::string& error,
                    int signal = 0, const std::filesystem::path& log = {});
  // A progress event for the supervisor (worker mode only).
  void progress(const ProgressEvent& event) const;

 private:
  std::optional<std::string> run_id_;
};

// The run's last line, saying what happened: "Done: all 3 inputs finished without a failure.",
// "Done with failures: 2 of 3 inputs failed (their blocks above say why).", or "Interrupted: ...".
std::string closing_line(size_t inputs, size_t failed, bool interrupted, size_t ran);

// Holds the corpus parent's benchmark slot for its lifetime (no-op without a link): builds of
// other inputs are paused while this one measures. Released on every path out.
class BenchmarkSlot {
 public:
  BenchmarkSlot(Supervisor* link, int threads);
  ~BenchmarkSlot();
  BenchmarkSlot(const BenchmarkSlot&) = delete;
  BenchmarkSlot& operator=(const BenchmarkSlot&) = delete;

 private:
  Supervisor* link_ = nullptr;
};

}  // namespace turnkey::engine_internal
