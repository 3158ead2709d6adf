// Reports over one or more caches: every build dir becomes a row with a fixed column set
// (docs/report.md), written as CSV (RFC 4180), JSON (same rows plus samples and provenance) or
// HTML (html_report.h). Reading never stops at a bad build dir: it becomes a row with status
// "unreadable" and the reason. All functions are pure or touch only the paths they are given;
// thread-safe for distinct arguments.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace turnkey::report {

// 2: columns after duplicate_of; 3: correctness; 4: one row per result (threads, pinned_cpus,
// runs, median_history_ms, and the result's own input_shapes and sequence); 5: model memory,
// repetitions, the machine-speed probe and CPU throttling (issue 18); profile_top_ops and each
// row's profile (benchmark --profile); 6: load_s, concurrency, sessions, batch_size (issue 20);
// 7: the exporter columns; 8: flag_codes.
inline constexpr int kSchemaVersion = 8;

enum class CellType { Text, Integer, Number };

struct Column {
  const char* name;
  CellType type;
  const char* meaning;  // one line, with the unit; docs/report.md says the same
};

// Whether a row's (or a state's) status says the build or result ran through.
bool is_successful(const std::string& status);

// The fixed column set, in CSV order: the field table's columns (turnkey/cache/fields.h). The
// CSV header is exactly these names.
const std::vector<Column>& columns();
std::string csv_header();  // "cache,build_name,...", no line break

// One row: one result of a build dir (its runtime, device and settings), or the build itself
// when it has no result (or its latest run made none).
struct Row {
  // Column name -> value; null (or absent) means a missing value, an empty CSV cell.
  nlohmann::json cells = nlohmann::json::object();
  // Raw per-iteration latencies in ms for (runtime, device), when the build dir keeps them.
  std::vector<double> samples_ms;
  std::string samples_note;  // why samples are missing or unusable; "" when present or n/a
  std::string samples_file;  // the result's samples file in build_dir; "" = the schema-3 name
  // The whole value of each field the field table keeps whole (fields.h `whole`: the result's
  // benchmark --profile object), by key; a key is absent when the result has none.
  nlohmann::json objects = nlohmann::json::object();
  std::filesystem::path build_dir;

  // A text cell ("" when missing or not text); a numeric cell (NaN when missing).
  std::string text(const std::string& column) const;
  double number(const std::string& column) const;
  bool has(const std::string& column) const;
  // objects[key], null when absent.
  const nlohmann::json& object(const std::string& key) const;
  bool successful() const;  // status "successful"
  // What identifies a measurement across caches: the model's full content hash (else its 8-digit
  // hash, else the build name), the runtime, the device and (rows of schema >= 4) the result's
  // settings. Rows sharing it are duplicates.
  std::string model_key() const;
  std::string measurement_key() const;
  // "threads=2 pin=0-1 shapes=x:1x3x8x8": the settings that tell this result from the build's
  // others; "" for a row without them (an older cache).
  std::string settings() const;
};

struct CacheSummary {
  std::string label;           // the cache column's value: the path as the user gave it
  std::filesystem::path path;  // absolute
  int builds = 0;      // build dirs
  int unreadable = 0;  // rows whose build dir could not be read
};

struct Report {
  std::vector<CacheSummary> caches;
  std::vector<Row> rows;
  int duplicate_rows = 0;  // rows with a non-empty duplicate_of
};

// Reads every build dir of one cache (sorted by name; is_build_dir() of build_records.h says
// which dirs are builds; other dirs such as discovery_logs are skipped).
// Throws Error(InvalidInput) when `cache_dir` is not a directory; never for a bad build dir.
std::vector<Row> read_cache(const std::filesystem::path& cache_dir, const std::string& label);

// Reads one build dir into its rows: one per result, plus one for the build when it has no result
// or its latest run made none; a single row with status "unreadable" and the reason when it
// cannot be read.
std::vector<Row> read_build_dir(const std::filesystem::path& build_dir, const std::string& label);

// Reads several caches in the given order and marks duplicates: the first row of each
// measurement_key() is kept as is, every later one gets duplicate_of = "<cache>/<build_name>" of
// the first. Nothing is dropped. Throws Error(InvalidInput) for a missing dir or the same
// directory given twice.
Report read_caches(const std::vector<std::string>& cache_dirs);

// Marks duplicates among `rows` in place (as read_caches does); returns how many were marked.
int mark_duplicates(std::vector<Row>& rows);

// One CSV field per RFC 4180: quoted when it holds a comma, a double quote, CR or LF (or
// leading/trailing space), with inner quotes doubled; otherwise as is.
std::string csv_field(std::string_view value);
// A cell as CSV text: "" for missing, numbers in shortest round-trip form.
std::string cell_text(const nlohmann::json& cell);
// cell_text, and text that a spreadsheet would run as a formula (it starts with = + - @, a tab or
// CR) after an apostrophe.
std::string csv_cell_text(const nlohmann::json& cell);
// Header plus one line per row, CRLF line breaks as RFC 4180 specifies.
std::string to_csv(const std::vector<Row>& rows);

// What the JSON report records besides the rows.
struct Provenance {
  std::string generated_utc;  // ISO 8601
  std::string command_line;
  nlohmann::json machine;  // machine_fingerprint()
};
// This machine's facts plus a short stable fingerprint (sha256 of the stable facts, 16 hex).
nlohmann::json machine_fingerprint();
// The JSON report as text: columns in CSV order, every column present in every row (null when
// missing), plus hash_full, samples_ms, samples_note and each field kept whole (fields.h `whole`:
// profile) per row.
std::string to_json(const Report& report, const Provenance& provenance);
// Reads rows back from a JSON report (for compare). Throws Error(InvalidInput) when the text is
// not a turnkey report or its schema_version is newer than this build understands.
Report report_from_json(const std::string& text, const std::string& label);

// The file name stem of a report made at `when`: "turnkey_report_2026-11-22_00-03-30Z" (UTC).
std::string report_stem(std::chrono::system_clock::time_point when);

// Writes every (extension -> content) under `dir` with one shared stem that names no existing
// file: `stem`, else `stem_2`, `stem_3`, ... Each file is written to a temp file and hard-linked
// into place, so an existing report is never overwritten, even by a concurrent writer. Creates
// `dir`. Returns the paths written, in the order of `files`. Throws Error(Io).
std::vector<std::filesystem::path> write_new_files(
    const std::filesystem::path& dir, const std::string& stem,
    const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace turnkey::report
