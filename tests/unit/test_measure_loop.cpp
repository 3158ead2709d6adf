// The measurement driver on a real ONNX Runtime session: stop rules, warm-up accounting, the
// empty-call overhead loop, peak RSS, and the option checks users hit first.
#include <gtest/gtest.h>
#include <unistd.h>

#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/common/error.h"
#include "turnkey/measure/loop.h"
#include "turnkey/measure/statistics.h"
#include "turnkey/measure/system_info.h"
#include "turnkey/onnx/model_facts.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey {
namespace {

class MeasureLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto model = dir.path() / "linear.onnx";
    test::linear_relu(model);
    auto facts = onnx_model::load_facts(model);
    inputs = onnx_model::generate_inputs(facts, onnx_model::resolve_input_shapes(facts, {}));
    RuntimeOptions ro;
    ro.threads = 1;
    session = find_runtime("ort")->load(model, inputs, ro);
  }
  test::TempDir dir{"tk-loop"};
  std::vector<HostTensor> inputs;
  std::unique_ptr<Session> session;
};

TEST_F(MeasureLoop, FixedIterationsGiveExactlyThatManySamples) {
  LoopOptions o;
  o.iterations = 37;
  LoopResult r = run_loop(*session, o);
  EXPECT_EQ(r.samples_ms.size(), 37u);
  EXPECT_GT(r.cold_ms, 0);
  EXPECT_GE(r.warmup_iterations, 10);
  EXPECT_GE(r.warmup_rounds, 1);
  EXPECT_EQ(r.stop_reason, "37 iterations");
  for (double s : r.samples_ms) EXPECT_GT(s, 0);
  // The empty call costs clock reads only: far below one inference.
  EXPECT_GT(r.overhead_median_ms, 0);
  EXPECT_LT(r.overhead_median_ms, compute_stats(r.samples_ms).median_ms);
  EXPECT_GT(r.peak_rss_run_bytes, 0);
}

TEST_F(MeasureLoop, NoWarmupMeansNone) {
  LoopOptions o;
  o.iterations = 5;
  o.warmup_iterations = 0;
  o.min_warmup_s = 0;
  LoopResult r = run_loop(*session, o);
  EXPECT_EQ(r.warmup_iterations, 0);
  EXPECT_EQ(r.warmup_rounds, 0);
}

TEST_F(MeasureLoop, DurationRunsAtLeastThatLong) {
  LoopOptions o;
  o.rule = StopRule::Duration;
  o.duration_s = 0.2;
  LoopResult r = run_loop(*session, o);
  EXPECT_GE(r.timed_s, 0.2);
  EXPECT_LT(r.timed_s, 2.0);
  EXPECT_GT(r.samples_ms.size(), 10u);
}

TEST_F(MeasureLoop, AdaptiveStopsAtTheTargetOrSaysWhichCapStoppedIt) {
  LoopOptions o;
  o.rule = StopRule::Adaptive;
  o.ci_target = 0.05;
  o.min_iterations = 15;
  o.max_iterations = 5000;
  o.max_duration_s = 5;
  LoopResult r = run_loop(*session, o);
  ASSERT_GE(r.samples_ms.size(), 15u);
  EXPECT_LE(r.samples_ms.size(), 5000u);
  LatencyStats st = compute_stats(r.samples_ms);
  const double half = (st.median_ci_high_ms - st.median_ci_low_ms) / 2 / st.median_ms;
  if (r.stop_reason.rfind("95% CI", 0) == 0) {
    EXPECT_LE(half, 0.05);
  } else {
    EXPECT_NE(r.stop_reason.find("max "), std::string::npos) << r.stop_reason;
  }
  // A cap of 15 iterations stops there, and says so unless the CI was already tight.
  o.max_iterations = 15;
  o.ci_target = 1e-9;
  r = run_loop(*session, o);
  EXPECT_EQ(r.samples_ms.size(), 15u);
  EXPECT_NE(r.stop_reason.find("max iterations 15"), std::string::npos) << r.stop_reason;
}

TEST(LoopOptionsCheck, RejectsWhatCannotRun) {
  LoopOptions o;
  o.iterations = 0;
  EXPECT_THROW(validate_loop_options(o), Error);
  o = {};
  o.rule = StopRule::Duration;
  o.duration_s = -1;
  EXPECT_THROW(validate_loop_options(o), Error);
  o = {};
  o.rule = StopRule::Adaptive;
  o.min_iterations = 10;
  o.max_iterations = 5;
  EXPECT_THROW(validate_loop_options(o), Error);
  o = {};
  EXPECT_NO_THROW(validate_loop_options(o));
}

TEST(PeakRss, ResetThenGrowIsSeen) {
  const pid_t self = getpid();
  ASSERT_TRUE(reset_peak_rss(self));
  const int64_t before = peak_rss_bytes(self);
  {
    std::vector<char> block(64 << 20, 1);  // 64 MiB, touched
    ASSERT_EQ(block[12345], 1);
  }
  EXPECT_GE(peak_rss_bytes(self) - before, 60 << 20);
  ASSERT_TRUE(reset_peak_rss(self));
  EXPECT_LT(peak_rss_bytes(self), before + (32 << 20));  // the high-water mark restarted
}

TEST(CpuList, ParsesRangesAndRefusesUnavailableCpus) {
  const std::vector<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  EXPECT_EQ(parse_cpu_list(std::to_string(allowed[0])), std::vector<int>{allowed[0]});
  if (allowed.size() >= 2 && allowed[1] == allowed[0] + 1) {
    EXPECT_EQ(parse_cpu_list(std::to_string(allowed[0]) + "-" + std::to_string(allowed[1])),
              (std::vector<int>{allowed[0], allowed[1]}));
  }
  for (const char* bad : {"", "a", "1-", "3-1", "0,,1", "99999"}) {
    EXPECT_THROW(parse_cpu_list(bad), Error) << bad;
  }
  try {
    parse_cpu_list("4095");
    FAIL() << "CPU 4095 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not available"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace turnkey
