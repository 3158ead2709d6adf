#include "turnkey/measure/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "turnkey/common/error.h"

namespace turnkey {

double median_of(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  return percentile_sorted(samples, 0.5);
}

double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw Error(ErrorKind::Internal, "percentile of no samples");
  q = std::clamp(q, 0.0, 1.0);
  double h = (static_cast<double>(sorted.size()) - 1.0) * q;
  size_t lo = static_cast<size_t>(std::floor(h));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

RankInterval median_ci_ranks(int64_t n) {
  // Normal approximation to Binomial(n, 1/2): ranks n/2 -+ 1.96 * sqrt(n) / 2 (1-based), widened
  // outward to whole ranks so coverage is at least 95% for n >= ~10.
  const double half_width = 1.96 * std::sqrt(static_cast<double>(n)) / 2.0;
  int64_t low = static_cast<int64_t>(std::floor(n / 2.0 - half_width));      // 1-based
  int64_t high = static_cast<int64_t>(std::ceil(n / 2.0 + half_width)) + 1;  // 1-based
  low = std::clamp<int64_t>(low, 1, n);
  high = std::clamp<int64_t>(high, 1, n);
  return {low - 1, high - 1};
}

double t_quantile_975(int df) {
  static constexpr double kTable[] = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,   // 1-10
      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,   // 11-20
      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};  // 21-30
  if (df < 1) throw Error(ErrorKind::Internal, "t quantile of no degrees of freedom");
  if (df <= 30) return kTable[df - 1];
  // Cornish-Fisher expansion around the normal quantile (within 0.001 above 30 df).
  const double z = 1.959964, v = df;
  return z + (z * z * z + z) / (4 * v) +
         (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * v * v);
}

MedianInterval next_run_interval(const std::vector<double>& block_medians_ms, double center_ms) {
  MedianInterval out{center_ms, center_ms};
  const auto k = static_cast<int>(block_medians_ms.size());
  if (k < 2) return out;
  const double mean = std::accumulate(block_medians_ms.begin(), block_medians_ms.end(), 0.0) / k;
  double ss = 0;
  for (double m : block_medians_ms) ss += (m - mean) * (m - mean);
  const double half = t_quantile_975(k - 1) * std::sqrt(ss / (k - 1)) * std::sqrt(2.0 / k);
  out.low_ms = std::max(0.0, center_ms - half);  // a latency is never negative
  out.high_ms = center_ms + half;
  for (double m : block_medians_ms) {
    out.low_ms = std::min(out.low_ms, m);
    out.high_ms = std::max(out.high_ms, m);
  }
  return out;
}

MedianInterval between_runs_interval(const std::vector<double>& run_medians_ms) {
  const auto k = static_cast<int>(run_medians_ms.size());
  if (k == 0) return {};
  const double mean = std::accumulate(run_medians_ms.begin(), run_medians_ms.end(), 0.0) / k;
  double half = 0;
  if (k >= 2) {
    double ss = 0;
    for (double m : run_medians_ms) ss += (m - mean) * (m - mean);
    half = t_quantile_975(k - 1) * std::sqrt(ss / (k - 1)) * std::sqrt(1.0 + 1.0 / k);
  }
  MedianInterval out{std::max(0.0, mean - half), mean + half};  // a latency is never negative
  for (double m : run_medians_ms) {
    out.low_ms = std::min(out.low_ms, m);
    out.high_ms = std::max(out.high_ms, m);
  }
  return out;
}

LatencyStats compute_stats(std::vector<double> samples) {
  if (samples.empty()) throw Error(ErrorKind::Internal, "statistics of no samples");
  std::sort(samples.begin(), samples.end());
  LatencyStats s;
  const auto n = static_cast<int64_t>(samples.size());
  s.iterations = n;
  s.min_ms = samples.front();
  s.max_ms = samples.back();
  s.mean_ms = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  double ss = 0;
  for (double x : samples) ss += (x - s.mean_ms) * (x - s.mean_ms);
  s.std_ms = n > 1 ? std::sqrt(ss / static_cast<double>(n - 1)) : 0.0;
  s.cv = s.mean_ms > 0 ? s.std_ms / s.mean_ms : 0.0;
  s.median_ms = percentile_sorted(samples, 0.5);
  s.p90_ms = percentile_sorted(samples, 0.90);
  s.p95_ms = percentile_sorted(samples, 0.95);
  s.p99_ms = percentile_sorted(samples, 0.99);
  RankInterval ci = median_ci_ranks(n);
  s.median_ci_low_ms = samples[static_cast<size_t>(ci.low)];
  s.median_ci_high_ms = samples[static_cast<size_t>(ci.high)];
  return s;
}

}  // namespace turnkey
