#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
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

// The interval for the next run's median (docs/measurement.md "The interval").
TEST(NextRunInterval, TQuantilesMatchTheTable) {
  EXPECT_NEAR(t_quantile_975(1), 12.706, 1e-3);
  EXPECT_NEAR(t_quantile_975(4), 2.776, 1e-3);
  EXPECT_NEAR(t_quantile_975(30), 2.042, 1e-3);
  EXPECT_NEAR(t_quantile_975(31), 2.040, 1e-3);  // the series past the table
  EXPECT_NEAR(t_quantile_975(40), 2.021, 1e-3);
  EXPECT_NEAR(t_quantile_975(120), 1.980, 1e-3);
  EXPECT_NEAR(t_quantile_975(100000), 1.960, 1e-3);
  EXPECT_THROW(t_quantile_975(0), Error);
}

TEST(NextRunInterval, IsTheTPredictionIntervalWidenedToHoldEveryBlock) {
  // Five block medians 9, 10, 10, 10, 11: sd 0.7071; half-width 2.776 * 0.7071 * sqrt(2/5).
  const std::vector<double> blocks = {10, 9, 11, 10, 10};
  const MedianInterval i = next_run_interval(blocks, 10);
  const double half = 2.776 * std::sqrt(0.5) * std::sqrt(0.4);
  EXPECT_NEAR(i.low_ms, 10 - half, 1e-3);
  EXPECT_NEAR(i.high_ms, 10 + half, 1e-3);
  // A lopsided set: the t interval around the center misses the far block, which widens it.
  const MedianInterval lop = next_run_interval({10, 10, 10, 10, 14}, 10);
  EXPECT_EQ(lop.high_ms, 14);
  EXPECT_LT(lop.low_ms, 10);
  // Blocks far apart around a small median (a loaded machine): the lower end stops at 0.
  const MedianInterval wild = next_run_interval({1, 1, 1, 1, 100}, 1);
  EXPECT_EQ(wild.low_ms, 0);
  EXPECT_EQ(wild.high_ms, 100);  // the far block (the t half-width, 77.7, falls short of it)
  // Blocks that agree exactly give the center alone (the caller adds the median's CI).
  const MedianInterval same = next_run_interval({5, 5, 5}, 5);
  EXPECT_EQ(same.low_ms, 5);
  EXPECT_EQ(same.high_ms, 5);
  // One block or none: nothing to estimate a spread from.
  EXPECT_EQ(next_run_interval({7}, 7).low_ms, 7);
  EXPECT_EQ(next_run_interval({}, 3).high_ms, 3);
}

TEST(NextRunInterval, CoversTheNextRunsMedianAboutNinetyFivePercentForNormalBlocks) {
  // Blocks i.i.d. normal: the interval of one run holds the next run's center about 95% of the
  // time (the widening to every block makes it a little more).
  std::mt19937 rng(7);
  std::normal_distribution<double> block(10.0, 0.3);
  int covered = 0;
  const int trials = 4000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> a(5), b(5);
    for (double& x : a) x = block(rng);
    for (double& x : b) x = block(rng);
    const double ca = std::accumulate(a.begin(), a.end(), 0.0) / 5;
    const double cb = std::accumulate(b.begin(), b.end(), 0.0) / 5;
    const MedianInterval i = next_run_interval(a, ca);
    if (cb >= i.low_ms && cb <= i.high_ms) ++covered;
  }
  EXPECT_GT(covered, trials * 0.93);
  EXPECT_LT(covered, trials * 0.99);
}

}  // namespace
}  // namespace turnkey
