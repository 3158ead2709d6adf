#include "pipeline/tool_impls.h"

#include "turnkey/common/error.h"

namespace turnkey::engine_internal {

const std::vector<ToolImpl>& tool_impls() {
  static const std::vector<ToolImpl> kImpls = {
      {"export-pytorch", tool_export_pytorch, export_versions, resolve_export_options,
       {"exporter", "exporter_version", "exporter_fallback", "opset", "exporter_fixes",
        "float64_left_out"},
       export_uses_script_process},
      {"optimize-ort", tool_optimize_ort, ort_versions, nullptr,
       {"optimize_level", "optimize_nodes_before", "optimize_nodes_after",
        "optimized_model_portable", "ort_preoptimized"}},
      {"convert-fp16", tool_convert_fp16, onnx_versions, nullptr,
       {"fp16_ties", "fp16_worst_rel_error", "fp16_worst_cosine", "fp16_keep_io_types"}},
      {"check-onnx", tool_check_onnx, onnx_and_ort_versions},
      {"python-stage", tool_python_stage, python_stage_versions, nullptr, {},
       python_stage_uses_script_process},
      {"benchmark", tool_benchmark, nullptr, nullptr, {}, benchmark_uses_script_process},
  };
  return kImpls;
}

const ToolImpl& tool_impl(const std::string& name) {
  for (const ToolImpl& impl : tool_impls()) {
    if (name == impl.name) return impl;
  }
  throw Error(ErrorKind::Internal, "no implementation of tool " + name);
}

}  // namespace turnkey::engine_internal
