#include "first_tool.h"

#include "turnkey/common/error.h"
#include "turnkey/engine/tools.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string first_tool_for(const std::vector<ToolCall>& sequence, const fs::path& input) {
  const std::string& first = sequence.front().name;
  const std::string file = input.filename().string();
  const std::string ext = input.extension().string();
  if (first == "auto") {
    if (ext == ".py") return "discover";
    if (ext == ".onnx") return "load-onnx";
    if (ends_with(file, "_state.yaml")) return "load-build";
    throw Error(ErrorKind::InvalidInput,
                "not a Python script (.py), ONNX file (.onnx) or build state (_state.yaml)");
  }
  if (first == "discover" && ext != ".py") {
    throw Error(ErrorKind::InvalidInput, "discover needs a Python script (.py)");
  }
  if (first == "load-onnx" && ext != ".onnx") {
    throw Error(ErrorKind::InvalidInput, "load-onnx needs an ONNX file (.onnx)");
  }
  if (first == "load-build" && !ends_with(file, "_state.yaml")) {
    throw Error(ErrorKind::InvalidInput, "load-build needs a build state (<build>_state.yaml)");
  }
  return first;
}

std::vector<const ToolCall*> sequence_after(const std::vector<ToolCall>& sequence,
                                            const std::string& first) {
  std::vector<const ToolCall*> tools;
  for (size_t i = 1; i < sequence.size(); ++i) {
    const ToolCall& call = sequence[i];
    const ToolSpec* spec = find_tool(call.name);
    if (spec->group == ToolGroup::First) continue;
    if (spec->needs == Artifact::PyTorchModel && first != "discover") continue;
    tools.push_back(&call);
  }
  return tools;
}

nlohmann::json tool_options(const std::vector<ToolCall>& sequence, const std::string& name) {
  nlohmann::json options = default_tool_options(*find_tool(name));
  for (const ToolCall& c : sequence) {
    if (c.name == name) options.update(c.options);
  }
  return options;
}

nlohmann::json call_options(const ToolCall& call) {
  nlohmann::json options = default_tool_options(*find_tool(call.name));
  options.update(call.options);
  return options;
}

std::string call_label(const ToolCall& call) {
  if (call.name == "python-stage") {
    const std::string stage = call.options.value("stage", "");
    if (!stage.empty()) return stage;
  }
  return call.name;
}

}  // namespace turnkey::engine_internal
