// Cache dirs -> report rows. One row per build dir; whatever cannot be read becomes the row's
// "unreadable" status and error, never an exception, so one bad dir cannot hide the others.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "turnkey/catalog/status.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/cache/build_records.h"
#include "turnkey/cache/fields.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/text.h"
#include "turnkey/report/report.h"

namespace turnkey::report {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Reads one YAML file that must hold a mapping. Missing file: null, no problem.
json load_yaml_map(const fs::path& path, const char* what, std::vector<std::string>& problems) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return nullptr;
  try {
    json v = json_from_yaml(read_file(path));
    if (!v.is_object()) {
      problems.push_back(
          fmt::format("{} file {} is not a mapping", what, path.filename().string()));
      return nullptr;
    }
    return v;
  } catch (const Error& e) {
    problems.push_back(
        fmt::format("{} file {}: {}", what, path.filename().string(), one_line(e.what())));
    return nullptr;
  }
}

// Copies `source[key]` into `column`, checking it against `type`; a wrong type is a problem.
void take(Row& row, const char* column, FieldType type, const json& source, const char* key,
          const char* what, std::vector<std::string>& problems, const char* part = nullptr) {
  if (!source.is_object()) return;
  auto it = source.find(key);
  if (it == source.end() || it->is_null()) return;
  const json& v = *it;
  switch (type) {
    case FieldType::Text:
      if (v.is_string()) {
        row.cells[column] = v;
      } else if (v.is_number() || v.is_boolean()) {
        row.cells[column] = cell_text(v);  // e.g. an unquoted version such as 1.29 in YAML
      } else {
        problems.push_back(fmt::format("{}: {} is not text", what, key));
      }
      return;
    case FieldType::Integer:
      if (v.is_number_integer()) {
        row.cells[column] = v;
      } else if (v.is_number_float() && std::abs(v.get<double>()) < 0x1p63 &&
                 v.get<double>() == std::floor(v.get<double>())) {  // (NaN fails both)
        row.cells[column] = static_cast<int64_t>(v.get<double>());
      } else {
        problems.push_back(fmt::format("{}: {} is not a whole number", what, key));
      }
      return;
    case FieldType::Number:
      if (v.is_number() && std::isfinite(v.get<double>())) {
        row.cells[column] = v;
      } else {
        problems.push_back(fmt::format("{}: {} is not a number", what, key));
      }
      return;
    case FieldType::TextList: {
      if (!v.is_array()) {
        problems.push_back(fmt::format("{}: {} is not a list", what, key));
        return;
      }
      std::string joined;
      for (const json& e : v) {
        if (e.is_string()) joined += (joined.empty() ? "" : "; ") + e.get<std::string>();
      }
      if (!joined.empty()) row.cells[column] = joined;
      return;
    }
    case FieldType::Object:
      if (part && v.is_object() && v.contains(part) && v[part].is_string()) {
        row.cells[column] = v[part];
      } else if (!v.is_object()) {
        problems.push_back(fmt::format("{}: {} is not a mapping", what, key));
      }
      return;
    case FieldType::Boolean:
      if (v.is_boolean()) row.cells[column] = cell_text(v);
      return;
  }
}

// Every column of `scope` the field table fills from `source`, and the fields it keeps whole.
void take_scope(Row& row, FieldScope scope, const json& source, const char* what,
                std::vector<std::string>& problems) {
  for (const StatsField& f : field_table()) {
    if (f.scope != scope) continue;
    if (f.column) take(row, f.column, f.type, source, f.key, what, problems, f.part);
    if (f.whole && source.is_object()) {
      if (auto it = source.find(f.key); it != source.end() && it->is_object()) {
        row.objects[f.key] = *it;
      }
    }
  }
}

// Stats of schema 3 before the verdict was recorded say only whether outputs were within.
void legacy_correctness(Row& row, const json& source) {
  if (row.has("correctness") || !source.is_object() || !source.contains("correctness")) return;
  const json& c = source["correctness"];
  if (!c.is_object()) return;
  if (c.contains("within") && c["within"].is_boolean()) {
    row.cells["correctness"] = c["within"].get<bool>() ? "within_tolerance" : "outside_tolerance";
  } else {
    row.cells["correctness"] = "not_checked";
  }
}

// Text columns computed by the reader (status, error, ...).
void take_text(Row& row, const char* column, const json& source, const char* key, const char* what,
               std::vector<std::string>& problems) {
  take(row, column, FieldType::Text, source, key, what, problems);
}

// "x:1x3x224x224,mask:1x128", from [{name, dtype, shape}]; a missing shape gives name:<dtype>.
std::string describe_inputs(const json& inputs) {
  if (!inputs.is_array()) return "";
  std::string out;
  for (const json& in : inputs) {
    if (!in.is_object()) continue;
    if (!out.empty()) out += ',';
    out += in.contains("name") && in["name"].is_string() ? in["name"].get<std::string>() : "?";
    out += ':';
    if (in.contains("shape") && in["shape"].is_array()) {
      const json& shape = in["shape"];
      if (shape.empty()) out += "()";
      for (size_t i = 0; i < shape.size(); ++i) {
        if (i) out += 'x';
        out += shape[i].is_string() ? shape[i].get<std::string>() : shape[i].dump();
      }
    } else if (in.contains("dtype") && in["dtype"].is_string()) {
      out += "<" + in["dtype"].get<std::string>() + ">";
    }
  }
  return out;
}

bool safe_file_part(const std::string& s) {
  return !s.empty() && s.find_first_of(std::string("/\\\0", 3)) == std::string::npos && s != "." &&
         s != "..";
}

void load_samples(Row& row) {
  const std::string runtime = row.text("runtime"), device = row.text("device");
  if (runtime.empty() || device.empty()) return;
  if (!safe_file_part(runtime) || !safe_file_part(device)) {
    row.samples_note = "runtime or device name is not a file name";
    return;
  }
  const std::string name = row.samples_file.empty()
                               ? fmt::format("samples_{}_{}.json", runtime, device)
                               : row.samples_file;
  if (!safe_file_part(name)) {
    row.samples_note = "samples file name is not a file name";
    return;
  }
  const fs::path path = row.build_dir / name;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    row.samples_note = "no " + name;
    return;
  }
  try {
    json j = json::parse(read_file(path));
    if (!j.is_object() || !j.contains("samples") || !j["samples"].is_array()) {
      row.samples_note = name + " has no samples array";
      return;
    }
    if (j.contains("unit") && j["unit"] != "ms") {
      row.samples_note = name + ": unit is not ms";
      return;
    }
    std::vector<double> v;
    v.reserve(j["samples"].size());
    for (const json& s : j["samples"]) {
      if (!s.is_number() || !std::isfinite(s.get<double>()) || s.get<double>() < 0) {
        row.samples_note = name + " holds a value that is not a latency";
        return;
      }
      v.push_back(s.get<double>());
    }
    row.samples_ms = std::move(v);
  } catch (const json::exception& e) {
    row.samples_note = name + ": " + one_line(e.what());
  } catch (const Error& e) {
    row.samples_note = one_line(e.what());
  }
}

}  // namespace

namespace {

// What the build's latest run says: status, error and where it stopped (from the state).
void take_state(Row& row, const json& state, bool stats_exists,
                std::vector<std::string>& problems) {
  if (state.is_object() && state.contains("sequence") && state["sequence"].is_array()) {
    std::string seq;
    for (const json& t : state["sequence"]) {
      if (!t.is_string()) continue;
      if (!seq.empty()) seq += ' ';
      seq += t.get<std::string>();
    }
    row.cells["sequence"] = seq;
  }
  take_text(row, "finished_utc", state, "finished", "state", problems);
  // Where the build stopped: the tool it failed in, else the last one it started.
  take_text(row, "last_stage", state, "failed_tool", "state", problems);
  if (!row.has("last_stage")) take_text(row, "last_stage", state, "last_tool", "state", problems);
  if (!row.has("last_stage") && state.is_object() && state.contains("tools") &&
      state["tools"].is_array() && !state["tools"].empty() && state["tools"].back().is_object()) {
    take_text(row, "last_stage", state["tools"].back(), "name", "state", problems);
  }
  if (state.is_object()) {
    if (state.contains("build_status") && state["build_status"].is_string()) {
      row.cells["status"] = state["build_status"];
    } else {
      problems.push_back("state has no build_status");
    }
  }
  if (row.successful() && !stats_exists) problems.push_back("stats file missing");
  take_text(row, "error", state, "error", "state", problems);
}

// One result's columns (schema >= 4): its settings, numbers, status and run history.
void take_result(Row& row, const ResultRecord& r, std::vector<std::string>& problems) {
  take_scope(row, FieldScope::Result, r.fields, "result", problems);
  legacy_correctness(row, r.fields);
  row.cells["status"] = r.status;
  if (!r.error.empty()) row.cells["error"] = r.error;
  row.cells["last_stage"] = r.failed_tool.empty() ? "benchmark" : r.failed_tool;
  if (!r.finished.empty()) row.cells["finished_utc"] = r.finished;
  row.cells["runs"] = static_cast<int64_t>(r.history.size() + 1);
  std::string medians;
  for (const RunSummary& h : r.history) medians += cell_text(h.median_latency_ms) + " ";
  row.cells["median_history_ms"] = medians + cell_text(r.fields.value("median_latency_ms", json()));
  row.samples_file = r.samples_file;
}

void finish_row(Row& row, const std::vector<std::string>& problems) {
  if (!problems.empty()) {
    row.cells["status"] = status_name(Status::Unreadable);
    std::string reason;
    for (const std::string& p : problems) reason += (reason.empty() ? "" : "; ") + p;
    row.cells["error"] = one_line(reason);
  } else {
    const std::string status = row.text("status");
    if (status == status_name(Status::NumericMismatch)) {
      // Outputs outside tolerance: the timing of a wrong computation is not a result.
      for (const char* key : {"mean_latency_ms", "median_latency_ms", "median_ci_low_ms",
                              "median_ci_high_ms", "p90_latency_ms", "p99_latency_ms", "std_ms",
                              "throughput_ips", "cold_latency_ms", "cv", "median_history_ms"}) {
        row.cells.erase(key);
      }
    }
    if (row.has("error")) row.cells["error"] = one_line(row.text("error"));
    if (status == status_name(Status::Incomplete) && !row.has("error")) {
      row.cells["error"] = fmt::format("did not finish: stopped during {} (or still running)",
                                       row.has("last_stage") ? row.text("last_stage") : "start");
    }
  }
  load_samples(row);
}

}  // namespace

std::vector<Row> read_build_dir(const fs::path& build_dir, const std::string& label) {
  Row base;
  base.build_dir = build_dir;
  const std::string name = build_dir.filename().string();
  base.cells["cache"] = label;
  base.cells["build_name"] = name;
  std::vector<std::string> problems;

  const fs::path state_path = build_dir / (name + "_state.yaml");
  const fs::path stats_path = build_dir / "turnkey_stats.yaml";
  std::error_code ec;
  const bool state_exists = fs::exists(state_path, ec);
  const bool stats_exists = fs::exists(stats_path, ec);
  json state = load_yaml_map(state_path, "state", problems);
  json stats = load_yaml_map(stats_path, "stats", problems);
  if (!state_exists)
    problems.push_back("state file " + state_path.filename().string() + " missing");
  const BuildState typed_state = BuildState::from_json(state, problems);

  take_scope(base, FieldScope::Model, stats, "stats", problems);
  if (!base.has("model_name"))
    take_text(base, "model_name", state, "model_name", "state", problems);
  for (const json* src : {&stats, &state}) {
    if (base.cells.contains("hash_full")) break;
    if (src->is_object() && src->contains("hash_full") && (*src)["hash_full"].is_string()) {
      base.cells["hash_full"] = (*src)["hash_full"];
    }
  }
  if (!base.has("hash") && base.cells.contains("hash_full")) {
    base.cells["hash"] = base.cells["hash_full"].get<std::string>().substr(0, 8);
  }
  if (stats.is_object()) {
    std::string shapes = describe_inputs(stats.value("inputs", json()));
    if (shapes.empty()) shapes = describe_inputs(stats.value("onnx_inputs", json()));
    if (!shapes.empty()) base.cells["input_shapes"] = shapes;
  }

  std::vector<Row> rows;
  const bool has_results = stats.is_object() && stats.contains("results");
  if (problems.empty() && has_results) {
    bool latest_has_result = false;
    for (const ResultRecord& r : results_of(stats)) {
      Row row = base;
      std::vector<std::string> row_problems;
      take_result(row, r, row_problems);
      for (const ResultSetting& s : result_setting_table()) {
        if (s.build_value_before && !row.has(s.field) && !r.fields.contains(s.field)) {
          take(row, s.field, FieldType::Text, stats, s.field, "stats", row_problems, nullptr);
        }
      }
      latest_has_result = latest_has_result || r.finished == typed_state.finished;
      finish_row(row, row_problems);
      rows.push_back(std::move(row));
    }
    // The latest run made no result (it failed before benchmarking, built only, or is still
    // running): its own row says so, next to the results earlier runs left.
    if (!rows.empty() && (latest_has_result || is_successful(typed_state.build_status))) {
      return rows;
    }
  }
  Row row = base;
  take_state(row, state, stats_exists, problems);
  // Schema <= 3 keeps its one result at the top level of the stats.
  if (!has_results) {
    take_scope(row, FieldScope::Result, stats, "stats", problems);
    legacy_correctness(row, stats);
  }
  finish_row(row, problems);
  rows.push_back(std::move(row));
  return rows;
}

std::vector<Row> read_cache(const fs::path& cache_dir, const std::string& label) {
  std::error_code ec;
  if (!fs::is_directory(cache_dir, ec)) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("cache dir {} {}", cache_dir.string(),
                            fs::exists(cache_dir, ec) ? "is not a directory" : "does not exist"));
  }
  std::vector<fs::path> dirs;
  for (fs::directory_iterator it(cache_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (is_build_dir(it->path())) dirs.push_back(it->path());
  }
  if (ec) {
    throw Error(ErrorKind::Io,
                fmt::format("listing cache dir {}: {}", cache_dir.string(), ec.message()));
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<Row> rows;
  rows.reserve(dirs.size());
  for (const fs::path& d : dirs) {
    for (Row& r : read_build_dir(d, label)) rows.push_back(std::move(r));
  }
  return rows;
}

int mark_duplicates(std::vector<Row>& rows) {
  std::map<std::string, std::string> first;  // measurement key -> "<cache>/<build_name>"
  int marked = 0;
  for (Row& r : rows) {
    const std::string where = (fs::path(r.text("cache")) / r.text("build_name")).generic_string();
    auto [it, inserted] = first.emplace(r.measurement_key(), where);
    if (inserted) {
      r.cells.erase("duplicate_of");
    } else {
      r.cells["duplicate_of"] = it->second;
      ++marked;
    }
  }
  return marked;
}

Report read_caches(const std::vector<std::string>& cache_dirs) {
  Report report;
  std::set<fs::path> seen;
  for (const std::string& given : cache_dirs) {
    fs::path p = expand_user(given);
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("cache dir {} {}", given,
                              fs::exists(p, ec) ? "is not a directory" : "does not exist"));
    }
    fs::path canonical = fs::weakly_canonical(p, ec);
    if (!seen.insert(canonical).second) {
      throw Error(ErrorKind::InvalidInput, fmt::format("cache dir {} given twice", given));
    }
    std::string label = given;
    while (label.size() > 1 && label.back() == '/') label.pop_back();
    CacheSummary summary{label, fs::absolute(p), 0, 0};
    std::vector<Row> rows = read_cache(p, label);
    std::set<std::string> build_names;
    for (const Row& r : rows) build_names.insert(r.text("build_name"));
    summary.builds = static_cast<int>(build_names.size());
    for (const Row& r : rows) summary.unreadable += r.text("status") == status_name(Status::Unreadable);
    report.caches.push_back(summary);
    for (Row& r : rows) report.rows.push_back(std::move(r));
  }
  report.duplicate_rows = mark_duplicates(report.rows);
  return report;
}

}  // namespace turnkey::report
