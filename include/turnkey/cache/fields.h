// The one table of a build's recorded fields (docs/cache.md, docs/report.md): each row names a key
// of turnkey_stats.yaml (or of one of its results), its type and unit, whether it describes the
// model, the build or one result, the report column it fills, the terminal label it prints under,
// and the schema version it appeared in. The stats writer (BuildStats::set, build_records.h: no key
// the table does not name, no value of another type), the report's rows (CSV, JSON, HTML), the
// terminal block, `cache list`, load-build's carry-over and the Python API all derive from it:
// adding a field is one row here plus docs. Immutable after start-up; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace turnkey {

// Versions of the files in a build dir; written as `schema_version` in both.
// 4: turnkey_stats.yaml keeps every result (`results`), each with its settings and run history.
// 5: fields added (model memory, repetitions, machine-speed probe, profile: fields.cpp "since
//    5"); 6: load time, concurrency (a result setting), sessions, batch_size as a column. Files of
//    schema 4 and 5 read as before. 7: the exporter (a result setting) and its version.
//    8: flag_codes (the codes of measurement_flags, common/flags.h); the openvino runtime's
//    facts (openvino_*, no column). 9: exporter_warning (no column). 10: the verdict
//    within_tolerance_of_float64 and correctness.float64 (docs/measurement.md). 11:
//    float64_left_out (no column). 12: first_call_s (no column); batch_size is the script's
//    parsed batch size where the first input is not batch-major (docs/measurement.md).
// The state's own: 7: `run` (the id of the run's record, build_cache.h RunRecord) in place of the
//    run's whole `command_line`; the first tool's options. States of 6 and before read as before.
inline constexpr int kStateSchemaVersion = 7;
inline constexpr int kStatsSchemaVersion = 12;

enum class FieldType {
  Text,     // a string (numbers and booleans read back as their text)
  Integer,  // a whole number
  Number,   // a finite double
  Boolean,
  TextList,  // a list of strings; one report cell joined with "; "
  Object,    // a mapping; its report cell is the `part` member (e.g. correctness.verdict)
};

enum class FieldScope {
  Model,   // a fact of the model; top level of the stats, kept when load-build continues a build
  Result,  // one result's (runtime, device, settings): top level for the latest run, and in
           // every entry of `results`
  Build,   // what this build's tools made of the model (the ONNX file's facts, export,
           // optimization, fp16, checks, compilation): top level of the stats, neither carried
           // by load-build nor part of a result
  Report,  // a report column computed by the reader (cache, status, ...); no stats key
};

struct StatsField {
  const char* key;  // key in the stats (or in a result); for Report fields, the column
  FieldType type;
  FieldScope scope;
  const char* unit;     // "ms", "bytes", "ips", "s", "" (also the suffix of key, when not "")
  const char* column;   // report column, nullptr when the field is not one
  int since;            // schema version the field (or its column) appeared in
  const char* meaning;  // one line for docs and the report's column list
  const char* label = nullptr;  // terminal label in a build's result block, nullptr = none
  int line = 0;                 // the label's position in the block (1 = first)
  const char* part = nullptr;   // Object fields: the member the report cell shows
  // Object fields: the report keeps the whole value too (Row::objects, the JSON report's rows,
  // e.g. `profile` for the HTML page's tables), besides the `part` its column shows.
  bool whole = false;
};

// Every field, in report-column order (fields without a column sit next to their relatives).
const std::vector<StatsField>& field_table();
const StatsField* find_field(std::string_view key);
// Whether a result's label names a tool of its sequence. The cache is below the catalog, which
// knows the tools: the caller of settings_label hands its rows' answer down
// (tools.h tool_in_result_label).
using LabelledTool = std::function<bool(const std::string& tool)>;

// A Result field that identifies a result: a rerun with the same values of all of them replaces
// it. The one list of them; result keys (build_records.h), the report's labels and measurement
// keys, `cache list`, the HTML chart and `compare` derive from it.
struct ResultSetting {
  const char* field;  // a Result field of field_table()
  // Its name in keys ("threads" in "threads=2"); nullptr: the value alone (runtime, device).
  const char* key_name;
  // Its name in a result's label (Row::settings); nullptr: not in the label (runtime and device,
  // shown in columns of their own).
  const char* label;
  // A value that means "not set" (concurrency 1: one call at a time); "" and this are left out of
  // labels, and of keys unless `always_in_key`.
  const char* unset;
  // Settings since schema 4 are always in the key ("pin=" when empty), so those keys (and the
  // samples files named after them) stay as they were; later settings only when set.
  bool always_in_key;
  // The label's value from the field's value (nullptr: as it is), e.g. the sequence's tools a
  // label names ("optimize-ort+convert-fp16").
  std::string (*label_value)(const std::string& value, const LabelledTool& labelled) = nullptr;
  // Recorded per build before it became a result setting: a result that lacks it takes the
  // build's top-level value (so caches of both versions still compare).
  bool build_value_before = false;
};

const std::vector<ResultSetting>& result_setting_table();
// The `field` of each row of result_setting_table().
const std::vector<std::string>& result_settings();
// The value of a setting as keys and labels see it: `value` unless it is `unset`.
bool setting_is_set(const ResultSetting& setting, const std::string& value);
// "ort x86 threads=2 pin= shapes=x:1x10 sequence=load-onnx benchmark concurrency=2": a result's
// key from its settings' values (`value_of(field)`, "" when missing).
std::string settings_key(const std::function<std::string(const char* field)>& value_of);
// "threads=2 pin=0-1 seq=optimize-ort+convert-fp16 concurrency=2": the settings that tell one
// result of a build and runtime from another, those set only; the sequence names the tools
// `labelled` says.
std::string settings_label(const std::function<std::string(const char* field)>& value_of,
                           const LabelledTool& labelled);

}  // namespace turnkey
