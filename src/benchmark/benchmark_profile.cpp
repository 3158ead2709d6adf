// benchmark --profile (benchmark_profile.h): the separate profiled session, the profile field and
// its lines in the result block.
#include "benchmark/benchmark_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "turnkey/cache/build_records.h"
#include "turnkey/common/error.h"
#include "turnkey/common/text.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// "profile_<runtime>_<device>_<hash8>.json": beside the result's samples file, same key.
std::string raw_file_name(const BuildStats& stats) {
  std::string name = samples_file_name(result_fields_of(stats.fields()));
  if (name.rfind("samples_", 0) == 0) name.replace(0, 8, "profile_");
  return name;
}

// What a node is called in the tables: its name, or its op type and its place among the profile's
// nodes when the graph left it unnamed.
std::string node_label(const NodeTime& n, size_t position) {
  return n.node.empty() ? fmt::format("(unnamed {} #{})", n.op_type, position) : n.node;
}

double share_of(double part, double whole) { return whole > 0 ? part / whole : 0; }

}  // namespace

int profile_calls(double timed_median_ms) {
  if (!(timed_median_ms > 0)) return kProfileMinCalls;
  const double calls = std::ceil(kProfileTargetMs / timed_median_ms);
  return static_cast<int>(std::clamp<double>(calls, kProfileMinCalls, kProfileMaxCalls));
}

json profile_summary(const OpProfile& p, size_t top, double timed_median_ms) {
  double node_ms = 0;
  for (const NodeTime& n : p.nodes) node_ms += n.total_ms;
  struct OpRow {
    double ms = 0;
    int64_t nodes = 0;
  };
  std::map<std::string, OpRow> by_op;
  for (const NodeTime& n : p.nodes) {
    by_op[n.op_type].ms += n.total_ms;
    ++by_op[n.op_type].nodes;
  }
  std::vector<std::pair<std::string, OpRow>> ops(by_op.begin(), by_op.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  json op_rows = json::array();
  std::vector<std::string> summary;
  for (size_t i = 0; i < ops.size() && i < top; ++i) {
    const double share = share_of(ops[i].second.ms, node_ms);
    json row = {{"op_type", ops[i].first}, {"total_ms", ops[i].second.ms}, {"share", share}};
    if (p.per_node) row["nodes"] = ops[i].second.nodes;
    op_rows.push_back(std::move(row));
    if (summary.size() < kProfileBlockRows) {
      summary.push_back(fmt::format("{} {:.1f}%", ops[i].first, share * 100));
    }
  }
  json out = {{"profiler", p.profiler},  {"calls", p.calls},
              {"warmup_calls", 1},       {"raw_file", p.raw_file.filename().string()},
              {"node_time_ms", node_ms}, {"run_time_ms", p.run_ms},
              {"by_op_type", op_rows},   {"summary", fmt::format("{}", fmt::join(summary, ", "))}};
  if (timed_median_ms > 0 && p.calls > 0) {
    // The profile is not the timed phase: its own session, and a profiler that times each node.
    out["timed_median_ms"] = timed_median_ms;
    const double per_call = node_ms / p.calls;
    const double ratio = per_call > 0 ? per_call / timed_median_ms : 0;
    if (ratio > kProfileDisagreeFactor || (ratio > 0 && ratio < 1 / kProfileDisagreeFactor)) {
      out["disagreement"] = fmt::format(
          "the profiled calls' node time ({} ms per call) is {:.3g}x the timed median ({} ms): "
          "the profiler's own cost per node is in it; read the shares, not the times",
          format_latency(per_call), ratio, format_latency(timed_median_ms));
    }
  }
  if (p.per_node) {
    std::vector<size_t> order(p.nodes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return p.nodes[a].total_ms > p.nodes[b].total_ms; });
    json node_rows = json::array();
    for (size_t i = 0; i < order.size() && i < top; ++i) {
      const NodeTime& n = p.nodes[order[i]];
      node_rows.push_back({{"node", node_label(n, order[i])},
                           {"op_type", n.op_type},
                           {"total_ms", n.total_ms},
                           {"share", share_of(n.total_ms, node_ms)}});
    }
    out["by_node"] = node_rows;
  }
  return out;
}

void profile_pass(Build& build, const BenchmarkSetup& setup, std::string& log) {
  const fs::path raw = build.dir->path() / raw_file_name(build.stats);
  // The runtime's profiler names its own file from this prefix; a failed pass may leave it.
  const fs::path prefix = build.dir->path() / (raw.stem().string() + ".tmp");
  json result;
  const double median_ms = build.stats.fields().value("median_latency_ms", 0.0);
  const int calls = profile_calls(median_ms);
  try {
    RuntimeOptions ro = setup.ro;
    ro.profile_prefix = prefix;
    ScopedPin pin(ro.cpus);
    std::unique_ptr<Session> session;
    if (setup.runtime->needs_live_model()) {
      LiveModel lm{build.session, build.model->id, build.dir->path(), build.build_name};
      session = setup.runtime->load_live(lm, {}, ro);
    } else {
      session = setup.runtime->load(build.onnx_path, build.inputs, ro);
    }
    result = profile_summary(session->profile(calls, raw), kProfileTopRows, median_ms);
    log += fmt::format("profile: {} calls after 1 warm-up call ({}), node time {:.4g} ms, raw {}\n",
                       calls, result.value("profiler", ""), result.value("node_time_ms", 0.0),
                       raw.string());
  } catch (const std::exception& e) {
    result = {{"error", one_line(e.what())}, {"calls", calls}};
    log += "profile failed: " + one_line(e.what()) + "\n";
  }
  std::error_code ec;
  for (fs::directory_iterator it(build.dir->path(), ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(prefix.filename().string(), 0) == 0) {
      fs::remove(it->path(), ec);
    }
  }
  build.stats.set("profile", std::move(result));
}

std::vector<std::string> profile_block_lines(const json& profile, size_t rows) {
  if (!profile.is_object()) return {};
  if (profile.contains("error")) {
    return {"not made: " + profile.value("error", std::string("?")) +
            " (the measurement above stands)"};
  }
  const int calls = profile.value("calls", 0);
  const double node_ms = profile.value("node_time_ms", 0.0);
  const double timed = profile.value("timed_median_ms", 0.0);
  std::vector<std::string> lines = {fmt::format(
      "{} profiled calls after a warm-up call ({}): node time {} ms per call{}; raw: {}", calls,
      profile.value("profiler", std::string("?")), format_latency(calls > 0 ? node_ms / calls : 0),
      timed > 0 ? fmt::format(" (timed median {} ms)", format_latency(timed)) : "",
      profile.value("raw_file", std::string()))};
  if (profile.contains("disagreement")) {
    lines.push_back("Note: " + profile.value("disagreement", std::string()));
  }
  const json ops = profile.value("by_op_type", json::array());
  if (ops.empty()) {
    lines.push_back("(the profiler recorded no operator)");
    return lines;
  }
  lines.push_back(fmt::format("{:<32} {:>7} {:>14}{}", "op type", "share", "ms per call",
                              profile.contains("by_node") ? "  nodes" : ""));
  for (size_t i = 0; i < ops.size() && i < rows; ++i) {
    const json& op = ops[i];
    std::string name = op.value("op_type", std::string("?"));
    if (name.size() > 32) name = name.substr(0, 31) + "~";
    lines.push_back(fmt::format(
        "{:<32} {:>6.1f}% {:>14}{}", name, op.value("share", 0.0) * 100,
        format_latency(calls > 0 ? op.value("total_ms", 0.0) / calls : 0),
        op.contains("nodes") ? fmt::format("  {:>5}", op.value("nodes", int64_t{0})) : ""));
  }
  return lines;
}

}  // namespace turnkey::engine_internal
