// torchscript: the model traced by the Python side (torch.jit.trace, saved to the build dir) and
// run by LibTorch's C++ API: no Python in the timed loop. LibTorch's headers stay in this
// folder's one translation unit. --rt-args: freeze=true (torch::jit::freeze),
// optimize=true (torch::jit::optimize_for_inference, implies freeze).
#pragma once

#include "turnkey/runtime/runtime.h"

namespace turnkey {

const Runtime& torchscript_runtime();

}  // namespace turnkey
