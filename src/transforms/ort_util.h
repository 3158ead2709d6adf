// Internal to tk_transforms: ONNX Runtime sessions for the stages (optimize, check, compare).
#pragma once

#include <onnxruntime_cxx_api.h>

#include <filesystem>

namespace turnkey::transforms::detail {

// The process-wide ORT environment (ORT keeps one per process; this shares it).
Ort::Env& ort_env();

// Options with ORT's own logging silenced and one intra-op thread: the stages need a session,
// not speed, and must not start a thread per core.
Ort::SessionOptions base_session_options(GraphOptimizationLevel level);

// Creates a CPU session; throws Error(Runtime, "ONNX Runtime: <first line of ORT's message>").
Ort::Session open_session(const std::filesystem::path& path, const Ort::SessionOptions& options);

}  // namespace turnkey::transforms::detail
