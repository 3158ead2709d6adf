// ONNX Runtime through its C++ API, in-process. Registered as "ort".
#pragma once

#include "turnkey/runtime/runtime.h"

namespace turnkey {

const Runtime& ort_runtime();

}  // namespace turnkey
