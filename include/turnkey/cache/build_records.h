// Typed views of a build dir's two files (docs/cache.md): BuildState (`<name>_state.yaml`: how
// the latest run went) and BuildStats (`turnkey_stats.yaml`: model facts plus every result). A
// result is one (runtime, device, settings) measurement; a rerun with the same settings replaces
// only its own result and keeps the old numbers in the result's run history. Files written by
// earlier schema versions (no `results`, no `schema_version`) read as one result. The engine builds
// both records typed and writes them with to_json(). Values; pure functions; thread-safe.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "turnkey/cache/fields.h"

namespace turnkey {

// The one rule of what a build dir is, shared by `cache list`, `cache clean/delete` and `report`:
// a real directory (not a symlink) holding `<dir name>_state.yaml` or `turnkey_stats.yaml` (in
// any form: a damaged one is still a build, to report or clean).
bool is_build_dir(const std::filesystem::path& dir);

// One tool's step in a build state (`tools` of <name>_state.yaml, docs/cache.md).
struct ToolStep {
  std::string name, status, started, key, versions, error;  // "" = not recorded
  std::string stage;  // the call's own name when it is not the tool's (python-stage calls)
  std::optional<double> duration_s;
  nlohmann::json options;    // the tool's resolved options; null = not recorded (the first tool)
  nlohmann::json outputs;    // {onnx_path, inputs, outputs} of a tool that made a model; or null
  nlohmann::json artifacts;  // [{path, size_bytes, sha256}] of those outputs; or null
  bool reused = false;
  nlohmann::json rest = nlohmann::json::object();  // keys this version does not know, as read

  nlohmann::json to_json() const;
  // Anything of another type than written is kept as read, in `rest`.
  static ToolStep from_json(const nlohmann::json& step);
};

// <name>_state.yaml: how the latest run of a build went. The engine builds it and writes
// to_json(); readers take from_json(). A text field is written when not empty.
struct BuildState {
  int schema_version = 0;  // 0: written before versions were recorded (stamped by the writer)
  std::string build_name, build_status, error, failed_tool, last_tool, finished;
  std::string status;  // the failure's status of the status table (engine/status.h) at the end
  std::string turnkey_version, input, rebuild, started, chain_key, onnx_path;
  // The run that made it: the id of its record (build_cache.h RunRecord), never the run's
  // command line, so a state does not grow with the run's inputs. States written before issue 28
  // hold `command_line` instead: it is kept as read, in `rest`.
  std::string run;
  std::string model_name, hash_full;               // of a script's model
  std::vector<std::string> sequence;               // the tools of the latest run
  std::vector<std::string> continued_from;         // load-build: the sequence it continued
  std::vector<ToolStep> tools;                     // every tool started, in order
  bool lean_cache = false;                         // --lean-cache removed the artifacts
  int signal = 0;                                  // the signal that crashed the build, else 0
  nlohmann::json rest = nlohmann::json::object();  // keys this version does not know, as read

  nlohmann::json to_json() const;
  // Reads the fields it knows; anything missing stays empty. A wrong type of build_name,
  // build_status, error, failed_tool, last_tool, finished, sequence or continued_from is a
  // problem; other fields of another type are kept as read (in `rest`).
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

// The medians of earlier runs that a new run of the result `key` carries forward
// (`earlier_medians_ms`, most recent last, at most kEarlierMediansLimit): the earlier result's
// own carried medians and its median, when that result ran on `host` (results record
// environment.host). None when no result has the key, it ran on another host or an unknown one,
// or it measured no median. Runs of another host are not this host's spread between runs; a
// result flagged machine_busy, machine_slowed or quota_throttled passes on its own carried
// medians but not its median (it measured a disturbed machine, and says so in its flags).
inline constexpr size_t kEarlierMediansLimit = 10;
std::vector<double> earlier_medians(const std::vector<ResultRecord>& results,
                                    const std::string& key, const std::string& host);

// Copies the Model-scope fields of `from` into `into` (load-build continuing a build).
void carry_model_facts(const nlohmann::json& from, nlohmann::json& into);

// turnkey_stats.yaml: the fields of the field table (fields.h) the build recorded, how it ended,
// and its results. Every field goes through set(), which the table checks: a key it does not
// name, or a value of another type than its row's, is a programming error (Error(Internal)).
// The engine builds it and writes to_json(); from_json() reads any schema without losing keys.
class BuildStats {
 public:
  std::string build_name, build_status, status, failed_tool, error;  // "" = not recorded
  std::string samples_file;           // the latest result's samples file (in the build dir), or ""
  std::vector<ResultRecord> results;  // as read or merged; to_json() writes them as `results`
  // Whether to_json() writes `results` when there are none: stats of schema <= 3 read without
  // it keep their top-level result as the only one (build_records.h results_of()).
  bool results_recorded = true;

  void set(std::string_view key, nlohmann::json value);
  bool has(std::string_view key) const;
  const nlohmann::json* find(std::string_view key) const;  // nullptr when not set
  std::string text(std::string_view key, const std::string& fallback = "") const;
  bool flag(std::string_view key, bool fallback = false) const;
  double number(std::string_view key, double fallback = 0) const;
  // Every field set, by key (what the top level of the file holds of the table).
  const nlohmann::json& fields() const { return fields_; }
  // The Model-scope fields of `from` (another build's stats) whose types match their rows.
  void carry_model_facts(const nlohmann::json& from);

  nlohmann::json to_json() const;
  // Fields of the table with their row's type are set; anything else is kept as read.
  static BuildStats from_json(const nlohmann::json& stats);

 private:
  nlohmann::json fields_ = nlohmann::json::object();
  nlohmann::json rest_ = nlohmann::json::object();
};

// Whether `value` has the type of `field`'s row (null always does: a value not known).
bool fits_field(const StatsField& field, const nlohmann::json& value);

// Samples file name of a result: samples_<runtime>_<device>_<first 8 hex of sha256(key)>.json.
std::string samples_file_name(const nlohmann::json& fields);

}  // namespace turnkey
