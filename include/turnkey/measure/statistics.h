// One statistics engine for every runtime: runtimes hand over raw per-iteration latencies, this
// computes the summary. Percentiles use linear interpolation between closest ranks (Hyndman &
// Fan type 7, numpy's default); std is the sample standard deviation (n - 1); the median's 95%
// confidence interval is distribution-free, from binomial order statistics. Pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace turnkey {

struct LatencyStats {
  int64_t iterations = 0;
  double mean_ms = 0, median_ms = 0, min_ms = 0, max_ms = 0, std_ms = 0;
  double p90_ms = 0, p95_ms = 0, p99_ms = 0;
  double median_ci_low_ms = 0, median_ci_high_ms = 0;  // 95% CI of the median
  double cv = 0;  // coefficient of variation, std / mean
};

// Throws Error(Internal) on an empty sample set.
LatencyStats compute_stats(std::vector<double> samples_ms);

// Type-7 percentile of already-sorted samples, q in [0, 1].
double percentile_sorted(const std::vector<double>& sorted, double q);

// The median of unsorted samples; 0 for none.
double median_of(std::vector<double> samples);

// Order-statistic indices (0-based, inclusive) bounding the 95% CI of the median of n samples.
struct RankInterval {
  int64_t low = 0, high = 0;
};
RankInterval median_ci_ranks(int64_t n);

// The 0.975 quantile of Student's t distribution with `df` >= 1 degrees of freedom (exact to 3
// decimals: a table to 30, then the normal approximation's series).
double t_quantile_975(int df);

// An interval for the median the next run will measure, from this run's block medians (the
// timed calls cut into consecutive blocks, docs/measurement.md "The interval"): `center` (the
// pooled median) +- c_k * s. The next run's median is the center of k blocks as well, so the
// difference of two such centers has variance 2 sigma^2 / k. With k <= 3 blocks, s is the
// standard deviation of the k block medians and c_k = t(0.975, k - 1) * sqrt(2 / k). With
// k >= 4, s leaves out the one block median farthest from their median (one disturbed block of
// five must not decide a run's interval: docs/measurement.md "Calibration") and c_k is the
// factor that makes the interval hold the next run's center 95% of the time for normal blocks
// (Monte Carlo, kTrimmedFactors in statistics.cpp). Its lower end is at least 0. With fewer
// than two blocks: [center, center] (the caller widens it to the median's CI).
struct MedianInterval {
  double low_ms = 0, high_ms = 0;
};
MedianInterval next_run_interval(const std::vector<double>& block_medians_ms, double center_ms);
// c_k above, for k >= 2 blocks (s: the sd of k blocks for k <= 3, of k - 1 from k >= 4).
double next_run_factor(int k);

// An interval for one more run's median from the medians of k earlier-and-this runs (what
// varies between runs, which the blocks of one run cannot see: docs/measurement.md "The
// interval"): mean +- t(0.975, k - 1) * s * sqrt(1 + 1/k), s the standard deviation of the k
// run medians (the prediction interval for one more draw), widened to hold every run median,
// its lower end at least 0. With one median: [it, it]; with none: [0, 0].
MedianInterval between_runs_interval(const std::vector<double>& run_medians_ms);

}  // namespace turnkey
