// The bounded sample store (samples.h): exact up to kExactSamples, then a log-linear histogram
// whose percentiles stay within the stated relative error of an exact computation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "turnkey/measure/samples.h"
#include "turnkey/measure/statistics.h"

namespace turnkey {
namespace {

// Latencies rounded to whole nanoseconds, as the clock gives them.
double whole_ns(double ms) { return std::round(ms * 1e6) / 1e6; }

std::vector<double> lognormal_ms(size_t n, double median_ms, double sigma, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(std::log(median_ms), sigma);
  std::vector<double> v(n);
  for (double& x : v) x = whole_ns(d(rng));
  return v;
}

void expect_within(double got, double exact, const char* what) {
  // The stated error: kHistogramRelativeError of the exact value, or 1 ns.
  const double bound = std::max(kHistogramRelativeError * exact, 1e-6);
  EXPECT_LE(std::abs(got - exact), bound) << what << ": got " << got << ", exact " << exact;
}

TEST(LatencyHistogram, BucketsTileTheRangeAndHoldTheirValues) {
  for (int64_t ns : {int64_t{0}, int64_t{1}, int64_t{511}, int64_t{512}, int64_t{513},
                     int64_t{1000}, int64_t{1337}, int64_t{123456789}, int64_t{1} << 40}) {
    const size_t i = LatencyHistogram::index_of(ns);
    EXPECT_LE(LatencyHistogram::lower_of(i), ns);
    EXPECT_GE(LatencyHistogram::upper_of(i), ns);
    const double width =
        static_cast<double>(LatencyHistogram::upper_of(i) - LatencyHistogram::lower_of(i) + 1);
    // A bucket's width is at most 2^-8 of its lower bound (or one nanosecond).
    EXPECT_LE(width, std::max(1.0, static_cast<double>(LatencyHistogram::lower_of(i)) / 256));
  }
  // Consecutive buckets meet with no gap.
  for (size_t i = 1; i < 5000; ++i) {
    EXPECT_EQ(LatencyHistogram::lower_of(i), LatencyHistogram::upper_of(i - 1) + 1) << i;
  }
}

TEST(SampleStore, ExactUpToTheBound) {
  SampleStore s;
  s.reserve();
  const std::vector<double> v = lognormal_ms(static_cast<size_t>(kExactSamples), 0.0015, 0.3, 1);
  s.add_all(v);
  EXPECT_TRUE(s.exact());
  EXPECT_EQ(s.kept(), v);  // every sample, in call order
  const LatencyStats a = s.stats(), b = compute_stats(v);
  EXPECT_DOUBLE_EQ(a.median_ms, b.median_ms);
  EXPECT_DOUBLE_EQ(a.p99_ms, b.p99_ms);
  EXPECT_DOUBLE_EQ(a.median_ci_low_ms, b.median_ci_low_ms);
}

TEST(SampleStore, PastTheBoundPercentilesWithinTheStatedError) {
  // A µs-scale model's latencies and a ms-scale one's, heavy tailed, 30x the exact bound.
  for (double median_ms : {0.0016, 9.8}) {
    const std::vector<double> v =
        lognormal_ms(static_cast<size_t>(30 * kExactSamples), median_ms, 0.5, 7);
    SampleStore s;
    s.reserve();
    s.add_all(v);
    EXPECT_FALSE(s.exact());
    EXPECT_EQ(s.count(), static_cast<int64_t>(v.size()));
    EXPECT_EQ(s.kept().size(), static_cast<size_t>(kExactSamples));  // bounded
    const LatencyStats got = s.stats(), exact = compute_stats(v);
    EXPECT_EQ(got.iterations, exact.iterations);
    expect_within(got.median_ms, exact.median_ms, "median");
    expect_within(got.p90_ms, exact.p90_ms, "p90");
    expect_within(got.p95_ms, exact.p95_ms, "p95");
    expect_within(got.p99_ms, exact.p99_ms, "p99");
    expect_within(got.median_ci_low_ms, exact.median_ci_low_ms, "CI low");
    expect_within(got.median_ci_high_ms, exact.median_ci_high_ms, "CI high");
    EXPECT_DOUBLE_EQ(got.min_ms, exact.min_ms);
    EXPECT_DOUBLE_EQ(got.max_ms, exact.max_ms);
    EXPECT_NEAR(got.mean_ms, exact.mean_ms, 1e-9 * exact.mean_ms);
    EXPECT_NEAR(got.std_ms, exact.std_ms, 1e-6 * exact.std_ms);
    // The kept subset is a uniform sample: its median is near the true one (not the first calls').
    EXPECT_NEAR(median_of(s.kept()), exact.median_ms, 0.05 * exact.median_ms);
  }
}

TEST(SampleStore, TwoModesKeepTheirPercentiles) {
  // 95% fast calls, 5% ten times slower: p99 lies in the slow mode, the median in the fast one.
  std::vector<double> v = lognormal_ms(200000, 0.002, 0.05, 3);
  for (size_t i = 0; i < v.size(); i += 20) v[i] = whole_ns(v[i] * 10);
  SampleStore s;
  s.add_all(v);
  const LatencyStats got = s.stats(), exact = compute_stats(v);
  expect_within(got.median_ms, exact.median_ms, "median");
  expect_within(got.p99_ms, exact.p99_ms, "p99");
}

TEST(SampleStore, MergePoolsRepetitions) {
  const std::vector<double> a = lognormal_ms(4000, 1.0, 0.2, 11),
                            b = lognormal_ms(5000, 1.2, 0.2, 12);
  SampleStore sa, sb, pooled;
  pooled.reserve();
  sa.add_all(a);
  sb.add_all(b);
  pooled.merge(sa);
  pooled.merge(sb);
  std::vector<double> all = a;
  all.insert(all.end(), b.begin(), b.end());
  EXPECT_TRUE(pooled.exact());
  EXPECT_EQ(pooled.kept(), all);
  EXPECT_DOUBLE_EQ(pooled.stats().median_ms, compute_stats(all).median_ms);

  // Past the bound: the histograms add up, the kept subset is the bound's size.
  const std::vector<double> c = lognormal_ms(50000, 1.5, 0.2, 13);
  SampleStore sc;
  sc.add_all(c);
  pooled.merge(sc);
  all.insert(all.end(), c.begin(), c.end());
  EXPECT_FALSE(pooled.exact());
  EXPECT_EQ(pooled.count(), static_cast<int64_t>(all.size()));
  EXPECT_LE(pooled.kept().size(), static_cast<size_t>(kExactSamples));
  const LatencyStats got = pooled.stats(), exact = compute_stats(all);
  expect_within(got.median_ms, exact.median_ms, "median");
  expect_within(got.p99_ms, exact.p99_ms, "p99");
  EXPECT_NEAR(got.std_ms, exact.std_ms, 1e-6 * exact.std_ms);
}

TEST(SampleStore, FileIsBoundedAndSaysWhatItHolds) {
  SampleStore small;
  small.add_all({1.0, 2.0, 3.0});
  nlohmann::json f = nlohmann::json::parse(samples_file_text(small));
  EXPECT_EQ(f["kept"], "all");
  EXPECT_EQ(f["count"], 3);
  EXPECT_EQ(f["samples"].size(), 3u);
  EXPECT_FALSE(f.contains("histogram"));

  SampleStore big;
  big.add_all(lognormal_ms(1000000, 0.0015, 0.3, 5));
  const std::string text = samples_file_text(big);
  EXPECT_LT(text.size(), 1000000u);  // ~10,000 values and the histogram's buckets
  f = nlohmann::json::parse(text);
  EXPECT_EQ(f["kept"], "uniform subset");
  EXPECT_EQ(f["count"], 1000000);
  EXPECT_EQ(f["samples"].size(), static_cast<size_t>(kExactSamples));
  int64_t total = 0;
  for (const auto& b : f["histogram"]["buckets"]) total += b[2].get<int64_t>();
  EXPECT_EQ(total, 1000000);
}

}  // namespace
}  // namespace turnkey
