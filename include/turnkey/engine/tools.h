// The tool table: every tool turnkey knows, with its group, help and options. The CLI builds its
// parsers and help from this table; the engine runs tools by name. Add a tool here and nowhere
// else. Immutable after start-up; thread-safe to read.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace turnkey {

enum class ToolGroup { First, Sequence, Management };

struct OptionSpec {
  enum class Type { Int, Float, String, Flag, List };
  std::string flags;  // CLI11 style: "--iterations" or "-i,--iterations"
  std::string key;    // key in the tool's options JSON: "iterations"
  Type type = Type::String;
  std::string help;
  nlohmann::json default_value;  // null = no default
};

// What a build holds between tools. A tool needs one and produces one (or keeps what it got).
enum class Artifact { None, PyTorchModel, OnnxModel, Measurement };
const char* artifact_name(Artifact artifact);  // "a PyTorch model", "an ONNX model", ...

struct ToolSpec {
  std::string name;
  ToolGroup group = ToolGroup::Sequence;
  std::string help;
  std::vector<OptionSpec> options;
  Artifact needs = Artifact::None;
  Artifact produces = Artifact::None;  // None = passes on what it got
  bool cacheable = false;  // its output is reused from the cache when its inputs did not change
  // Also runs right after discover, on the live PyTorch model (benchmark with a torch runtime).
  bool takes_pytorch_model = false;
};

const std::vector<ToolSpec>& tool_specs();
const ToolSpec* find_tool(const std::string& name);
const char* tool_group_title(ToolGroup group);
// Closest known name by edit distance ("benchmrk" -> "benchmark"), "" when nothing is close.
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

// Built-in named sequences for the classic `--sequence NAME` (the tools after the first tool;
// benchmark is added by the classic grammar unless --build-only).
const std::vector<std::pair<std::string, std::vector<std::string>>>& named_sequences();

// Checks that every tool gets what it needs from the tools before it. Throws
// Error(InvalidInput): "convert-fp16 needs an ONNX model: put export-pytorch or load-onnx before
// it". `tools` starts with a first tool.
void check_sequence(const std::vector<std::string>& tools);

// Options of a tool with defaults filled in, e.g. {"iterations": 100, "device": "x86"}.
nlohmann::json default_tool_options(const ToolSpec& spec);

}  // namespace turnkey
