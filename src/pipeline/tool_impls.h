// Internal to the pipeline: how it runs each sequence tool of the catalog (tools.h). One row per
// tool: its body, what its output depends on beyond turnkey and its options (the versions in its
// cache key), and its options with values from the environment made explicit. The test
// `ToolImpls.OneRowPerSequenceTool` checks the rows against the catalog. Immutable; thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/build.h"

namespace turnkey::engine_internal {

struct ToolImpl {
  const char* name;  // the catalog's tool name
  // Does the tool's work on `build`, appending what it did to `log`; throws Error on failure.
  void (*body)(Build& build, const nlohmann::json& options, std::string& log);
  // Versions its output depends on; nullptr: none (a tool whose output is never reused).
  std::string (*versions)(const Build& build, const nlohmann::json& options) = nullptr;
  // Its options resolved for the cache key; nullptr: as given.
  nlohmann::json (*resolve)(nlohmann::json options, const Build& build) = nullptr;
  // The stats fields its run records (fields.h), taken back from the previous stats when the
  // tool is reused (reuse_policy.h restore_tool_stats): the exporter, optimize-ort's level and
  // whether the model is pre-optimized, convert-fp16's error against fp32 (the benchmark's
  // tolerance for fp16 builds).
  std::vector<const char*> recorded = {};
  // Whether the tool, with these options, uses the script's live Python process (the model in
  // it); nullptr: never. The runner ends the process of a script's last model before the first
  // tool from which on none does (Build::release_script_process).
  bool (*uses_script_process)(const Build& build, const nlohmann::json& options) = nullptr;
};

const std::vector<ToolImpl>& tool_impls();
// The row of a sequence tool. Throws Error(Internal) for a tool without one.
const ToolImpl& tool_impl(const std::string& name);

}  // namespace turnkey::engine_internal
