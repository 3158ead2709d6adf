// Sweeps (docs/measurement.md) as units: which inputs carry the batch and their shapes at a batch,
// the model copy with a symbolic batch dim (run by ONNX Runtime at another batch), the points a
// request asks for, and the line that says why more requests in flight gave no more throughput.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "ort_run_support.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "run/sweep.h"
#include "turnkey/transforms/batch_variant.h"
#include "turnkey/common/error.h"
#include "turnkey/onnx/model_facts.h"
#include "turnkey/onnx/onnx_proto.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using onnx_model::InputShapes;

// The model on ONNX Runtime at `shapes`: its outputs after one call.
std::vector<HostTensor> run_at(const fs::path& model, const InputShapes& shapes) {
  return test::run_ort(model, shapes);
}

TEST(BatchShapes, SymbolicBatchIsSetAndNeedsNoCopy) {
  test::TempDir dir{"tk-sweeps"};
  test::symbolic_dim(dir / "m.onnx");  // x [batch, 16]
  const auto facts = onnx_model::load_facts(dir / "m.onnx");
  const onnx_model::BatchShapes b = onnx_model::batch_input_shapes(facts, {}, 4);
  EXPECT_EQ(b.shapes, (InputShapes{{"x", {4, 16}}}));
  EXPECT_EQ(b.batched, (std::vector<std::string>{"x"}));
  EXPECT_TRUE(b.fixed.empty());
  EXPECT_EQ(onnx_model::input_shapes_text(b.shapes), "x:4x16");
  EXPECT_EQ(run_at(dir / "m.onnx", b.shapes).at(0).shape, (std::vector<int64_t>{4, 4}));
}

TEST(BatchShapes, FixedBatchIsNamedForACopyAndOtherSymbolicDimsBecomeOne) {
  test::TempDir dir{"tk-sweeps"};
  test::linear_relu(dir / "m.onnx");  // input [1, 16]
  const auto facts = onnx_model::load_facts(dir / "m.onnx");
  const onnx_model::BatchShapes b = onnx_model::batch_input_shapes(facts, {}, 3);
  EXPECT_EQ(b.shapes, (InputShapes{{"input", {3, 16}}}));
  EXPECT_EQ(b.fixed, (std::vector<std::string>{"input"}));
  // At the file's own batch nothing needs rewriting.
  EXPECT_TRUE(onnx_model::batch_input_shapes(facts, {}, 1).fixed.empty());

  using onnx_model::Dim;
  using onnx_model::ValueInfo;
  onnx_model::ModelFacts f;
  ValueInfo tokens{"tokens", DType::Int64, "INT64", {Dim{-1, "batch"}, Dim{-1, "seq"}}, true, {}};
  ValueInfo features{"features", DType::Float32, "FLOAT", {Dim{10, ""}}, true, {}};  // one sample
  ValueInfo lengths{"lengths", DType::Int64, "INT64", {Dim{-1, "batch"}}, true, {}};
  ValueInfo scale{"scale", DType::Float32, "FLOAT", {}, true, {}};
  f.inputs = {tokens, features, lengths, scale};
  const onnx_model::BatchShapes s = onnx_model::batch_input_shapes(f, {}, 8);
  EXPECT_EQ(s.batched, (std::vector<std::string>{"tokens", "lengths"}));
  EXPECT_EQ(s.shapes, (InputShapes{{"tokens", {8, 1}}, {"lengths", {8}}}));
  EXPECT_EQ(s.ones_note,
            "symbolic dims set to 1: input 'tokens' [seq] (choose with --input-shapes "
            "tokens:1x1)");
  // The user's shape keeps its other dims.
  EXPECT_EQ(onnx_model::batch_input_shapes(f, {{"tokens", {1, 128}}}, 8).shapes.at("tokens"),
            (std::vector<int64_t>{8, 128}));
  // No input carries a batch: said, with the rule.
  onnx_model::ModelFacts none;
  none.inputs = {features, scale};
  try {
    onnx_model::batch_input_shapes(none, {}, 2);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "no input has a batch dim (rank >= 2, or a symbolic first dim)");
  }
}

TEST(BatchVariant, AFixedBatchModelRunsAtAnotherBatch) {
  test::TempDir dir{"tk-sweeps"};
  test::small_conv_net(dir / "conv.onnx");  // input [1,3,32,32] -> output [1,10]
  transforms::write_batch_variant(dir / "conv.onnx", dir / "conv_b.onnx", {"input"});
  const auto facts = onnx_model::load_facts(dir / "conv_b.onnx");  // checker passes
  ASSERT_EQ(facts.inputs.size(), 1u);
  EXPECT_EQ(facts.inputs[0].dims[0].param, transforms::kBatchDimName);
  EXPECT_EQ(facts.outputs[0].dims[0].param, transforms::kBatchDimName);
  EXPECT_EQ(facts.inputs[0].dims[1].value, 3);
  const auto out = run_at(dir / "conv_b.onnx", {{"input", {5, 3, 32, 32}}});
  EXPECT_EQ(out.at(0).shape, (std::vector<int64_t>{5, 10}));
  // The same numbers as the original at batch 1 (the weights came along).
  EXPECT_EQ(run_at(dir / "conv_b.onnx", {{"input", {1, 3, 32, 32}}}).at(0).data,
            run_at(dir / "conv.onnx", {}).at(0).data);
}

TEST(BatchVariant, ExternalDataComesAlongAndAGraphThatKeepsItsBatchFailsWhenRun) {
  test::TempDir dir{"tk-sweeps"};
  test::external_data_linear(dir / "ext.onnx");
  fs::create_directories(dir / "out");
  transforms::write_batch_variant(dir / "ext.onnx", dir / "out" / "ext.onnx", {"input"});
  EXPECT_EQ(run_at(dir / "out" / "ext.onnx", {{"input", {2, 16}}}).at(0).shape,
            (std::vector<int64_t>{2, 4}));
  // tiny_transformer reshapes to constant [1,8,2,16]: the copy loads, its run at 4 fails.
  test::tiny_transformer(dir / "t.onnx");
  transforms::write_batch_variant(dir / "t.onnx", dir / "t_b.onnx", {"input_ids", "attention_mask"});
  EXPECT_THROW(run_at(dir / "t_b.onnx", {{"input_ids", {4, 8}}, {"attention_mask", {4, 8}}}),
               Error);
  EXPECT_NO_THROW(run_at(dir / "t_b.onnx", {{"input_ids", {1, 8}}, {"attention_mask", {1, 8}}}));
  // A name that is no graph input, and a model that is not one, are one line each.
  EXPECT_THROW(transforms::write_batch_variant(dir / "t.onnx", dir / "x.onnx", {"nope"}), Error);
  std::ofstream(dir / "junk.onnx") << "not a model";
  EXPECT_THROW(transforms::write_batch_variant(dir / "junk.onnx", dir / "y.onnx", {"input"}), Error);
}

TEST(SweepPlan, PointsAndLabels) {
  using engine_internal::sweep_plan;
  const std::vector<ToolCall> onnx = {
      {"load-onnx", {{"input_shapes", {"x:1x16", "x:2x16"}}, {"batch_sizes", {1, 4}}}},
      {"benchmark", {{"concurrency", {1, 2}}}}};
  const auto plan = sweep_plan(onnx, "load-onnx");
  const auto points = plan.points();
  ASSERT_EQ(points.size(), 8u);  // 2 shapes x 2 batches x 2 concurrencies, concurrency innermost
  EXPECT_EQ(plan.label(points[0]), "x:1x16, batch 1, concurrency 1");
  EXPECT_EQ(plan.label(points[1]), "x:1x16, batch 1, concurrency 2");
  EXPECT_EQ(plan.label(points[7]), "x:2x16, batch 4, concurrency 2");
  // Nothing swept: one point, no label; a single concurrency above 1 is still named.
  const auto single =
      sweep_plan({{"load-onnx", json::object()}, {"benchmark", json::object()}}, "load-onnx");
  EXPECT_EQ(single.points().size(), 1u);
  EXPECT_EQ(single.label(single.points()[0]), "");
  EXPECT_FALSE(single.is_sweep());
  const auto two =
      sweep_plan({{"load-onnx", json::object()}, {"benchmark", {{"concurrency", 2}}}}, "load-onnx");
  EXPECT_EQ(two.label(two.points()[0]), "concurrency 2");
  // Without a benchmark there is nothing to run at a concurrency; a script's batch sizes are
  // discover's.
  const auto build_only = sweep_plan(
      {{"discover", {{"batch_sizes", {2, 8}}}}, {"export-pytorch", json::object()}}, "discover");
  EXPECT_EQ(build_only.concurrency, (std::vector<int>{1}));
  EXPECT_EQ(build_only.batches, (std::vector<int64_t>{2, 8}));
}

// The one sweep driver every kind of input runs its points through: one pass per point in the
// plan's order, each handed back once before it is finished; with several points one table
// (with each point's row and the no-gain note) and one line per failed point naming the
// settings' subject, the point and the pass's cause; with one point the pass's own block and no
// notice. Every pass also goes into the settings' second table.
TEST(SweepDriver, OnePassPerPointOneTableAndOneLinePerFailedPoint) {
  using namespace engine_internal;
  const SweepPlan plan = sweep_plan(
      {{"load-onnx", json::object()}, {"benchmark", {{"concurrency", {1, 2, 4}}}}}, "load-onnx");
  SweepTable also;
  std::vector<int> passes;
  std::vector<std::string> notices;
  const auto pass = [&](const SweepPoint& point, const SweepRecord& record) {
    passes.push_back(point.concurrency);
    Build build;
    build.build_name = "m_1a2b3c4d";
    build.block.title = "m";
    if (point.concurrency == 4) {
      build.failed = true;
      build.block.status = "Failed: out of memory";
      build.state.error = "out of memory";
    } else {
      build.block.status = "Successfully benchmarked on CPU";
      build.stats.set("median_latency_ms", 1.0 / point.concurrency);
      build.stats.set("p99_latency_ms", 2.0);
      build.stats.set("throughput_ips", 100.0 * point.concurrency);
      build.stats.set("concurrency", point.concurrency);
      build.stats.set("threads", 1);
    }
    record(build, point.concurrency == 4 ? "a cause: " : "");
    return build.block;
  };
  const auto notice = [&](const std::string& text) { notices.push_back(text); };
  const ModelBlock block = run_sweep({plan, "m.onnx", &also}, pass, notice);
  EXPECT_EQ(passes, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(notices, (std::vector<std::string>{"m.onnx: concurrency 4: a cause: out of memory"}));
  EXPECT_EQ(block.title, "m");
  EXPECT_EQ(block.status, "Successfully benchmarked on CPU at 2 of 3 points");
  ASSERT_EQ(block.status_detail.size(), 5u);  // header, 3 points, the failure
  EXPECT_EQ(block.status_detail[0].rfind("Point", 0), 0u) << block.status_detail[0];
  EXPECT_NE(block.status_detail[3].find("failed (below)"), std::string::npos);
  EXPECT_EQ(block.status_detail[4], "Failed:         concurrency 4: Failed: out of memory");
  EXPECT_EQ(also.size(), 3u);

  // One point: the pass's block as it is; a failure is its own block's, not a notice.
  passes.clear();
  notices.clear();
  const SweepPlan one =
      sweep_plan({{"load-onnx", json::object()}, {"benchmark", {{"concurrency", 4}}}}, "load-onnx");
  const ModelBlock single = run_sweep({one, "m.onnx", &also}, pass, notice);
  EXPECT_EQ(passes, (std::vector<int>{4}));
  EXPECT_TRUE(notices.empty());
  EXPECT_EQ(single.status, "Failed: out of memory");
  EXPECT_TRUE(single.status_detail.empty());
  EXPECT_EQ(also.size(), 4u);
  // A script's run at one batch: that batch x the concurrencies, labelled by both.
  const SweepPlan script = sweep_plan(
      {{"discover", {{"batch_sizes", {2, 8}}}}, {"benchmark", {{"concurrency", {1, 2}}}}},
      "discover");
  const std::vector<SweepPoint> run = script.at_batch(8).points();
  ASSERT_EQ(run.size(), 2u);
  EXPECT_EQ(script.label(run[1]), "batch 8, concurrency 2");
  EXPECT_EQ(script.at_batch(std::nullopt).points().size(), 2u);
}

json result(int concurrency, int threads, double ips, double busy = 0,
            const json& flags = json::array(), const json& codes = json::array()) {
  return {{"concurrency", concurrency},
          {"threads", threads},
          {"throughput_ips", ips},
          {"measurement_flags", flags},
          {"flag_codes", codes},
          {"environment",
           {{"physical_cores", 2},
            {"pinned_cpus", json::array()},
            {"runnable_other_threads_before", busy},
            {"runnable_other_threads_after", busy}}}};
}

TEST(NoGainNote, SaysWhyThroughputDidNotRise) {
  using engine_internal::no_gain_note;
  EXPECT_EQ(no_gain_note(result(1, 2, 100), result(2, 1, 120)), "");
  EXPECT_EQ(no_gain_note(result(1, 2, 100), result(2, 1, 95)),
            "no throughput gain: concurrency 2 gave 95.0 IPS, not above concurrency 1's 100.0 "
            "IPS, because at concurrency 1 the runtime already used 2 threads on 2 CPUs, and "
            "concurrency 2 splits the same CPUs (1 thread per request): requests in flight can "
            "only win what one request's threads left idle");
  // One flag among the result's others: no "; " inside (the report joins flags with it).
  EXPECT_EQ(no_gain_note(result(2, 1, 100), result(4, 1, 90, 3.5)).find("; "), std::string::npos);
  const std::string busy = no_gain_note(result(2, 1, 100), result(4, 1, 90, 3.5));
  EXPECT_NE(busy.find("4 requests on 2 CPUs take turns"), std::string::npos) << busy;
  EXPECT_NE(busy.find("the machine was busy (3.5 other runnable threads)"), std::string::npos)
      << busy;
  // Noise is told by the flag's code, not its wording.
  const std::string noisy = no_gain_note(
      result(1, 1, 100, 0, {"the median's 95% CI is +-9.0% (> +-5%)"}, {"noisy"}), result(2, 1, 99));
  EXPECT_NE(noisy.find("the measurements are noisy"), std::string::npos) << noisy;
  const std::string worded = no_gain_note(
      result(1, 1, 100, 0, {"noisy: the median's 95% CI is +-9.0% (> +-5%)"}, {"machine_busy"}),
      result(2, 1, 99));
  EXPECT_EQ(worded.find("the measurements are noisy"), std::string::npos) << worded;
  // One thread at 1 request left a CPU idle, and 2 requests still gave nothing: no cause seen.
  EXPECT_NE(no_gain_note(result(1, 1, 100), result(2, 1, 100)).find("no cause turnkey can see"),
            std::string::npos);
}

}  // namespace
}  // namespace turnkey
