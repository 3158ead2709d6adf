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

}  // namespace turnkey
