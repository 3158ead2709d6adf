// The corpus request: which runs are corpus runs, their sizes and timeout, and the request and
// input items as JSON (the workers' copy of what the user asked for).
#include "turnkey/corpus/corpus.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "corpus/corpus_internal.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"

namespace turnkey {

using nlohmann::json;
using namespace engine_internal;

bool is_corpus_run(const GlobalOptions& g) {
  // A limit or --retry-failed only means something for isolated inputs: asking for one is
  // asking for isolation.
  return g.process_isolation || g.use_slurm || g.jobs > 1 || g.timeout_s > 0 ||
         !g.memory_limit.empty() || g.max_processes > 0 || g.retry_failed;
}

int64_t parse_size(const std::string& text) {
  std::string t = text;
  t.erase(std::remove_if(t.begin(), t.end(), ::isspace), t.end());
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = t.substr(used);
  std::transform(unit.begin(), unit.end(), unit.begin(), ::toupper);
  static const std::map<std::string, double> units = {{"", 1},
                                                      {"B", 1},
                                                      {"K", 1024.0},
                                                      {"KB", 1024.0},
                                                      {"KIB", 1024.0},
                                                      {"M", 1048576.0},
                                                      {"MB", 1048576.0},
                                                      {"MIB", 1048576.0},
                                                      {"G", 1073741824.0},
                                                      {"GB", 1073741824.0},
                                                      {"GIB", 1073741824.0},
                                                      {"T", 1099511627776.0},
                                                      {"TB", 1099511627776.0},
                                                      {"TIB", 1099511627776.0}};
  auto it = units.find(unit);
  if (used == 0 || it == units.end() || !(value > 0) || !std::isfinite(value)) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("--memory-limit {}: expected a size such as 512M or 4G", text));
  }
  double bytes = value * it->second;
  if (bytes < 16.0 * 1048576.0) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("--memory-limit {}: too small to start a worker (at least 16M)", text));
  }
  return static_cast<int64_t>(bytes);
}

double corpus_timeout_s(const GlobalOptions& g) {
  if (g.timeout_s > 0) return g.timeout_s;
  if (auto v = env_int("TURNKEY_TIMEOUT_SECONDS", 1, 365LL * 24 * 3600)) {
    return static_cast<double>(*v);
  }
  return 3600;
}

namespace engine_internal {

// ---- request <-> JSON --------------------------------------------------------------------------

json request_to_json(const RunRequest& r) {
  const GlobalOptions& g = r.global;
  json seq = json::array();
  for (const ToolCall& c : r.sequence) seq.push_back({{"name", c.name}, {"options", c.options}});
  return {{"cache_dir", g.cache_dir},
          {"labels", g.labels},
          {"rebuild", g.rebuild},
          {"lean_cache", g.lean_cache},
          {"python", g.python},
          {"sandbox", g.sandbox},
          {"sandbox_allow", g.sandbox_allow},
          {"sequence", seq},
          {"command_line", r.command_line},
          {"run_id", r.run_id},
          {"timeout_s", g.timeout_s},
          {"memory_limit", g.memory_limit},
          {"max_processes", g.max_processes}};
}

RunRequest request_from_json(const json& j) {
  RunRequest r;
  GlobalOptions& g = r.global;
  g.cache_dir = j.value("cache_dir", "");
  g.labels = j.value("labels", std::vector<std::string>{});
  g.rebuild = j.value("rebuild", "if_needed");
  g.lean_cache = j.value("lean_cache", false);
  g.python = j.value("python", "");
  g.sandbox = j.value("sandbox", false);
  g.sandbox_allow = j.value("sandbox_allow", std::vector<std::string>{});
  g.timeout_s = j.value("timeout_s", 0.0);
  g.memory_limit = j.value("memory_limit", "");
  g.max_processes = j.value("max_processes", 0);
  for (const json& c : j.value("sequence", json::array())) {
    r.sequence.push_back({c.value("name", ""), c.value("options", json::object())});
  }
  r.command_line = j.value("command_line", "");
  r.run_id = j.value("run_id", "");
  return r;
}

json item_to_json(const InputItem& item) {
  return {{"given", item.given}, {"path", item.path.string()}, {"hashes", item.hashes}};
}

InputItem item_from_json(const json& j) {
  InputItem item;
  item.given = j.value("given", "");
  item.path = j.value("path", "");
  item.hashes = j.value("hashes", std::vector<std::string>{});
  return item;
}

}  // namespace engine_internal

}  // namespace turnkey
