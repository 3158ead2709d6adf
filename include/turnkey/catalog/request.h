// A run's request: the inputs, the global options and the sequence of tool calls the CLI (or the
// Python API, or a corpus worker) asks for. Data only; run/run.h runs it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace turnkey {

struct ToolCall {
  std::string name;
  nlohmann::json options = nlohmann::json::object();  // keys as in OptionSpec::key
};

struct GlobalOptions {
  std::vector<std::string> inputs;
  std::string cache_dir;             // as given ("" = TURNKEY_CACHE_DIR or default)
  std::vector<std::string> labels;   // key::value filters
  std::string rebuild = "if_needed";
  bool lean_cache = false;
  // --json (docs/report.md): one JSON document of the run's results on stdout; everything else,
  // what scripts print included, on stderr.
  bool json_output = false;
  std::string python;                // interpreter override
  std::string search_dir;            // classic -s: inputs relative to it
  // --sandbox (docs/sandbox.md): scripts run with no network, writing only to a staging folder and
  // the --sandbox-allow paths. TURNKEY_SANDBOX=True sets it too.
  bool sandbox = false;
  std::vector<std::string> sandbox_allow;

  // Corpus runs (docs/corpus_runs.md): each input in its own supervised process.
  bool process_isolation = false;
  bool use_slurm = false;
  int jobs = 1;                      // -j: inputs built at once (> 1 implies isolation)
  double timeout_s = 0;              // per input; 0 = TURNKEY_TIMEOUT_SECONDS or 3600
  std::string memory_limit;          // "4G", "512M", ... ("" = none)
  int max_processes = 0;             // per input; 0 = default (512)
  bool retry_failed = false;         // resume: run inputs whose earlier result was a failure
  // --use-slurm (docs/corpus_runs.md#slurm---use-slurm): where jobs go, how they hold nodes.
  std::string slurm_partition, slurm_memory;    // sbatch --partition / --mem
  std::string slurm_account, slurm_constraint;  // sbatch --account / --constraint
  std::string slurm_exclusive = "benchmark";    // whole node for: benchmark (jobs that
                                                // benchmark), always, never
  int slurm_nodes = 0;    // jobs queued or running at once (whole nodes when exclusive); 0 = all
  int slurm_retries = 2;  // times an input whose job's node failed is run again elsewhere
  double slurm_controller_timeout_s = 600;  // silence of the controller before giving up
};

struct RunRequest {
  GlobalOptions global;
  // The tool sequence. A first tool named "auto" (classic grammar) is replaced per input by
  // discover (.py), load-onnx (.onnx); sequence tools that do not apply are skipped.
  std::vector<ToolCall> sequence;
  std::string command_line;
  // The id of the run's record in the cache (cache/build_cache.h record_run): set by a corpus
  // parent, which writes the record once, for its workers; "" = the run writes it itself.
  std::string run_id;
};

}  // namespace turnkey
