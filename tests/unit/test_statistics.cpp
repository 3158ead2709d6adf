#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "turnkey/common/error.h"
#include "turnkey/measure/statistics.h"

namespace turnkey {
namespace {

TEST(Statistics, KnownSmallSample) {
  LatencyStats s = compute_stats({4, 1, 3, 2, 5});
  EXPECT_EQ(s.iterations, 5);
  EXPECT_DOUBLE_EQ(s.mean_ms, 3.0);
  EXPECT_DOUBLE_EQ(s.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(s.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.max_ms, 5.0);
  EXPECT_NEAR(s.std_ms, 1.5811388300841898, 1e-12);  // sample std (n - 1)
  // Type 7: h = (n - 1) q = 3.6 -> 4 + 0.6 * (5 - 4)
  EXPECT_NEAR(s.p90_ms, 4.6, 1e-12);
  EXPECT_NEAR(s.p99_ms, 4.96, 1e-12);
  EXPECT_NEAR(s.cv, s.std_ms / 3.0, 1e-12);
}

TEST(Statistics, EvenCountMedianInterpolates) {
  EXPECT_DOUBLE_EQ(compute_stats({1, 2, 3, 10}).median_ms, 2.5);
}

TEST(Statistics, MatchesNumpyPercentiles) {
  // numpy.percentile(np.arange(1, 101), [90, 95, 99]) == [90.1, 95.05, 99.01]
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  LatencyStats s = compute_stats(v);
  EXPECT_NEAR(s.p90_ms, 90.1, 1e-9);
  EXPECT_NEAR(s.p95_ms, 95.05, 1e-9);
  EXPECT_NEAR(s.p99_ms, 99.01, 1e-9);
  EXPECT_NEAR(s.median_ms, 50.5, 1e-9);
}

TEST(Statistics, SingleSampleHasZeroSpread) {
  LatencyStats s = compute_stats({0.0013});
  EXPECT_DOUBLE_EQ(s.median_ms, 0.0013);
  EXPECT_DOUBLE_EQ(s.std_ms, 0.0);
  EXPECT_DOUBLE_EQ(s.median_ci_low_ms, 0.0013);
  EXPECT_DOUBLE_EQ(s.median_ci_high_ms, 0.0013);
}

TEST(Statistics, EmptyIsAnError) { EXPECT_THROW(compute_stats({}), Error); }

TEST(Statistics, MedianConfidenceIntervalRanks) {
  // n = 100: 50 -+ 9.8 -> ranks 40 and 61 (1-based) -> indices 39 and 60.
  RankInterval r = median_ci_ranks(100);
  EXPECT_EQ(r.low, 39);
  EXPECT_EQ(r.high, 60);
  RankInterval tiny = median_ci_ranks(3);
  EXPECT_EQ(tiny.low, 0);
  EXPECT_EQ(tiny.high, 2);
}

TEST(Statistics, MedianConfidenceIntervalCoversTrueMedianAboutNinetyFivePercent) {
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> dist(1.0);
  const double true_median = std::log(2.0);
  int covered = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> v(100);
    for (double& x : v) x = dist(rng);
    LatencyStats s = compute_stats(v);
    if (s.median_ci_low_ms <= true_median && true_median <= s.median_ci_high_ms) ++covered;
  }
  double rate = static_cast<double>(covered) / trials;
  EXPECT_GT(rate, 0.93);
  EXPECT_LT(rate, 0.99);
}

TEST(Statistics, CiBracketsMedian) {
  std::vector<double> v;
  for (int i = 0; i < 37; ++i) v.push_back(1.0 + (i * 17 % 37) * 0.01);
  LatencyStats s = compute_stats(v);
  EXPECT_LE(s.median_ci_low_ms, s.median_ms);
  EXPECT_GE(s.median_ci_high_ms, s.median_ms);
}

}  // namespace
}  // namespace turnkey
