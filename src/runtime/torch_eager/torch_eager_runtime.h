// torch-eager and torch-compiled: the live model in the script's Python process, timed there
// (torch.inference_mode, perf_counter_ns around each call; on nvidia CUDA events, docs/gpu.md)
// in batches the C++ loop asks for.
#pragma once

#include "turnkey/runtime/runtime.h"

namespace turnkey {

const Runtime& torch_eager_runtime();
// The public torch version of the run's Python side ("2.6.0"; Debian's "+git..." suffix dropped):
// the live process's own when a script runs, else its interpreter's remembered probe (no `import
// torch`). "" with `why` set when there is none.
std::string python_side_torch_version(const PythonSide& side, std::string* why = nullptr);
const Runtime& torch_compiled_runtime();
// A session that times the live model in the script's process (bench_prepare with `mode`:
// eager, compiled, keras), its samples taken at the source. `runtime` names it in errors.
std::unique_ptr<Session> python_timed_session(const LiveModel& model, const std::string& runtime,
                                              const std::string& mode,
                                              const RuntimeOptions& options);

}  // namespace turnkey
