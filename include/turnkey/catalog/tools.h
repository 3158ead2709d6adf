// The tool table: every tool turnkey knows, with its group, help and options. The CLI builds its
// parsers and help from this table; the engine runs tools by name. Add a tool here and nowhere
// else. Immutable after start-up; thread-safe to read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "turnkey/catalog/status.h"

namespace turnkey {

enum class ToolGroup { First, Sequence, Management };

// What values an option takes beyond its type: an inclusive or open range (numbers), a list of
// names (strings, or each item of a list), and a check of its own. Help and validation both
// derive from it.
struct OptionLimits {
  std::optional<double> low = {}, high = {};  // range of an Int or Float
  bool low_open = false, high_open = false;  // true: the bound itself is not allowed
  // Names the value must be one of (computed on use: the runtime registry includes plugins).
  std::vector<std::string> (*choices)() = nullptr;
  // Any other check of the value; throws Error(InvalidInput) with a message naming it.
  void (*check)(const nlohmann::json& value) = nullptr;
};

struct OptionSpec {
  // List: one or more strings after the flag (--rt-args a=1 b=2). Strings: one string per use,
  // the option may be used several times (a list then; one use stays a string). IntList: whole
  // numbers separated by commas on the command line (1,2,4), a number or a list in options; the
  // range applies to each.
  enum class Type { Int, Float, String, Flag, List, Strings, IntList };
  std::string flags;  // CLI11 style: "--iterations" or "-i,--iterations"
  std::string key;    // key in the tool's options JSON: "iterations"
  Type type = Type::String;
  std::string help;
  nlohmann::json default_value;  // null = no default
  OptionLimits limits = {};

  std::string long_flag() const;  // "--iterations"
};

// What a build holds between tools. A tool needs one and produces one (or keeps what it got).
enum class Artifact { None, PyTorchModel, OnnxModel, Measurement };
const char* artifact_name(Artifact artifact);  // "a PyTorch model", "an ONNX model", ...

struct ToolSpec {
  std::string name;
  ToolGroup group = ToolGroup::Sequence;
  // The status of a build that fails in this tool, unless the failure names its own (a
  // StatusError: timeout, out of memory, a numeric mismatch, ...). Management tools: Crashed.
  Status failure;
  // First tools: the end of the input file names the tool takes (".py"); nullptr otherwise.
  const char* input_suffix;
  const char* input_what;  // "a Python script (.py)", for messages; nullptr with no suffix
  std::string help;
  std::vector<OptionSpec> options;
  Artifact needs = Artifact::None;
  Artifact produces = Artifact::None;  // None = passes on what it got
  bool cacheable = false;  // its output is reused from the cache when its inputs did not change
  // Also runs right after discover, on the live PyTorch model (benchmark with a torch runtime).
  bool takes_pytorch_model = false;
  // Rules between options (e.g. --adaptive excludes --duration), given the options with their
  // defaults filled; throws Error(InvalidInput).
  void (*check_together)(const nlohmann::json& options) = nullptr;
  // A result's label names this tool when its sequence ran it ("seq=optimize-ort+convert-fp16",
  // fields.h): the tools after the first tool and the export that change or check the ONNX file
  // that is measured, and so tell one result of a build from another.
  bool in_result_label = false;
};

const std::vector<ToolSpec>& tool_specs();
const ToolSpec* find_tool(const std::string& name);
// The first tool whose input_suffix ends `file`'s name, nullptr when none does.
const ToolSpec* first_tool_for_file(const std::string& file);
// The status of a build that failed in `tool` (its row's `failure`; Crashed for a name the
// table does not know).
Status failure_status_of_tool(const std::string& tool);
// Whether a result's label names `tool` (its row's in_result_label); true for a name the table
// does not know (a tool of another turnkey version: shown rather than hidden).
bool tool_in_result_label(const std::string& tool);
const char* tool_group_title(ToolGroup group);
// Closest known name by edit distance ("benchmrk" -> "benchmark"), "" when nothing is close;
// never `name` itself.
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);
// The one-line refusal of a value that is not among `names`: "FLAG 'value': not one of a, b (did
// you mean 'a'?)", the hint from the same name in other case, a known alias (onnxruntime ->
// ort), else closest_name.
std::string not_one_of(const std::string& flag, const std::string& value,
                       const std::vector<std::string>& names);

// Built-in named sequences for the classic `--sequence NAME` (the tools after the first tool;
// benchmark is added by the classic grammar unless --build-only).
const std::vector<std::pair<std::string, std::vector<std::string>>>& named_sequences();

// The reference tool's stage names and the tool each stands for ("" = none: turnkey marks a
// build successful by itself): export_pytorch, optimize_onnx, fp16_conversion, set_success.
const std::vector<std::pair<std::string, std::string>>& tool_aliases();

// Checks that every tool gets what it needs from the tools before it. Throws
// Error(InvalidInput): "convert-fp16 needs an ONNX model: put export-pytorch or load-onnx before
// it". `tools` starts with a first tool.
void check_sequence(const std::vector<std::string>& tools);

// Options of a tool with defaults filled in, e.g. {"iterations": 100, "device": "x86"}. The table
// is the one source of these defaults.
nlohmann::json default_tool_options(const ToolSpec& spec);

// Checks options a user gave one tool (from the command line or a sequence file) against the
// table, before any work: known key, type, range, choices, the option's own check, then the
// tool's rules between options. Throws Error(InvalidInput) naming the option and the value:
// "--iterations -5: expected a whole number from 1 to 100000000".
void validate_tool_options(const ToolSpec& spec, const nlohmann::json& given);

// default_tool_options with `given` on top, validated.
nlohmann::json tool_options_with_defaults(const ToolSpec& spec, const nlohmann::json& given);

// The values of an IntList option typed as text, "1,2,4" -> [1, 2, 4]; nullopt when the text is
// not whole numbers separated by commas (validate_tool_options then names it).
std::optional<nlohmann::json> int_list_from_text(const std::string& text);

// The values an IntList (or Strings) option holds: a single value as a one-item list; an absent
// (null) one as an empty list. Expects a value validate_tool_options accepted.
std::vector<long long> int_list_values(const nlohmann::json& value);
std::vector<std::string> strings_values(const nlohmann::json& value);

// The help text of an option with what the table says about its values appended:
// "Timed iterations ... (from 1 to 1e+08; default: 100)". Choices are listed only when
// `with_choices` (the runtime choices load the plugins).
std::string option_help(const OptionSpec& option, bool with_choices = true);

}  // namespace turnkey
