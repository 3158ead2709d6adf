// The one table of a build's recorded fields (docs/cache.md, docs/report.md): each row names a key
// of turnkey_stats.yaml (or of one of its results), its type and unit, whether it describes the
// model, the build or one result, the report column it fills, the terminal label it prints under,
// and the schema version it appeared in. The stats writer (BuildStats::set, build_records.h: no key
// the table does not name, no value of another type), the report's rows (CSV, JSON, HTML), the
// terminal block, `cache list`, load-build's carry-over and the Python API all derive from it:
// adding a field is one row here plus docs. Immutable after start-up; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace turnkey {

// Versions of the files in a build dir; written as `schema_version` in both.
// 4: turnkey_stats.yaml keeps every result (`results`), each with its settings and run history.
// 5: fields added (model memory, repetitions, machine-speed probe, profile: fields.cpp "since
//    5"); 6: load time, concurrency (a result setting), sessions, batch_size as a column. Files of
//    schema 4 and 5 read as before.
inline constexpr int kStateSchemaVersion = 6;
inline constexpr int kStatsSchemaVersion = 7;

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
};

// Every field, in report-column order (fields without a column sit next to their relatives).
const std::vector<StatsField>& field_table();
const StatsField* find_field(std::string_view key);
// The Result fields that identify a result: a rerun with the same values replaces it.
const std::vector<std::string>& result_settings();

}  // namespace turnkey
