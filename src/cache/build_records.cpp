#include "turnkey/cache/build_records.h"

#include <fmt/format.h>

#include "turnkey/cache/fields.h"
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

BuildState BuildState::from_json(const json& state, std::vector<std::string>& problems) {
  BuildState s;
  if (!state.is_object()) return s;
  s.schema_version = static_cast<int>(number_of(state, "schema_version"));
  struct {
    const char* key;
    std::string BuildState::*member;
  } const texts[] = {
      {"build_name", &BuildState::build_name}, {"build_status", &BuildState::build_status},
      {"error", &BuildState::error},           {"failed_tool", &BuildState::failed_tool},
      {"last_tool", &BuildState::last_tool},   {"finished", &BuildState::finished}};
  for (const auto& t : texts) {
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
  auto setting = [&](const std::string& name) {
    if (!fields.is_object() || !fields.contains(name)) return std::string();
    const json& v = fields[name];
    return v.is_string() ? v.get<std::string>() : v.is_null() ? std::string() : v.dump();
  };
  return fmt::format("{} {} threads={} pin={} shapes={} sequence={}", setting("runtime"),
                     setting("device"), setting("threads"), setting("pinned_cpus"),
                     setting("input_shapes"), setting("sequence"));
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
