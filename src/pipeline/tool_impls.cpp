#include "pipeline/tool_impls.h"

#include "turnkey/common/error.h"

namespace turnkey::engine_internal {

const std::vector<ToolImpl>& tool_impls() {
  static const std::vector<ToolImpl> kImpls = {
      {"export-pytorch", tool_export_pytorch, export_versions, resolve_export_options},
      {"optimize-ort", tool_optimize_ort, ort_versions},
      {"convert-fp16", tool_convert_fp16, onnx_versions},
      {"check-onnx", tool_check_onnx, onnx_and_ort_versions},
      {"python-stage", tool_python_stage, python_stage_versions},
      {"benchmark", tool_benchmark},
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
