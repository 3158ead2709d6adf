// Values across the openvino module's edge (part of turnkey_openvino.so): turnkey's host tensors
// as OpenVINO tensors and back, and OpenVINO's per-layer counters summed into an OpProfile.
// Pure functions; OpenVINO's headers stay in the module.
#pragma once

#include <filesystem>
#include <openvino/openvino.hpp>
#include <string>
#include <unordered_set>
#include <vector>

#include "turnkey/common/tensor.h"
#include "turnkey/runtime/profile.h"

namespace turnkey::openvino_tensors {

// The position of the prepared input whose name is one of `names` (an OpenVINO port's tensor
// names). Throws Error(Runtime) naming the port when none is, and Error(InvalidInput) for a value
// OpenVINO cannot take (a sequence, an optional, strings).
size_t prepared_input(const std::unordered_set<std::string>& names,
                      const std::vector<HostTensor>& inputs);

// An OpenVINO tensor over the host tensor's bytes (no copy: `t` must outlive it).
ov::Tensor wrap(HostTensor& t);

// A copy of an OpenVINO tensor, named `name`.
HostTensor to_host(const ov::Tensor& t, const std::string& name);

// The counters of `per_call` (ov::InferRequest::get_profiling_info after each profiled call)
// summed per node, executed layers only; writes them as JSON to `raw_file` (OpenVINO has no
// profile file of its own). run_ms is left 0 for the caller.
OpProfile sum_profile(const std::vector<std::vector<ov::ProfilingInfo>>& per_call,
                      const std::filesystem::path& raw_file);

}  // namespace turnkey::openvino_tensors
