// Internal to the engine: which tool starts an input (the classic grammar's "auto" resolved by
// the file's kind), which sequence tools apply after it, and a tool's options as the user gave
// them over its defaults. Pure functions of the request; thread-safe.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "turnkey/catalog/request.h"

namespace turnkey::engine_internal {

// "discover" (.py), "load-onnx" (.onnx) or "load-build" (<build>_state.yaml) for a first tool
// "auto"; otherwise the first tool itself, when it fits the file. Throws Error(InvalidInput).
std::string first_tool_for(const std::vector<ToolCall>& sequence,
                           const std::filesystem::path& input);

// The tools after the first that apply to an input started by `first` (export-pytorch and other
// tools that need the live PyTorch model only after discover).
std::vector<const ToolCall*> sequence_after(const std::vector<ToolCall>& sequence,
                                            const std::string& first);

// The tool's default options updated by every call of it in the sequence.
nlohmann::json tool_options(const std::vector<ToolCall>& sequence, const std::string& name);

// One call's options over the tool's defaults (a tool may be called more than once: each
// python-stage call runs its own custom stage).
nlohmann::json call_options(const ToolCall& call);

// What a call is named by in the monitor, its log (log_<label>.txt) and the state's sequence:
// the tool's name, or for python-stage the custom stage's unique_name.
std::string call_label(const ToolCall& call);

}  // namespace turnkey::engine_internal
