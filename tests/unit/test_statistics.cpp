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

TEST(NextRunInterval, IsThePredictionIntervalFromTheBlocksNearestTheirMedian) {
  // Three blocks: the t prediction interval, 4.303 * sd * sqrt(2/3).
  const MedianInterval three = next_run_interval({9, 10, 11}, 10);
  EXPECT_NEAR(three.high_ms, 10 + 4.303 * 1.0 * std::sqrt(2.0 / 3), 1e-3);
  EXPECT_NEAR(three.low_ms, 10 - 4.303 * 1.0 * std::sqrt(2.0 / 3), 1e-3);
  // Five blocks 10, 9, 11, 10, 10: 9 or 11 is left out (both are 1 from the median 10); the
  // other four (10, 11, 10, 10) have sd 0.5; the factor is 1.5697 * t(0.975, 3) * sqrt(2/5).
  const MedianInterval five = next_run_interval({10, 9, 11, 10, 10}, 10);
  const double c5 = 1.5697 * 3.182 * std::sqrt(0.4);
  EXPECT_NEAR(next_run_factor(5), c5, 1e-9);
  EXPECT_NEAR(five.high_ms - 10, c5 * 0.5, 1e-3);
  EXPECT_NEAR(10 - five.low_ms, c5 * 0.5, 1e-3);
  // Between rows of the table the factor is interpolated, past the last it stays.
  EXPECT_GT(next_run_factor(21) / (2.093 * std::sqrt(2.0 / 21)), 1.1243);
  EXPECT_LT(next_run_factor(21) / (2.093 * std::sqrt(2.0 / 21)), 1.1338);
  EXPECT_THROW(next_run_factor(1), Error);
  // Blocks that agree exactly give the center alone (the caller adds the median's CI).
  const MedianInterval same = next_run_interval({5, 5, 5}, 5);
  EXPECT_EQ(same.low_ms, 5);
  EXPECT_EQ(same.high_ms, 5);
  // One block or none: nothing to estimate a spread from.
  EXPECT_EQ(next_run_interval({7}, 7).low_ms, 7);
  EXPECT_EQ(next_run_interval({}, 3).high_ms, 3);
  // Three blocks far apart around a small median (a loaded machine): the lower end stops at 0.
  EXPECT_EQ(next_run_interval({1, 1, 100}, 1).low_ms, 0);
}

TEST(NextRunInterval, OneDisturbedBlockOfFiveDoesNotDecideIt) {
  // Session 10's calibration: a quiet run of a 1.6 us model whose median did not move, one of its
  // five blocks disturbed. Its interval was +-57% (wide enough to hold that block), flagged noisy.
  const std::vector<double> blocks = {1.6120, 1.6135, 1.6150, 1.6128, 2.9000};
  const MedianInterval i = next_run_interval(blocks, 1.6135);
  EXPECT_LT((i.high_ms - i.low_ms) / 2 / 1.6135, 0.01);
  // Two disturbed blocks of five are a noisy run: the second widens it far past the flag's 5%.
  const MedianInterval two = next_run_interval({1.6120, 1.6135, 1.6150, 2.1, 2.9000}, 1.6135);
  EXPECT_GT((two.high_ms - two.low_ms) / 2 / 1.6135, 0.05);
}

TEST(NextRunInterval, CoversTheNextRunsMedianAboutNinetyFivePercentForNormalBlocks) {
  // Blocks i.i.d. normal: the interval of one run holds the next run's center about 95% of the
  // time, for the plain t interval (3 blocks) and the one that leaves a block out (5, 12).
  std::mt19937 rng(7);
  std::normal_distribution<double> block(10.0, 0.3);
  const int trials = 4000;
  for (size_t k : {3, 5, 12}) {
    int covered = 0;
    for (int t = 0; t < trials; ++t) {
      std::vector<double> a(k), b(k);
      for (double& x : a) x = block(rng);
      for (double& x : b) x = block(rng);
      const double ca = std::accumulate(a.begin(), a.end(), 0.0) / static_cast<double>(k);
      const double cb = std::accumulate(b.begin(), b.end(), 0.0) / static_cast<double>(k);
      const MedianInterval i = next_run_interval(a, ca);
      if (cb >= i.low_ms && cb <= i.high_ms) ++covered;
    }
    EXPECT_GT(covered, trials * 0.93) << k << " blocks";
    EXPECT_LT(covered, trials * 0.97) << k << " blocks";
  }
}

}  // namespace
}  // namespace turnkey
