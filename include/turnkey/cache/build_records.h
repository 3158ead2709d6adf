// Typed views of a build dir's two files (docs/cache.md): BuildState (`<name>_state.yaml`: how
// the latest run went) and BuildStats (`turnkey_stats.yaml`: model facts plus every result). A
// result is one (runtime, device, settings) measurement; a rerun with the same settings replaces
// only its own result and keeps the old numbers in the result's run history. Files written by
// earlier schema versions (no `results`, no `schema_version`) read as one result. Pure functions
// over JSON values; thread-safe.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace turnkey {

// The one rule of what a build dir is, shared by `cache list`, `cache clean/delete` and `report`:
// a real directory (not a symlink) holding `<dir name>_state.yaml` or `turnkey_stats.yaml` (in
// any form: a damaged one is still a build, to report or clean).
bool is_build_dir(const std::filesystem::path& dir);

struct BuildState {
  int schema_version = 0;  // 0: written before versions were recorded
  std::string build_name, build_status, error, failed_tool, last_tool, finished;
  std::vector<std::string> sequence;        // the tools of the latest run
  std::vector<std::string> continued_from;  // load-build: the sequence it continued
  // Reads the fields it knows; anything missing stays empty, a wrong type is a problem.
  static BuildState from_json(const nlohmann::json& state, std::vector<std::string>& problems);
};

// One earlier run of a result, kept in its history.
struct RunSummary {
  std::string finished, status;
  double median_latency_ms = 0, mean_latency_ms = 0;
};

struct ResultRecord {
  std::string key;  // result_key() of its settings
  std::string status, error, failed_tool, finished;
  std::string samples_file;         // in the build dir; "" when none
  nlohmann::json fields;            // the Result-scope fields of the field table (fields.h)
  std::vector<RunSummary> history;  // earlier runs, oldest first (at most kHistoryLimit)
  static constexpr size_t kHistoryLimit = 10;

  nlohmann::json to_json() const;
  static ResultRecord from_json(const nlohmann::json& j);
  RunSummary summary() const;
};

// "ort x86 threads=2 pin= shapes=x:1x3x8x8 sequence=load-onnx benchmark" from the settings
// (fields.h result_settings()) in `fields`; missing settings are empty.
std::string result_key(const nlohmann::json& fields);

// The Result-scope fields of the field table found at the top level of `stats`.
nlohmann::json result_fields_of(const nlohmann::json& stats);

// A build's results as recorded: `results` (schema >= 4), else one result from the top level
// when the stats name a runtime (earlier schemas; samples in samples_<runtime>_<device>.json).
std::vector<ResultRecord> results_of(const nlohmann::json& stats);

// `results` with `latest` put in: it replaces the result of the same key (whose summary joins
// `latest`'s history), or is appended. Order of first appearance is kept.
std::vector<ResultRecord> merge_result(std::vector<ResultRecord> results, ResultRecord latest);

// Copies the Model-scope fields of `from` into `into` (load-build continuing a build).
void carry_model_facts(const nlohmann::json& from, nlohmann::json& into);

// Samples file name of a result: samples_<runtime>_<device>_<first 8 hex of sha256(key)>.json.
std::string samples_file_name(const nlohmann::json& fields);

}  // namespace turnkey
