// The export opset against the run's exporter, checked when the command is read: torch 1.13
// writes opsets 7-17, torch 2.6 7-20, and an opset outside that range would otherwise fail every
// model's export, after every script has run.
#include <fmt/format.h>

#include <cstdio>

#include "catalog/tool_checks.h"
#include "turnkey/catalog/tools.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/discovery/interpreter.h"

namespace turnkey::tool_checks {

namespace {

// (major, minor) of a torch version string ("2.15.0+cu130" -> 2, 15); 0, 0 when unreadable.
std::pair<int, int> torch_major_minor(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return {0, 0};
  return {major, minor};
}

}  // namespace


std::vector<std::string> exporter_order(const std::string& requested,
                                        const std::string& torch_version) {
  if (requested != "auto") return {requested};
  const std::pair<int, int> torch = torch_major_minor(torch_version);
  const bool has_dynamo = torch >= std::pair{2, 5};
  if (torch >= std::pair{2, 9}) return {"dynamo", "torchscript"};
  if (has_dynamo) return {"torchscript", "dynamo"};
  return {"torchscript"};
}

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
    // An ONNX file or a build state starts at a first tool that needs no export.
    const ToolSpec* first = first_tool_for_file(input);
    if (!first || first->produces == Artifact::PyTorchModel) any_script = true;
  }
  if (!any_script) return;
  const PythonInterpreter* python = nullptr;
  try {
    python = &find_interpreter(request.global.python);
  } catch (const Error&) {
    return;  // no interpreter with torch: discovery says so, once per script
  }
  // auto: the TorchScript exporter's range matters only where it is tried first.
  if (exporter_order(requested, python->torch_version).front() != "torchscript") {
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
