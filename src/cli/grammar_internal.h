// Checks both grammars share (grammar.cpp). Internal to src/cli. Each throws UsageError.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "turnkey/engine/engine.h"
#include "turnkey/engine/tools.h"

namespace turnkey::cli {

// Inputs that do not exist but look like a mistyped tool name.
void check_inputs_for_tool_typos(const std::vector<std::string>& inputs);

// validate_tool_options as a usage error, prefixed with `context` when not empty.
void check_tool_options(const ToolSpec& spec, const nlohmann::json& given,
                        const std::string& context);

// Every tool call's options and the global options, before anything runs.
void check_request(const RunRequest& request);

}  // namespace turnkey::cli
