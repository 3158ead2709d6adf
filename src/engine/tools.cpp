#include "turnkey/engine/tools.h"

#include <algorithm>

namespace turnkey {

using T = OptionSpec::Type;
using nlohmann::json;

const std::vector<ToolSpec>& tool_specs() {
  static const std::vector<ToolSpec> specs = {
      {"discover",
       ToolGroup::First,
       "Run a Python script and discover the PyTorch models it calls",
       {{"--script-args", "script_args", T::String,
         "Arguments for the script, split like a shell (no shell involved)", ""},
        {"--max-depth", "max_depth", T::Int,
         "Also discover sub-modules down to this depth (0 = top-level models only)", 0}}},
      {"load-onnx",
       ToolGroup::First,
       "Load an ONNX file: checker, parameters, ops, opset, inputs and outputs",
       {{"--input-shapes", "input_shapes", T::String,
         "Shapes for inputs with symbolic dims: name:1x3x224x224,other:1x128", ""}}},
      {"export-pytorch",
       ToolGroup::Sequence,
       "Export a discovered PyTorch model to ONNX (torch.onnx.export) and save its outputs",
       {{"--opset", "opset", T::Int,
         "ONNX opset (default 17, or TURNKEY_ONNX_OPSET; torch 1.13 supports 7-17)", nullptr}}},
      {"benchmark",
       ToolGroup::Sequence,
       "Measure latency and throughput on a runtime and device",
       {{"--device", "device", T::String, "Device to benchmark on", "x86"},
        {"--runtime", "runtime", T::String, "Runtime (see system-info for availability)", "ort"},
        {"--iterations", "iterations", T::Int, "Timed iterations", 100},
        {"--warmup", "warmup", T::Int, "Untimed warm-up iterations after the cold run", 10},
        {"--threads", "threads", T::Int, "Intra-op threads (0 = physical cores)", 0},
        {"--rt-args", "rt_args", T::List,
         "Runtime arguments key=value (ort: threads, inter_op_threads, "
         "graph_optimization_level=disabled|basic|extended|all, execution_mode)",
         json::array()}}},
      {"version", ToolGroup::Management, "Print the turnkey version", {}},
      {"cache", ToolGroup::Management, "Manage the cache (location)", {}},
      {"system-info", ToolGroup::Management,
       "Print CPU, memory, OS, and the versions of ONNX Runtime, torch and onnx found", {}},
  };
  return specs;
}

const ToolSpec* find_tool(const std::string& name) {
  for (const ToolSpec& s : tool_specs()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const char* tool_group_title(ToolGroup group) {
  switch (group) {
    case ToolGroup::First: return "First tools (start a sequence)";
    case ToolGroup::Sequence: return "Sequence tools";
    case ToolGroup::Management: return "Management tools";
  }
  return "";
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
      }
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::string best;
  size_t best_d = std::max<size_t>(3, name.size() / 3) + 1;
  for (const std::string& c : candidates) {
    size_t d = distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

json default_tool_options(const ToolSpec& spec) {
  json o = json::object();
  for (const OptionSpec& opt : spec.options) {
    if (!opt.default_value.is_null()) o[opt.key] = opt.default_value;
  }
  return o;
}

}  // namespace turnkey
