#include "pipeline/progress.h"

#include <array>
#include <utility>

#include "turnkey/cache/build_cache.h"
#include <utility>

namespace turnkey::engine_internal {

using nlohmann::json;

namespace {

// The one spelling of each event kind in the progress file.
constexpr std::array<std::pair<ProgressKind, const char*>, 8> kKinds = {{
    {ProgressKind::Start, "start"},
    {ProgressKind::Build, "build"},
    {ProgressKind::Stage, "stage"},
    {ProgressKind::Benchmark, "benchmark"},
    {ProgressKind::Paused, "paused"},
    {ProgressKind::Resumed, "resumed"},
    {ProgressKind::Cpus, "cpus"},
    {ProgressKind::Done, "done"},
}};

std::string text_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

json InputOutcome::to_json() const {
  json builds_json = json::array();
  for (const BuildRef& b : builds) builds_json.push_back({{"build", b.build}, {"dir", b.dir}});
  json j = {{"status", status ? status_name(*status) : ""},
            {"stage", stage},
            {"error", error},
            {"builds", builds_json}};
  if (!log.empty()) j["log"] = log.string();
  if (signal > 0) j["signal"] = signal;
  return j;
}

InputOutcome InputOutcome::from_json(const json& j) {
  InputOutcome o;
  if (!j.is_object()) return o;
  o.status = parse_status(text_of(j, "status"));
  o.stage = text_of(j, "stage");
  o.error = text_of(j, "error");
  o.log = text_of(j, "log");
  if (auto it = j.find("signal"); it != j.end() && it->is_number_integer()) {
    o.signal = it->get<int>();
  }
  if (auto it = j.find("builds"); it != j.end() && it->is_array()) {
    for (const json& b : *it) {
      if (b.is_object()) o.builds.push_back({text_of(b, "build"), text_of(b, "dir")});
    }
  }
  return o;
}

ProgressEvent ProgressEvent::start(long long pid) {
  ProgressEvent e;
  e.kind = ProgressKind::Start;
  e.pid = pid;
  return e;
}

ProgressEvent ProgressEvent::opened(const std::string& build, const std::string& dir) {
  ProgressEvent e;
  e.kind = ProgressKind::Build;
  e.build = build;
  e.dir = dir;
  return e;
}

ProgressEvent ProgressEvent::stage_started(const std::string& stage, const std::string& build) {
  ProgressEvent e;
  e.kind = ProgressKind::Stage;
  e.stage = stage;
  e.build = build;
  return e;
}

ProgressEvent ProgressEvent::benchmark(const std::string& phase, const std::vector<int>& cpus) {
  ProgressEvent e;
  e.kind = ProgressKind::Benchmark;
  e.phase = phase;
  e.cpus = cpus;
  return e;
}

ProgressEvent ProgressEvent::paused(const std::string& for_input) {
  ProgressEvent e;
  e.kind = ProgressKind::Paused;
  e.for_input = for_input;
  return e;
}

ProgressEvent ProgressEvent::resumed() {
  ProgressEvent e;
  e.kind = ProgressKind::Resumed;
  return e;
}

ProgressEvent ProgressEvent::cpus_now(const std::vector<int>& cpus,
                                      const std::string& for_input) {
  ProgressEvent e;
  e.kind = ProgressKind::Cpus;
  e.cpus = cpus;
  e.for_input = for_input;
  return e;
}

ProgressEvent ProgressEvent::done(const InputOutcome& outcome) {
  ProgressEvent e;
  e.kind = ProgressKind::Done;
  e.outcome = outcome;
  return e;
}

json ProgressEvent::to_json() const {
  json j = json::object();
  for (const auto& [k, name] : kKinds) {
    if (k == kind) j["e"] = name;
  }
  // Only the members an event of this kind carries (and non-empty ones), as the file always had.
  auto put = [&](const char* key, const std::string& v) {
    if (!v.empty()) j[key] = v;
  };
  put("build", build);
  put("dir", dir);
  put("stage", stage);
  put("phase", phase);
  put("for", for_input);
  if (!cpus.empty() || kind == ProgressKind::Cpus) j["cpus"] = cpus;
  if (kind == ProgressKind::Start) j["pid"] = pid;
  if (kind == ProgressKind::Done) j["outcome"] = outcome.to_json();
  return j;
}

std::string ProgressEvent::line(bool by_parent) const {
  json j = to_json();
  j["t"] = utc_timestamp_now();
  if (by_parent) j["by"] = "parent";
  return j.dump() + "\n";
}

std::optional<ProgressEvent> ProgressEvent::from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  const std::string name = text_of(j, "e");
  ProgressEvent e;
  bool known = false;
  for (const auto& [k, kind_name] : kKinds) {
    if (name == kind_name) {
      e.kind = k;
      known = true;
    }
  }
  if (!known) return std::nullopt;
  e.build = text_of(j, "build");
  e.dir = text_of(j, "dir");
  e.stage = text_of(j, "stage");
  e.phase = text_of(j, "phase");
  e.for_input = text_of(j, "for");
  if (auto it = j.find("cpus"); it != j.end() && it->is_array()) {
    for (const json& c : *it) {
      if (c.is_number_integer()) e.cpus.push_back(c.get<int>());
    }
  }
  if (auto it = j.find("pid"); it != j.end() && it->is_number_integer()) {
    e.pid = it->get<long long>();
  }
  if (e.kind == ProgressKind::Done) e.outcome = InputOutcome::from_json(j.value("outcome", json()));
  return e;
}

}  // namespace turnkey::engine_internal
