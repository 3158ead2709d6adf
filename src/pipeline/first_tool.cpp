#include "pipeline/first_tool.h"

#include "turnkey/common/error.h"
#include "turnkey/catalog/tools.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;

std::string first_tool_for(const std::vector<ToolCall>& sequence, const fs::path& input) {
  const std::string& first = sequence.front().name;
  const ToolSpec* by_file = first_tool_for_file(input.filename().string());
  if (first == "auto") {
    if (by_file) return by_file->name;
    std::vector<std::string> kinds;
    for (const ToolSpec& s : tool_specs()) {
      if (s.input_what) kinds.push_back(s.input_what);
    }
    std::string text = "not " + kinds.front();
    for (size_t i = 1; i < kinds.size(); ++i) {
      text += (i + 1 == kinds.size() ? " or " : ", ") + kinds[i];
    }
    throw Error(ErrorKind::InvalidInput, text);
  }
  const ToolSpec* spec = find_tool(first);
  if (spec && spec->input_suffix && by_file != spec) {
    throw Error(ErrorKind::InvalidInput, first + " needs " + spec->input_what);
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
