// torch-eager and torch-compiled: the live model in the script's Python process, timed there
// (torch.inference_mode, perf_counter_ns around each call) in batches the C++ loop asks for.
#pragma once

#include "turnkey/runtime/runtime.h"

namespace turnkey {

const Runtime& torch_eager_runtime();
const Runtime& torch_compiled_runtime();

}  // namespace turnkey
