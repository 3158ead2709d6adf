#include "turnkey/cache/build_records.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "turnkey/cache/fields.h"
#include "turnkey/common/flags.h"
#include "turnkey/common/sha256.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

bool is_build_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return false;
  const std::string name = dir.filename().string();
  return fs::exists(fs::symlink_status(dir / (name + "_state.yaml"), ec)) ||
         fs::exists(fs::symlink_status(dir / "turnkey_stats.yaml", ec));
}

namespace {

std::string text_of(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

double number_of(const json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

std::vector<std::string> text_list(const json& j, const char* key, const char* what,
                                   std::vector<std::string>& problems) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array()) {
    problems.push_back(fmt::format("{}: {} is not a list", what, key));
    return out;
  }
  for (const json& e : *it) {
    if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

}  // namespace

namespace {

// Members of a record read from / written to one JSON key each.
template <typename Record>
struct TextMember {
  const char* key;
  std::string Record::*member;
};

const TextMember<ToolStep> kStepTexts[] = {
    {"name", &ToolStep::name}, {"status", &ToolStep::status},     {"started", &ToolStep::started},
    {"key", &ToolStep::key},   {"versions", &ToolStep::versions}, {"error", &ToolStep::error},
    {"stage", &ToolStep::stage}};

// build_name .. finished: their wrong types were problems before the rest was typed.
const TextMember<BuildState> kCheckedStateTexts[] = {
    {"build_name", &BuildState::build_name}, {"build_status", &BuildState::build_status},
    {"error", &BuildState::error},           {"failed_tool", &BuildState::failed_tool},
    {"last_tool", &BuildState::last_tool},   {"finished", &BuildState::finished}};
const TextMember<BuildState> kStateTexts[] = {
    {"status", &BuildState::status},         {"turnkey_version", &BuildState::turnkey_version},
    {"input", &BuildState::input},           {"run", &BuildState::run},
    {"rebuild", &BuildState::rebuild},       {"started", &BuildState::started},
    {"chain_key", &BuildState::chain_key},   {"onnx_path", &BuildState::onnx_path},
    {"model_name", &BuildState::model_name}, {"hash_full", &BuildState::hash_full}};

// Moves `key` of `from` into `rest` when it is there but not taken.
void keep(const json& from, const char* key, json& rest) {
  if (from.contains(key)) rest[key] = from[key];
}

}  // namespace

json ToolStep::to_json() const {
  json j = rest.is_object() ? rest : json::object();
  for (const auto& t : kStepTexts) {
    if (!(this->*t.member).empty()) j[t.key] = this->*t.member;
  }
  if (duration_s) j["duration_s"] = *duration_s;
  if (!options.is_null()) j["options"] = options;
  if (!outputs.is_null()) j["outputs"] = outputs;
  if (!artifacts.is_null()) j["artifacts"] = artifacts;
  if (reused) j["reused"] = true;
  return j;
}

ToolStep ToolStep::from_json(const json& step) {
  ToolStep t;
  if (!step.is_object()) return t;
  for (const auto& [key, value] : step.items()) {
    bool taken = false;
    for (const auto& m : kStepTexts) {
      if (key == m.key && value.is_string()) {
        t.*m.member = value.get<std::string>();
        taken = true;
      }
    }
    if (key == "duration_s" && value.is_number()) {
      t.duration_s = value.get<double>();
      taken = true;
    } else if (key == "options" && !value.is_null()) {
      t.options = value;
      taken = true;
    } else if (key == "outputs" && value.is_object()) {
      t.outputs = value;
      taken = true;
    } else if (key == "artifacts" && value.is_array()) {
      t.artifacts = value;
      taken = true;
    } else if (key == "reused" && value.is_boolean() && value.get<bool>()) {
      t.reused = true;
      taken = true;
    }
    if (!taken) t.rest[key] = value;
  }
  return t;
}

json BuildState::to_json() const {
  json j = rest.is_object() ? rest : json::object();
  if (schema_version > 0) j["schema_version"] = schema_version;
  for (const auto& t : kCheckedStateTexts) {
    if (!(this->*t.member).empty()) j[t.key] = this->*t.member;
  }
  for (const auto& t : kStateTexts) {
    if (!(this->*t.member).empty()) j[t.key] = this->*t.member;
  }
  j["sequence"] = sequence;
  if (!continued_from.empty()) j["continued_from"] = continued_from;
  json steps = json::array();
  for (const ToolStep& t : tools) steps.push_back(t.to_json());
  j["tools"] = steps;
  if (lean_cache) j["lean_cache"] = true;
  if (signal > 0) j["signal"] = signal;
  return j;
}

BuildState BuildState::from_json(const json& state, std::vector<std::string>& problems) {
  BuildState s;
  if (!state.is_object()) return s;
  // A version as the file says it, if it is one: a forged 5.6e112 must not reach an int.
  const double version = number_of(state, "schema_version");
  if (version >= 0 && version <= std::numeric_limits<int>::max() && version == std::floor(version)) {
    s.schema_version = static_cast<int>(version);
  } else {
    problems.push_back("state: schema_version is not a whole number from 0 to 2147483647");
  }
  for (const auto& t : kCheckedStateTexts) {
    auto it = state.find(t.key);
    if (it == state.end() || it->is_null()) continue;
    if (it->is_string()) {
      s.*t.member = it->get<std::string>();
    } else {
      problems.push_back(fmt::format("state: {} is not text", t.key));
    }
  }
  s.sequence = text_list(state, "sequence", "state", problems);
  s.continued_from = text_list(state, "continued_from", "state", problems);
  for (const auto& [key, value] : state.items()) {
    bool taken = key == "schema_version" || key == "sequence" || key == "continued_from";
    for (const auto& t : kCheckedStateTexts) taken = taken || key == t.key;
    for (const auto& t : kStateTexts) {
      if (key == t.key && value.is_string()) {
        s.*t.member = value.get<std::string>();
        taken = true;
      }
    }
    if (key == "tools" && value.is_array()) {
      for (const json& step : value) s.tools.push_back(ToolStep::from_json(step));
      taken = std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_object(); });
      if (!taken) s.tools.clear();
    } else if (key == "lean_cache" && value.is_boolean() && value.get<bool>()) {
      s.lean_cache = true;
      taken = true;
    } else if (key == "signal" && value.is_number_integer() && value.get<int64_t>() > 0) {
      s.signal = value.get<int>();
      taken = true;
    }
    if (!taken) keep(state, key.c_str(), s.rest);
  }
  return s;
}

json ResultRecord::to_json() const {
  json j = fields.is_object() ? fields : json::object();
  j["key"] = key;
  j["status"] = status;
  if (!error.empty()) j["error"] = error;
  if (!failed_tool.empty()) j["failed_tool"] = failed_tool;
  j["finished"] = finished;
  if (!samples_file.empty()) j["samples_file"] = samples_file;
  json h = json::array();
  for (const RunSummary& r : history) {
    h.push_back({{"finished", r.finished},
                 {"status", r.status},
                 {"median_latency_ms", r.median_latency_ms},
                 {"mean_latency_ms", r.mean_latency_ms}});
  }
  j["history"] = h;
  return j;
}

ResultRecord ResultRecord::from_json(const json& j) {
  ResultRecord r;
  r.fields = result_fields_of(j);
  r.key = text_of(j, "key");
  if (r.key.empty()) r.key = result_key(r.fields);
  r.status = text_of(j, "status");
  r.error = text_of(j, "error");
  r.failed_tool = text_of(j, "failed_tool");
  r.finished = text_of(j, "finished");
  r.samples_file = text_of(j, "samples_file");
  if (j.is_object() && j.contains("history") && j["history"].is_array()) {
    for (const json& h : j["history"]) {
      if (!h.is_object()) continue;
      r.history.push_back({text_of(h, "finished"), text_of(h, "status"),
                           number_of(h, "median_latency_ms"), number_of(h, "mean_latency_ms")});
    }
  }
  return r;
}

RunSummary ResultRecord::summary() const {
  return {finished, status, number_of(fields, "median_latency_ms"),
          number_of(fields, "mean_latency_ms")};
}

std::string result_key(const json& fields) {
  return settings_key([&](const char* name) {
    if (!fields.is_object() || !fields.contains(name)) return std::string();
    const json& v = fields[name];
    return v.is_string() ? v.get<std::string>() : v.is_null() ? std::string() : v.dump();
  });
}

json result_fields_of(const json& stats) {
  json out = json::object();
  if (!stats.is_object()) return out;
  for (const StatsField& f : field_table()) {
    if (f.scope != FieldScope::Result) continue;
    auto it = stats.find(f.key);
    if (it != stats.end() && !it->is_null()) out[f.key] = *it;
  }
  return out;
}

std::vector<ResultRecord> results_of(const json& stats) {
  std::vector<ResultRecord> out;
  if (!stats.is_object()) return out;
  if (stats.contains("results") && stats["results"].is_array()) {
    for (const json& r : stats["results"]) {
      if (r.is_object()) out.push_back(ResultRecord::from_json(r));
    }
    return out;
  }
  if (text_of(stats, "runtime").empty()) return out;
  // Schema <= 3: the latest run's result at the top level, its state in build_status.
  ResultRecord r;
  r.fields = result_fields_of(stats);
  r.key = result_key(r.fields);
  r.status = text_of(stats, "build_status");
  r.error = text_of(stats, "error");
  r.failed_tool = text_of(stats, "failed_tool");
  r.samples_file =
      fmt::format("samples_{}_{}.json", text_of(stats, "runtime"), text_of(stats, "device"));
  out.push_back(std::move(r));
  return out;
}

std::vector<ResultRecord> merge_result(std::vector<ResultRecord> results, ResultRecord latest) {
  for (ResultRecord& r : results) {
    if (r.key != latest.key) continue;
    latest.history = std::move(r.history);
    latest.history.push_back(r.summary());
    if (latest.history.size() > ResultRecord::kHistoryLimit) {
      latest.history.erase(latest.history.begin(),
                           latest.history.end() - ResultRecord::kHistoryLimit);
    }
    r = std::move(latest);
    return results;
  }
  results.push_back(std::move(latest));
  return results;
}

namespace {

// A run flagged for the machine it ran on (other processes on its CPUs, slow speed probes, a CPU
// quota) measured that machine, not this host's spread between runs: its median would widen the
// next clean run's interval by what the flags already said (a run at 30x under load gave a
// 29 ms result the interval [0, 10971] ms).
bool measured_a_disturbed_machine(const json& fields) {
  const json codes = fields.value("flag_codes", json::array());
  if (!codes.is_array()) return false;
  for (const FlagCode code : {FlagCode::MachineBusy, FlagCode::MachineSlowed,
                              FlagCode::QuotaThrottled}) {
    for (const json& c : codes) {
      if (c.is_string() && c.get<std::string>() == flag_name(code)) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<double> earlier_medians(const std::vector<ResultRecord>& results,
                                    const std::string& key, const std::string& host) {
  std::vector<double> out;
  auto it = std::find_if(results.begin(), results.end(),
                         [&](const ResultRecord& r) { return r.key == key; });
  if (it == results.end() || host.empty() || !it->fields.is_object()) return out;
  const json& f = it->fields;
  const json env = f.value("environment", json::object());
  const double median = number_of(f, "median_latency_ms");
  if (!env.is_object() || text_of(env, "host") != host || median <= 0) return out;
  const json earlier = f.value("earlier_medians_ms", json::array());
  for (const json& m : earlier.is_array() ? earlier : json::array()) {
    if (m.is_number() && m.get<double>() > 0) out.push_back(m.get<double>());
  }
  if (!measured_a_disturbed_machine(f)) out.push_back(median);
  if (out.size() > kEarlierMediansLimit) {
    out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(kEarlierMediansLimit));
  }
  return out;
}

void carry_model_facts(const json& from, json& into) {
  if (!from.is_object()) return;
  for (const StatsField& f : field_table()) {
    if (f.scope == FieldScope::Model && from.contains(f.key)) into[f.key] = from[f.key];
  }
}

std::string samples_file_name(const json& fields) {
  return fmt::format("samples_{}_{}_{}.json", text_of(fields, "runtime"), text_of(fields, "device"),
                     sha256_hex(result_key(fields)).substr(0, 8));
}

}  // namespace turnkey
