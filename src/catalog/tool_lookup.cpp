// The tool table's lookups and the rules of a sequence of its tools (which artifacts each
// tool takes and makes, named sequences, the reference tool's stage names, near-miss names),
// all read from tool_specs() in tools.cpp.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "turnkey/catalog/tools.h"
#include "turnkey/common/error.h"

namespace turnkey {

const char* artifact_name(Artifact artifact) {
  switch (artifact) {
    case Artifact::None: return "nothing";
    case Artifact::PyTorchModel: return "a PyTorch model";
    case Artifact::OnnxModel: return "an ONNX model";
    case Artifact::Measurement: return "a measurement";
  }
  return "nothing";
}

const std::vector<std::pair<std::string, std::vector<std::string>>>& named_sequences() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> sequences = {
      {"onnx-fp32", {"export-pytorch"}},
      {"optimize-fp32", {"export-pytorch", "optimize-ort"}},
      // The reference tool's default build: export, optimize, fp16.
      {"optimize-fp16", {"export-pytorch", "optimize-ort", "convert-fp16"}},
      {"check", {"export-pytorch", "check-onnx"}},
  };
  return sequences;
}

const std::vector<std::pair<std::string, std::string>>& tool_aliases() {
  // The reference tool's stage names (its sequence files and `cache stats` show them).
  static const std::vector<std::pair<std::string, std::string>> aliases = {
      {"export_pytorch", "export-pytorch"}, {"optimize_onnx", "optimize-ort"},
      {"fp16_conversion", "convert-fp16"},  {"check_onnx", "check-onnx"},
      {"set_success", ""},
  };
  return aliases;
}

void check_sequence(const std::vector<std::string>& tools) {
  Artifact have = Artifact::None;
  bool have_onnx = false;
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolSpec* spec = find_tool(tools[i]);
    if (!spec || spec->group == ToolGroup::Management) {
      throw Error(ErrorKind::InvalidInput, fmt::format("'{}' is not a build tool", tools[i]));
    }
    if (i == 0 && spec->group != ToolGroup::First) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("'{}' cannot start a sequence: start with a first tool "
                              "(discover, load-onnx, load-build)",
                              spec->name));
    }
    if (i > 0 && spec->group == ToolGroup::First) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("'{}' is a first tool: it can only start a sequence", spec->name));
    }
    bool satisfied = spec->needs == Artifact::None || spec->needs == have ||
                     (spec->needs == Artifact::OnnxModel && have_onnx) ||
                     (spec->takes_pytorch_model && have == Artifact::PyTorchModel);
    if (!satisfied) {
      // The tools that turn what the build has into what this one needs (export-pytorch for a
      // PyTorch model), else every tool that makes it.
      std::string makers, all_makers;
      for (const ToolSpec& s : tool_specs()) {
        if (s.produces != spec->needs || &s == spec) continue;
        all_makers += (all_makers.empty() ? "" : " or ") + s.name;
        if (s.needs == have) makers += (makers.empty() ? "" : " or ") + s.name;
      }
      if (makers.empty()) makers = all_makers;
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{} needs {}: put {} before it", spec->name,
                              artifact_name(spec->needs), makers));
    }
    if (spec->produces != Artifact::None) have = spec->produces;
    if (spec->produces == Artifact::OnnxModel) have_onnx = true;
  }
}

const ToolSpec* first_tool_for_file(const std::string& file) {
  for (const ToolSpec& s : tool_specs()) {
    if (s.input_suffix && file.size() >= std::strlen(s.input_suffix) &&
        file.compare(file.size() - std::strlen(s.input_suffix), std::string::npos,
                     s.input_suffix) == 0) {
      return &s;
    }
  }
  return nullptr;
}

Status failure_status_of_tool(const std::string& tool) {
  const ToolSpec* spec = find_tool(tool);
  return spec ? spec->failure : Status::Crashed;
}

bool tool_in_result_label(const std::string& tool) {
  const ToolSpec* spec = find_tool(tool);
  return !spec || spec->in_result_label;
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
    if (c == name) continue;  // never "did you mean" the very word
    size_t d = distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace turnkey
