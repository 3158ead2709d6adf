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
