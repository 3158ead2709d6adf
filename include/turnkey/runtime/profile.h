// What a runtime's own profiler says a model's calls spent per operator (benchmark --profile,
// docs/measurement.md): the raw numbers a profiled Session hands back, and the reader of ONNX
// Runtime's profile file. Plain values; the reader is a pure function, thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace turnkey {

// One graph node (ONNX Runtime) or one operator (torch.profiler, which reports ops, not nodes)
// over every profiled call.
struct NodeTime {
  std::string node;     // node name ("" when the graph leaves it unnamed; torch: the op)
  std::string op_type;  // "Conv", "FusedConv" (a fused node), "aten::conv2d"
  double total_ms = 0;  // time in this node's kernels over all profiled calls (exclusive)
  int64_t count = 0;    // kernel executions over all profiled calls
};

struct OpProfile {
  std::string profiler;  // "ONNX Runtime profiler", "torch.profiler"
  int calls = 0;         // profiled calls; a warm-up call before them is never counted
  double run_ms = 0;     // wall time of the profiled calls as the profiler saw it; 0 = unknown
  bool per_node = true;  // false: nodes are ops (torch), there is no by-node view
  std::vector<NodeTime> nodes;
  std::filesystem::path raw_file;  // the profiler's own output, as written
};

// Reads ONNX Runtime's profile (the Chrome trace JSON that SessionOptions::EnableProfiling
// writes): the "Node" events named <node>_kernel_time, summed per node, and the "model_run"
// events. Node events inside the first `skip_runs` model_run events (warm-up) are left out, and
// so are those runs. Throws Error(InvalidInput) with a one-line reason when the text is not such
// a profile.
OpProfile parse_ort_profile(std::string_view json_text, int skip_runs);

}  // namespace turnkey
