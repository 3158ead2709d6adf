// keras: a Keras model's own eager call in the script's Python process, timed there as
// torch-eager times a PyTorch module (perf_counter_ns around each call, raw samples handed over
// in batches the C++ loop asks for). See docs/keras.md.
#pragma once

#include "turnkey/runtime/runtime.h"

namespace turnkey {

const Runtime& keras_runtime();

}  // namespace turnkey
