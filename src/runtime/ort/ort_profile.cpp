// ONNX Runtime's profile file (profile.h). Its events are Chrome trace events ("ph": "X", "ts"
// and "dur" in microseconds): per node "<name>_fence_before", "<name>_kernel_time",
// "<name>_fence_after" (category "Node", args.op_name), per call "model_run" (category
// "Session").
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "turnkey/common/error.h"
#include "turnkey/runtime/profile.h"

namespace turnkey {

using nlohmann::json;

namespace {

constexpr std::string_view kKernelSuffix = "_kernel_time";

double number_or(const json& e, const char* key, double fallback) {
  auto it = e.find(key);
  return it != e.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string text_or(const json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

OpProfile parse_ort_profile(std::string_view json_text, int skip_runs) {
  json events;
  try {
    events = json::parse(json_text);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("the ONNX Runtime profile is not JSON: {}", first_line(e.what())));
  }
  if (!events.is_array()) {
    throw Error(ErrorKind::InvalidInput, "the ONNX Runtime profile is not a list of events");
  }
  // The calls, in time order; the first skip_runs are warm-up.
  std::vector<std::pair<double, double>> runs;  // (ts, dur) in us
  for (const json& e : events) {
    if (e.is_object() && text_or(e, "cat") == "Session" && text_or(e, "name") == "model_run") {
      runs.emplace_back(number_or(e, "ts", 0), number_or(e, "dur", 0));
    }
  }
  std::sort(runs.begin(), runs.end());
  const size_t skipped = std::min(runs.size(), static_cast<size_t>(std::max(skip_runs, 0)));
  // Node events start after their call does; those before the first profiled call are warm-up.
  const double profiled_from = skipped < runs.size() ? runs[skipped].first
                               : skipped > 0
                                   ? runs[skipped - 1].first + runs[skipped - 1].second + 1
                                   : 0;
  OpProfile p;
  p.profiler = "ONNX Runtime profiler";
  p.calls = static_cast<int>(runs.size() - skipped);
  for (size_t i = skipped; i < runs.size(); ++i) p.run_ms += runs[i].second / 1000.0;
  std::map<std::string, size_t> index;  // node key -> position in p.nodes
  for (const json& e : events) {
    if (!e.is_object() || text_or(e, "cat") != "Node") continue;
    const std::string name = text_or(e, "name");
    if (name.size() < kKernelSuffix.size() ||
        name.compare(name.size() - kKernelSuffix.size(), kKernelSuffix.size(), kKernelSuffix) !=
            0) {
      continue;
    }
    if (number_or(e, "ts", 0) < profiled_from) continue;
    const json args = e.value("args", json::object());
    const std::string op = args.is_object() ? text_or(args, "op_name") : "";
    std::string node = name.substr(0, name.size() - kKernelSuffix.size());
    // Unnamed nodes (legal in ONNX) would all be "": told apart by their index in the plan.
    const std::string key =
        node.empty() && args.is_object() ? "#" + text_or(args, "node_index") + op : node;
    auto [it, inserted] = index.emplace(key, p.nodes.size());
    if (inserted) p.nodes.push_back({node, op.empty() ? "?" : op, 0, 0});
    NodeTime& n = p.nodes[it->second];
    n.total_ms += std::max(0.0, number_or(e, "dur", 0)) / 1000.0;
    ++n.count;
  }
  return p;
}

}  // namespace turnkey
