// openvino: the ONNX file read by OpenVINO's ONNX frontend and compiled for its CPU plugin, run
// through its C++ API (ov::InferRequest::infer): no Python in the loop. OpenVINO lives in the
// module turnkey_openvino.so (openvino_module.cpp), built when scripts/setup-openvino has
// installed it and loaded on first use. --rt-args: hint=latency|throughput, streams=N|auto,
// pinning=true|false, precision=f32|bf16|f16, reshape=true|false, threads=N.
#pragma once

#include "turnkey/runtime/runtime.h"

namespace turnkey {

const Runtime& openvino_runtime();

}  // namespace turnkey
