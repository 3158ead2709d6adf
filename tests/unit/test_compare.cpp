// turnkey compare: the slowdown test (Mann-Whitney U against the textbook approximation), a
// planted slowdown flagged, the same distribution quiet, a slowdown the speed probe shares called
// the machine's, JSON reports and models on one side, too few samples, usage errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "support/fake_cache.h"
#include "support/temp_dir.h"
#include "turnkey/cli/report_commands.h"
#include "turnkey/common/files.h"
#include "turnkey/report/compare.h"

namespace turnkey::report {
namespace {

using nlohmann::json;
using test::fake_latencies;
using test::TempDir;
using test::write_fake_build;
using cli::compare_main;

std::string hash64(char c) { return std::string(64, c); }

TEST(MannWhitney, MatchesTheTextbookNormalApproximation) {
  // scipy.stats.mannwhitneyu([6..10], [1..5], alternative="greater", method="asymptotic")
  // gives U = 25, p = 0.006093.
  UTest t = mann_whitney_greater({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(t.u, 25);
  EXPECT_NEAR(t.p_value, 0.006093, 1e-5);
  UTest reverse = mann_whitney_greater({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_DOUBLE_EQ(reverse.u, 0);
  EXPECT_GT(reverse.p_value, 0.99);
  // Ties: scipy gives U = 12.5, p = 0.5 for identical samples.
  UTest same = mann_whitney_greater({1, 2, 3, 4, 5}, {1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(same.u, 12.5);
  EXPECT_NEAR(same.p_value, 0.5422, 1e-3);  // z = -0.5 / sqrt(22.22), ties corrected
  EXPECT_DOUBLE_EQ(mann_whitney_greater({2, 2, 2}, {2, 2, 2}).p_value, 1);
  EXPECT_DOUBLE_EQ(mann_whitney_greater({}, {1}).p_value, 1);
}

class Compare : public ::testing::Test {
 protected:
  TempDir d{"tk-compare"};
  std::string a = (d / "a").string(), b = (d / "b").string();

  // Three models in both caches; B's "net" samples scaled by `factor`.
  void make(double factor, uint32_t seed_b = 100) {
    const double medians[] = {2.0, 0.05, 11.0};
    const char* names[] = {"net_aaaaaaaa", "tiny_bbbbbbbb", "big_cccccccc"};
    for (int i = 0; i < 3; ++i) {
      std::string h = hash64(static_cast<char>('a' + i));
      write_fake_build(a, {.build_name = names[i],
                           .hash_full = h,
                           .samples_ms = fake_latencies(medians[i], 100, 1 + i)});
      auto s = fake_latencies(medians[i], 100, seed_b + i);
      if (i == 0) {
        for (double& v : s) v *= factor;
      }
      write_fake_build(b, {.build_name = names[i], .hash_full = h, .samples_ms = s});
    }
  }
  int run(std::vector<std::string> args, std::string* out = nullptr) {
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    int code = compare_main(args);
    std::string o = testing::internal::GetCapturedStdout();
    std::string e = testing::internal::GetCapturedStderr();
    if (out) *out = o + e;
    return code;
  }
};

TEST_F(Compare, FlagsAPlantedTwentyPercentSlowdown) {
  make(1.20);
  std::string out;
  EXPECT_EQ(run({a, b}, &out), 1) << out;
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(model\s+net_aaaaaaaa\s+ort\s+x86\s+.*1\.[12]\d\d\s+\S+\s+SLOWER)")))
      << out;
  EXPECT_NE(out.find("1 significant slowdown(s) beyond 5%"), std::string::npos) << out;
  Comparison c = compare_reports(read_caches({a}), read_caches({b}), {});
  ASSERT_EQ(c.matched.size(), 3u);
  EXPECT_EQ(c.slowdowns, 1);
  for (const Matched& m : c.matched) {
    if (m.build_name_a != "net_aaaaaaaa") {
      EXPECT_EQ(m.verdict, Verdict::NoChange) << m.build_name_a;
      continue;
    }
    EXPECT_EQ(m.verdict, Verdict::Slower);
    EXPECT_LT(m.p_slower, 1e-6);
    EXPECT_NEAR(m.ratio, 1.2, 0.03);
  }
  // A 20% slowdown is not one beyond 30%.
  EXPECT_EQ(run({a, b, "--threshold", "30%"}, &out), 0) << out;
  // The other direction is a speed-up, not a failure.
  EXPECT_EQ(run({b, a}, &out), 0) << out;
  EXPECT_NE(out.find("faster"), std::string::npos) << out;
}

TEST_F(Compare, StaysQuietOnTheSameDistributionAndOnSlowdownsBelowTheThreshold) {
  make(1.0);
  std::string out;
  EXPECT_EQ(run({a, b}, &out), 0) << out;
  EXPECT_NE(out.find("No significant slowdown beyond 5%"), std::string::npos) << out;
  Comparison c = compare_reports(read_caches({a}), read_caches({b}), {});
  for (const Matched& m : c.matched) EXPECT_EQ(m.verdict, Verdict::NoChange) << m.build_name_a;
}

TEST_F(Compare, ASlowdownTheSpeedProbeSharesIsTheMachinesNotAPlainSlowdown) {
  // B 40% slower, and its machine-speed probe too (a busy or throttled machine): said on the
  // verdict line, not counted as a slowdown; exit 0.
  const std::string h = hash64('p');
  write_fake_build(a, {.build_name = "net_pppppppp",
                       .hash_full = h,
                       .samples_ms = fake_latencies(2.0, 100, 1),
                       .extra_stats = {{"speed_probe_ms", 5.0}}});
  write_fake_build(b, {.build_name = "net_pppppppp",
                       .hash_full = h,
                       .samples_ms = fake_latencies(2.8, 100, 2),
                       .extra_stats = {{"speed_probe_ms", 7.5}}});
  std::string out;
  EXPECT_EQ(run({a, b}, &out), 0) << out;
  EXPECT_NE(out.find("machine speed differs (the speed probe ran 5.00 ms in A, 7.50 ms in B "
                     "(1.50x): B was slower as a machine"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("1 change(s) not counted"), std::string::npos) << out;
  Comparison c = compare_reports(read_caches({a}), read_caches({b}), {});
  ASSERT_EQ(c.matched.size(), 1u);
  EXPECT_EQ(c.matched[0].verdict, Verdict::MachineDiffers);
  EXPECT_EQ(c.slowdowns, 0);

  // The same slowdown on a machine that ran as fast (probes within 20%) is a slowdown.
  write_fake_build(b, {.build_name = "net_pppppppp",
                       .hash_full = h,
                       .samples_ms = fake_latencies(2.8, 100, 2),
                       .extra_stats = {{"speed_probe_ms", 5.4}}});
  EXPECT_EQ(run({a, b}, &out), 1) << out;
  EXPECT_NE(out.find("SLOWER"), std::string::npos) << out;
  // A model slower on a machine that was faster: still a slowdown, the probe only noted.
  write_fake_build(b, {.build_name = "net_pppppppp",
                       .hash_full = h,
                       .samples_ms = fake_latencies(2.8, 100, 2),
                       .extra_stats = {{"speed_probe_ms", 3.0}}});
  EXPECT_EQ(run({a, b}, &out), 1) << out;
  EXPECT_NE(out.find("SLOWER (speed probe A 5.00 ms, B 3.00 ms)"), std::string::npos) << out;
}

TEST_F(Compare, SlowdownBelowThresholdIsNotFlagged) {
  make(1.03);
  EXPECT_EQ(run({a, b}), 0);
}

TEST_F(Compare, WorksOnJsonReportsAndListsModelsOnOneSideOnly) {
  make(1.20);
  write_fake_build(a, {.build_name = "gone_dddddddd",
                       .hash_full = hash64('d'),
                       .samples_ms = fake_latencies(1, 100, 9)});
  write_fake_build(b, {.build_name = "gone_dddddddd",
                       .hash_full = hash64('d'),
                       .status = "failed",
                       .failed_tool = "benchmark",
                       .error = "could not load"});
  write_fake_build(b, {.build_name = "new_eeeeeeee",
                       .hash_full = hash64('e'),
                       .samples_ms = fake_latencies(1, 100, 10)});
  Provenance p{"t", "c", json::object()};
  write_file_atomic(d / "a.json", to_json(read_caches({a}), p));
  write_file_atomic(d / "b.json", to_json(read_caches({b}), p));
  std::string out;
  EXPECT_EQ(run({(d / "a.json").string(), (d / "b.json").string()}, &out), 1) << out;
  EXPECT_NE(out.find("Only in A (1):\n  model (gone_dddddddd) on ort x86 - B: failed at benchmark: "
                     "could not load"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Only in B (1):\n  model (new_eeeeeeee) on ort x86 - not in A"),
            std::string::npos)
      << out;
  // A cache against a JSON report works as well.
  EXPECT_EQ(run({a, (d / "b.json").string()}), 1);
}

TEST_F(Compare, TooFewSamplesAreReportedUntestedNotFlagged) {
  write_fake_build(a, {.build_name = "n_aaaaaaaa", .samples_ms = fake_latencies(1, 5, 1)});
  write_fake_build(b, {.build_name = "n_aaaaaaaa", .samples_ms = fake_latencies(3, 5, 2)});
  std::string out;
  EXPECT_EQ(run({a, b}, &out), 0) << out;
  EXPECT_NE(out.find("untested (A: only 5 samples; B: only 5 samples)"), std::string::npos) << out;
}

TEST_F(Compare, UsageErrorsExitTwoWithOneLine) {
  make(1.0);
  std::string out;
  EXPECT_EQ(run({a}, &out), 2);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(run({a, (d / "missing").string()}, &out), 2);
  EXPECT_NE(out.find("does not exist"), std::string::npos) << out;
  EXPECT_EQ(run({a, b, "--threshold", "five"}, &out), 2);
  EXPECT_NE(out.find("--threshold five"), std::string::npos) << out;
  EXPECT_EQ(run({a, b, "--bogus"}, &out), 2);
  write_file_atomic(d / "x.json", "{\"hello\": 1}");
  EXPECT_EQ(run({a, (d / "x.json").string()}, &out), 2);
  EXPECT_NE(out.find("not a turnkey JSON report"), std::string::npos) << out;
  EXPECT_EQ(run({"--help"}, &out), 0);
}

}  // namespace
}  // namespace turnkey::report
