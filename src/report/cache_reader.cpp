// Cache dirs -> report rows. One row per build dir; whatever cannot be read becomes the row's
// "unreadable" status and error, never an exception, so one bad dir cannot hide the others.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "turnkey/cache/build_cache.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/report/report.h"

namespace turnkey::report {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<Column>& columns() {
  using enum CellType;
  static const std::vector<Column> kColumns = {
      {"cache", Text, "the cache the row comes from, as given with -d"},
      {"build_name", Text, "build directory name, <stem>_<hash8>"},
      {"script", Text, "absolute path of the Python script (empty for ONNX-file inputs)"},
      {"model_name", Text, "variable name of the model in the script, or the ONNX file's stem"},
      {"class", Text, "Python class of the model (empty for ONNX files)"},
      {"hash", Text, "first 8 hex digits of the model's content hash"},
      {"labels", Text, "the script's labels, key::value pairs"},
      {"parameters", Integer, "number of model parameters"},
      {"input_shapes", Text, "inputs as name:dim1xdim2,... (name:() for a scalar)"},
      {"sequence", Text, "tools the build ran, space-separated"},
      {"runtime", Text, "runtime name (ort, ...)"},
      {"device", Text, "device name (x86, ...)"},
      {"device_name", Text, "the device as the benchmark saw it (CPU model)"},
      {"runtime_version", Text, "version of the runtime"},
      {"iterations", Integer, "number of timed iterations"},
      {"mean_latency_ms", Number, "mean latency, ms"},
      {"median_latency_ms", Number, "median latency, ms"},
      {"median_ci_low_ms", Number, "lower bound of the 95% CI of the median, ms"},
      {"median_ci_high_ms", Number, "upper bound of the 95% CI of the median, ms"},
      {"p90_latency_ms", Number, "90th percentile latency, ms"},
      {"p99_latency_ms", Number, "99th percentile latency, ms"},
      {"std_ms", Number, "sample standard deviation of the latency, ms"},
      {"throughput_ips", Number, "inferences per second, batch_size * 1000 / mean_latency_ms"},
      {"peak_memory_bytes", Integer,
       "peak resident memory of the process holding the model, during load or run, bytes"},
      {"max_abs_error", Number, "largest absolute output difference against PyTorch's outputs"},
      {"status", Text,
       "successful, failed, numeric_mismatch (outputs outside tolerance: latency left empty), "
       "incomplete or unreadable"},
      {"last_stage", Text, "the tool the build stopped at (failed in, or last run)"},
      {"error", Text, "one-line reason for a failed, incomplete or unreadable build"},
      {"finished_utc", Text, "when the build finished, ISO 8601 UTC"},
      {"duplicate_of", Text, "<cache>/<build_name> of the first row with the same measurement"},
      // schema_version 2
      {"cold_latency_ms", Number, "the first (cold) call, ms"},
      {"cv", Number, "coefficient of variation of the latency, std / mean"},
      {"harness_overhead_ms", Number, "median of the same loop around an empty call, ms"},
      {"max_rel_error", Number, "largest max|diff| / max|reference| over the outputs"},
      {"min_cosine", Number, "smallest cosine similarity to PyTorch's outputs over the outputs"},
      {"measurement_flags", Text,
       "why the measurement may not be trusted (busy machine, noise, overhead), '; '-separated"},
      // schema_version 3
      {"correctness", Text,
       "outputs against PyTorch's: within_tolerance, within_tolerance_up_to_ties, inconclusive, "
       "outside_tolerance or not_checked"},
  };
  return kColumns;
}

std::string csv_header() {
  std::string h;
  for (const Column& c : columns()) {
    if (!h.empty()) h += ',';
    h += c.name;
  }
  return h;
}

std::string Row::text(const std::string& column) const {
  auto it = cells.find(column);
  if (it == cells.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

double Row::number(const std::string& column) const {
  auto it = cells.find(column);
  if (it == cells.end() || !it->is_number()) return std::numeric_limits<double>::quiet_NaN();
  return it->get<double>();
}

bool Row::has(const std::string& column) const {
  auto it = cells.find(column);
  return it != cells.end() && !it->is_null();
}

std::string Row::model_key() const {
  auto it = cells.find("hash_full");
  if (it != cells.end() && it->is_string() && !it->get<std::string>().empty()) {
    return it->get<std::string>();
  }
  if (!text("hash").empty()) return text("hash");
  return "build:" + text("build_name");
}

std::string Row::measurement_key() const {
  return model_key() + "|" + text("runtime") + "|" + text("device");
}

namespace {

std::string one_line(const std::string& s) {
  std::string line = s.substr(0, s.find_first_of("\r\n"));
  return line.size() > 400 ? line.substr(0, 400) + "..." : line;
}

const Column* find_column(const std::string& name) {
  for (const Column& c : columns()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

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

// Copies `source[key]` into the column, checking its type; a wrong type is a problem.
void take(Row& row, const char* column, const json& source, const char* key, const char* what,
          std::vector<std::string>& problems) {
  if (!source.is_object()) return;
  auto it = source.find(key);
  if (it == source.end() || it->is_null()) return;
  const Column* c = find_column(column);
  const json& v = *it;
  switch (c->type) {
    case CellType::Text:
      if (v.is_string()) {
        row.cells[column] = v;
      } else if (v.is_number() || v.is_boolean()) {
        row.cells[column] = cell_text(v);  // e.g. an unquoted version such as 1.29 in YAML
      } else {
        problems.push_back(fmt::format("{}: {} is not text", what, key));
      }
      return;
    case CellType::Integer:
      if (v.is_number_integer()) {
        row.cells[column] = v;
      } else if (v.is_number_float() && std::isfinite(v.get<double>()) &&
                 v.get<double>() == std::floor(v.get<double>())) {
        row.cells[column] = static_cast<int64_t>(v.get<double>());
      } else {
        problems.push_back(fmt::format("{}: {} is not a whole number", what, key));
      }
      return;
    case CellType::Number:
      if (v.is_number() && std::isfinite(v.get<double>())) {
        row.cells[column] = v;
      } else {
        problems.push_back(fmt::format("{}: {} is not a number", what, key));
      }
      return;
  }
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
  const std::string name = fmt::format("samples_{}_{}.json", runtime, device);
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

Row read_build_dir(const fs::path& build_dir, const std::string& label) {
  Row row;
  row.build_dir = build_dir;
  const std::string name = build_dir.filename().string();
  row.cells["cache"] = label;
  row.cells["build_name"] = name;
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

  take(row, "script", stats, "script", "stats", problems);
  take(row, "model_name", stats, "model_name", "stats", problems);
  if (!row.has("model_name")) take(row, "model_name", state, "model_name", "state", problems);
  take(row, "class", stats, "class", "stats", problems);
  take(row, "hash", stats, "hash", "stats", problems);
  take(row, "labels", stats, "labels", "stats", problems);
  take(row, "parameters", stats, "parameters", "stats", problems);
  for (const json* src : {&stats, &state}) {
    if (row.cells.contains("hash_full")) break;
    if (src->is_object() && src->contains("hash_full") && (*src)["hash_full"].is_string()) {
      row.cells["hash_full"] = (*src)["hash_full"];
    }
  }
  if (!row.has("hash") && row.cells.contains("hash_full")) {
    row.cells["hash"] = row.cells["hash_full"].get<std::string>().substr(0, 8);
  }
  if (stats.is_object()) {
    std::string shapes = describe_inputs(stats.value("inputs", json()));
    if (shapes.empty()) shapes = describe_inputs(stats.value("onnx_inputs", json()));
    if (!shapes.empty()) row.cells["input_shapes"] = shapes;
  }
  if (state.is_object() && state.contains("sequence") && state["sequence"].is_array()) {
    std::string seq;
    for (const json& t : state["sequence"]) {
      if (!t.is_string()) continue;
      if (!seq.empty()) seq += ' ';
      seq += t.get<std::string>();
    }
    row.cells["sequence"] = seq;
  }
  take(row, "runtime", stats, "runtime", "stats", problems);
  take(row, "device", stats, "device", "stats", problems);
  take(row, "device_name", stats, "device_name", "stats", problems);
  take(row, "runtime_version", stats, "runtime_version", "stats", problems);
  take(row, "iterations", stats, "iterations", "stats", problems);
  for (const char* key : {"mean_latency_ms", "median_latency_ms", "median_ci_low_ms",
                          "median_ci_high_ms", "p90_latency_ms", "p99_latency_ms", "throughput_ips",
                          "peak_memory_bytes", "max_abs_error", "cold_latency_ms", "cv",
                          "harness_overhead_ms", "max_rel_error", "min_cosine"}) {
    take(row, key, stats, key, "stats", problems);
  }
  if (stats.is_object() && stats.contains("measurement_flags") &&
      stats["measurement_flags"].is_array()) {
    std::string flags;
    for (const json& f : stats["measurement_flags"]) {
      if (f.is_string()) flags += (flags.empty() ? "" : "; ") + f.get<std::string>();
    }
    if (!flags.empty()) row.cells["measurement_flags"] = flags;
  }
  if (stats.is_object() && stats.contains("correctness") && stats["correctness"].is_object()) {
    const json& c = stats["correctness"];
    if (c.contains("verdict") && c["verdict"].is_string()) {
      row.cells["correctness"] = c["verdict"].get<std::string>();
    } else if (c.contains("within") && c["within"].is_boolean()) {  // stats without a verdict
      row.cells["correctness"] = c["within"].get<bool>() ? "within_tolerance" : "outside_tolerance";
    } else {
      row.cells["correctness"] = "not_checked";
    }
  }
  take(row, "std_ms", stats, "std_latency_ms", "stats", problems);
  take(row, "finished_utc", state, "finished", "state", problems);

  // Where the build stopped: the tool it failed in, else the last one it started.
  take(row, "last_stage", state, "failed_tool", "state", problems);
  if (!row.has("last_stage")) take(row, "last_stage", state, "last_tool", "state", problems);
  if (!row.has("last_stage") && state.is_object() && state.contains("tools") &&
      state["tools"].is_array() && !state["tools"].empty() && state["tools"].back().is_object()) {
    take(row, "last_stage", state["tools"].back(), "name", "state", problems);
  }

  std::string status;
  if (state.is_object()) {
    if (state.contains("build_status") && state["build_status"].is_string()) {
      status = state["build_status"].get<std::string>();
    } else {
      problems.push_back("state has no build_status");
    }
  }
  if (status == "successful" && !stats_exists) problems.push_back("stats file missing");

  if (!problems.empty()) {
    row.cells["status"] = "unreadable";
    std::string reason;
    for (const std::string& p : problems) reason += (reason.empty() ? "" : "; ") + p;
    row.cells["error"] = one_line(reason);
  } else {
    row.cells["status"] = status;
    if (status == "numeric_mismatch") {
      // Outputs outside tolerance: the timing of a wrong computation is not a result.
      for (const char* key : {"mean_latency_ms", "median_latency_ms", "median_ci_low_ms",
                              "median_ci_high_ms", "p90_latency_ms", "p99_latency_ms", "std_ms",
                              "throughput_ips", "cold_latency_ms", "cv"}) {
        row.cells.erase(key);
      }
    }
    take(row, "error", state, "error", "state", problems);
    if (row.has("error")) row.cells["error"] = one_line(row.text("error"));
    if (status == "incomplete" && !row.has("error")) {
      row.cells["error"] = fmt::format("did not finish: stopped during {} (or still running)",
                                       row.has("last_stage") ? row.text("last_stage") : "start");
    }
  }
  load_samples(row);
  return row;
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
    std::error_code e2;
    if (!it->is_directory(e2)) continue;
    const fs::path& d = it->path();
    const std::string name = d.filename().string();
    if (fs::exists(d / (name + "_state.yaml"), e2) || fs::exists(d / "turnkey_stats.yaml", e2)) {
      dirs.push_back(d);
    }
  }
  if (ec) {
    throw Error(ErrorKind::Io,
                fmt::format("listing cache dir {}: {}", cache_dir.string(), ec.message()));
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<Row> rows;
  rows.reserve(dirs.size());
  for (const fs::path& d : dirs) rows.push_back(read_build_dir(d, label));
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
    summary.builds = static_cast<int>(rows.size());
    for (const Row& r : rows) summary.unreadable += r.text("status") == "unreadable";
    report.caches.push_back(summary);
    for (Row& r : rows) report.rows.push_back(std::move(r));
  }
  report.duplicate_rows = mark_duplicates(report.rows);
  return report;
}

}  // namespace turnkey::report
