// benchmark --profile's numbers: ONNX Runtime's profile file read per node with the warm-up call
// left out (runtime/profile.h), and the stats' profile tables made from it
// (src/benchmark/benchmark_profile.h): sorted, shares of the node time adding up to at most 1.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "benchmark/benchmark_profile.h"
#include "turnkey/common/error.h"
#include "turnkey/runtime/profile.h"

namespace turnkey::test {
namespace {

using nlohmann::json;

json event(const std::string& cat, const std::string& name, double ts, double dur,
           const std::string& op = "", const std::string& index = "") {
  json e = {{"cat", cat},   {"pid", 1}, {"tid", 1},   {"ph", "X"},
            {"name", name}, {"ts", ts}, {"dur", dur}, {"args", json::object()}};
  if (!op.empty()) e["args"]["op_name"] = op;
  if (!index.empty()) e["args"]["node_index"] = index;
  return e;
}

// Two calls: the warm-up (ts 100-200) and one profiled (ts 300-400), as ONNX Runtime writes them.
std::string two_calls() {
  json events = json::array();
  events.push_back(event("Session", "model_loading_uri", 0, 50));
  for (double start : {100.0, 300.0}) {
    const double slow = start == 100 ? 50 : 30;  // the warm-up's conv is slower
    events.push_back(event("Node", "conv1_fence_before", start + 1, 0, "Conv"));
    events.push_back(event("Node", "conv1_kernel_time", start + 1, slow, "Conv", "0"));
    events.push_back(event("Node", "_kernel_time", start + 40, 6, "Relu", "1"));
    events.push_back(event("Node", "_kernel_time", start + 50, 4, "Relu", "2"));
    events.push_back(event("Node", "fc_kernel_time", start + 60, 10, "Gemm", "3"));
    events.push_back(event("Session", "SequentialExecutor::Execute", start, 90));
    events.push_back(event("Session", "model_run", start, 100));
  }
  return events.dump();
}

TEST(OrtProfile, SumsKernelTimePerNodeAndLeavesTheWarmUpOut) {
  const OpProfile p = parse_ort_profile(two_calls(), 1);
  EXPECT_EQ(p.calls, 1);
  EXPECT_DOUBLE_EQ(p.run_ms, 0.1);
  ASSERT_EQ(p.nodes.size(), 4u);  // the two unnamed Relus stay apart
  EXPECT_EQ(p.nodes[0].node, "conv1");
  EXPECT_EQ(p.nodes[0].op_type, "Conv");
  EXPECT_DOUBLE_EQ(p.nodes[0].total_ms, 0.03);
  EXPECT_EQ(p.nodes[0].count, 1);
  EXPECT_EQ(p.nodes[1].node, "");
  EXPECT_EQ(p.nodes[2].node, "");
  // Without skipping, both calls count.
  const OpProfile all = parse_ort_profile(two_calls(), 0);
  EXPECT_EQ(all.calls, 2);
  EXPECT_DOUBLE_EQ(all.nodes[0].total_ms, 0.08);
  EXPECT_EQ(all.nodes[0].count, 2);
}

TEST(OrtProfile, WhatIsNotAProfileIsOneLine) {
  for (const char* text : {"", "{\"a\": 1}", "[1, 2", "not json at all"}) {
    try {
      parse_ort_profile(text, 1);
      ADD_FAILURE() << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  // Events of other shapes are skipped, not trusted.
  const OpProfile p = parse_ort_profile(
      R"([1, "x", {"cat": "Node", "name": 5}, {"cat": "Node", "name": "a_kernel_time", "dur": "x"}])",
      0);
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(p.nodes[0].total_ms, 0);
  EXPECT_EQ(p.nodes[0].op_type, "?");
}

TEST(ProfileSummary, TablesAreSortedAndSharesAddUpToAtMostOne) {
  OpProfile p = parse_ort_profile(two_calls(), 1);
  p.raw_file = "/cache/b/profile_ort_x86_12345678.json";
  const json s = engine_internal::profile_summary(p, 2);
  EXPECT_EQ(s["raw_file"], "profile_ort_x86_12345678.json");
  EXPECT_DOUBLE_EQ(s["node_time_ms"].get<double>(), 0.05);
  ASSERT_EQ(s["by_op_type"].size(), 2u);  // top 2 of 3 op types
  EXPECT_EQ(s["by_op_type"][0]["op_type"], "Conv");
  EXPECT_DOUBLE_EQ(s["by_op_type"][0]["share"].get<double>(), 0.6);
  EXPECT_EQ(s["by_op_type"][1]["op_type"], "Gemm");
  EXPECT_EQ(s["by_op_type"][1]["nodes"], 1);
  ASSERT_EQ(s["by_node"].size(), 2u);
  EXPECT_EQ(s["by_node"][0]["node"], "conv1");
  EXPECT_EQ(s["summary"], "Conv 60.0%, Gemm 20.0%");
  const json full = engine_internal::profile_summary(p);
  double sum = 0;
  for (const json& r : full["by_op_type"]) sum += r["share"].get<double>();
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_EQ(full["by_node"][2]["node"], "(unnamed Relu #1)");
  // The block: a heading and the op types, per call.
  const std::vector<std::string> lines = engine_internal::profile_block_lines(full, 2);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[0].find("1 profiled calls"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("Conv"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("60.0%"), std::string::npos) << lines[2];
}

TEST(ProfileSummary, OpsWithoutNodesHaveNoNodeTableAndAFailureIsItsLine) {
  OpProfile p;
  p.profiler = "torch.profiler";
  p.calls = 10;
  p.per_node = false;
  p.nodes = {{"aten::addmm", "aten::addmm", 2.0, 10}, {"aten::relu", "aten::relu", 1.0, 10}};
  const json s = engine_internal::profile_summary(p);
  EXPECT_FALSE(s.contains("by_node"));
  EXPECT_FALSE(s["by_op_type"][0].contains("nodes"));
  const std::vector<std::string> failed =
      engine_internal::profile_block_lines({{"error", "boom"}, {"calls", 10}});
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0], "not made: boom (the measurement above stands)");
}

}  // namespace
}  // namespace turnkey::test

namespace turnkey {
namespace {

using nlohmann::json;

// Issue 32: a µs model's profile over 10 calls was a handful of timer ticks, and its per-call
// time (0.27 ms) stood far from the timed median (0.0016 ms) with nothing saying why.
TEST(ProfileCalls, FillTheTargetTimeWithinBoundsAndADisagreementIsSaid) {
  using engine_internal::profile_calls;
  EXPECT_EQ(profile_calls(0), engine_internal::kProfileMinCalls);        // unknown median
  EXPECT_EQ(profile_calls(100), engine_internal::kProfileMinCalls);      // 2 would do: 10
  EXPECT_EQ(profile_calls(1), 200);                                      // 200 ms at 1 ms
  EXPECT_EQ(profile_calls(0.0016), engine_internal::kProfileMaxCalls);  // capped

  OpProfile p;
  p.profiler = "ONNX Runtime profiler";
  p.calls = 100;
  p.per_node = true;
  p.nodes = {{"fc", "Gemm", 27.05, 100}};  // 0.2705 ms per call
  const json far = engine_internal::profile_summary(p, 10, 0.0016);
  EXPECT_EQ(far["timed_median_ms"], 0.0016);
  ASSERT_TRUE(far.contains("disagreement")) << far.dump();
  EXPECT_NE(far["disagreement"].get<std::string>().find("169x the timed median"),
            std::string::npos)
      << far["disagreement"];
  const std::vector<std::string> lines = engine_internal::profile_block_lines(far);
  EXPECT_NE(lines[0].find("(timed median 0.001600 ms)"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].rfind("Note: the profiled calls' node time", 0), 0u) << lines[1];
  // Within the factor: no note.
  EXPECT_FALSE(engine_internal::profile_summary(p, 10, 0.2).contains("disagreement"));
}

}  // namespace
}  // namespace turnkey
