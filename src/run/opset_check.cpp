// The export opset against the run's exporter, checked when the command is read: torch 1.13
// writes opsets 7-17, torch 2.6 7-20, and an opset outside that range would otherwise fail every
// model's export, after every script has run.
#include <fmt/format.h>

#include "stages/build.h"
#include "catalog/tool_checks.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/discovery/interpreter.h"

namespace turnkey::tool_checks {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void check_export_opset(const RunRequest& request) {
  const ToolCall* exporter = nullptr;
  for (const ToolCall& call : request.sequence) {
    if (call.name == "export-pytorch") exporter = &call;
    // Attach mode (Python API): the exporter is the calling process's torch, not a probed one.
    if (call.name == "discover" && call.options.contains("attach")) return;
  }
  if (!exporter) return;
  const nlohmann::json& options = exporter->options;
  const std::string requested = options.value("exporter", std::string("auto"));
  if (requested == "dynamo") return;  // it writes any opset, by conversion from its base
  int opset = 0;
  std::string given;
  if (options.contains("opset") && options["opset"].is_number_integer()) {
    opset = options["opset"].get<int>();
    given = fmt::format("--opset {}", opset);
  } else if (auto env = env_int("TURNKEY_ONNX_OPSET", 7, 30)) {
    opset = static_cast<int>(*env);
    given = fmt::format("TURNKEY_ONNX_OPSET={}", opset);
  } else {
    return;  // the default (17) is within every supported torch's range
  }
  // Only scripts are exported: ONNX files and cached builds never reach the exporter.
  bool any_script = false;
  for (const std::string& input : request.global.inputs) {
    if (!ends_with(input, ".onnx") && !ends_with(input, "_state.yaml")) any_script = true;
  }
  if (!any_script) return;
  const PythonInterpreter* python = nullptr;
  try {
    python = &find_interpreter(request.global.python);
  } catch (const Error&) {
    return;  // no interpreter with torch: discovery says so, once per script
  }
  // auto: the TorchScript exporter's range matters only where it is tried first.
  if (engine_internal::exporter_order(requested, python->torch_version).front() != "torchscript") {
    return;
  }
  const int low = python->export_opset_min, high = python->export_opset_max;
  if (high == 0 || (opset >= low && opset <= high)) return;
  throw Error(
      ErrorKind::InvalidInput,
      fmt::format("{}: torch {} ({}) exports ONNX opsets {} to {}{}", given, python->torch_version,
                  python->path, low, high,
                  opset > high ? "; a newer torch exports more (docs/torch_versions.md)" : ""));
}

}  // namespace turnkey::tool_checks
