// The engine's door: runs one sequence of tools over every input and prints each model's result
// block as the reference tool did. A failure of one input or model becomes a result with a
// status and the run goes on.
#pragma once

#include <string>
#include <vector>

#include "turnkey/catalog/request.h"

namespace turnkey {

// Returns the process exit code: 0 when every input and model succeeded, 1 otherwise.
int run_sequence(const RunRequest& request);

// The hidden `turnkey __worker` entry (corpus.h): one input of a corpus run, in this process.
int run_worker_main(const std::vector<std::string>& args);

}  // namespace turnkey
