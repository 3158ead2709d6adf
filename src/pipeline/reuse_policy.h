// Internal to the engine: when a tool's earlier result in a build's previous state can stand in
// for running it again, and what a previous state must look like to be read at all. A tool's
// entry records its outputs and each artifact's size and SHA-256; an artifact that is gone,
// truncated or changed makes the tool that made it run again. Pure functions of the state and the
// files; thread-safe.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "stages/build.h"

namespace turnkey::engine_internal {

// What is wrong with a previous build state, one line; "" when it can be used. A state that is
// not an object, or whose fields the engine reads have other types than it writes, is damaged
// (the build is rebuilt with a notice).
std::string state_damage(const nlohmann::json& state);

struct ReuseCheck {
  const nlohmann::json* entry = nullptr;  // the reusable entry (points into previous_state)
  // When `entry` is null: why the tool ran before but must run again ("" when it did not run
  // before, or --rebuild always).
  std::string reason;
  // The entry matches but for its cache key (what the tool got or is has changed): the caller
  // says which component changed. Never set with --rebuild never.
  bool key_changed = false;
};

// The previous run's entry for tool `index` of the sequence (0 = the first tool), when it can
// stand in for running `name` now with cache key `key`. `rebuild`: "if_needed", "always" or
// "never" (a changed key is then ignored, a damaged or missing artifact is not). `previous_state`
// must have passed state_damage().
ReuseCheck check_reuse(const nlohmann::json& previous_state, size_t index, const std::string& name,
                       const std::string& key, const std::string& rebuild);

// {path, size_bytes, sha256} of a file the tool wrote. Throws Error(Io) when it cannot be read.
nlohmann::json artifact_record(const std::filesystem::path& file);

// Why the entry's artifacts cannot be reused ("model.onnx is gone (lean cache or deleted)",
// "model.onnx changed since export-pytorch made it (120 bytes, recorded 4096)"); "" when they
// all are as recorded. Entries of caches written before artifacts were recorded are only checked
// for existence.
std::string artifact_problem(const nlohmann::json& entry);

// The `outputs` ({onnx_path, inputs, outputs}) and `artifacts` of a tool that produced
// build.onnx_path, for its state entry.
void record_outputs(const Build& build, ToolStep& step);

// Takes a reused entry's outputs back into the build (onnx_path, input and output .pb files).
void restore_outputs(Build& build, const nlohmann::json& entry);

// Takes back into build.stats the `recorded` fields a reused tool wrote there when it ran (from
// build.previous_stats; the tool's row in tool_impls.h names them).
void restore_tool_stats(Build& build, const std::vector<const char*>& recorded);

}  // namespace turnkey::engine_internal
