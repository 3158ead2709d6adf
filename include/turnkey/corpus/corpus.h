// Corpus runs (docs/corpus_runs.md): every input in its own supervised process (locally, up to
// -j at a time, benchmarks one at a time), or in its own Slurm job; per-input records in
// <cache>/inputs/ make a rerun resume; a closing summary counts inputs per status.
// Main thread only (it forks and reaps).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "turnkey/catalog/request.h"

namespace turnkey {

struct InputItem;
namespace engine_internal {
class Supervisor;
}  // namespace engine_internal

// --process-isolation, --use-slurm or -j above 1.
bool is_corpus_run(const GlobalOptions& global);

// Runs the request as a corpus run. Exit code as run_sequence. With `inputs`, appends what each
// input came to: {input, status, stage, error, builds: [{build, dir}], earlier} (--json).
int run_corpus(const RunRequest& request, nlohmann::json* inputs = nullptr);

// "512M", "4G", "1.5GiB", "1000000" (bytes) -> bytes; K/M/G/T are powers of 1024.
// Throws Error(InvalidInput) naming the value.
int64_t parse_size(const std::string& text);

// The per-input timeout: --timeout, else TURNKEY_TIMEOUT_SECONDS, else 3600.
double corpus_timeout_s(const GlobalOptions& global);

// Hidden entry points of the turnkey binary, run by the corpus parent (never by users):
//   turnkey __worker --request FILE --item JSON --progress FILE [--control-fd N]
//   turnkey __isolate --request FILE --item JSON     (the body of one Slurm job)
// The worker reads its request and item, opens the link to its parent and hands them to
// `run_input` (the run room's input loop, run/run.h), whose exit code it returns.
using WorkerInputFn = std::function<int(const RunRequest&, const InputItem&,
                                        engine_internal::Supervisor&)>;
int corpus_worker_main(const std::vector<std::string>& args, const WorkerInputFn& run_input);
int corpus_isolate_main(const std::vector<std::string>& args);

}  // namespace turnkey
