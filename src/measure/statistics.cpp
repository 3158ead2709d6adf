#include "turnkey/measure/statistics.h"

#include <algorithm>
#include <cmath>
#include <iterator>
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

namespace {

double sample_sd(const std::vector<double>& x) {
  const auto k = static_cast<double>(x.size());
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / k;
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  return std::sqrt(ss / (k - 1));
}

// c_k / (t(0.975, k - 2) * sqrt(2 / k)) for the standard deviation of k - 1 block medians (the
// farthest from their median left out): the 95% quantile of |center_b - center_a| / s over
// 400,000 pairs of runs of k standard normal blocks each (numpy, seed 12345; the statistic is
// scale-free). Between rows the factor is interpolated linearly in k; past the last row it is
// the last row's (a little wide: the factor falls towards 1).
struct TrimmedFactor {
  int blocks;
  double factor;
};
constexpr TrimmedFactor kTrimmedFactors[] = {
    {4, 1.8763},   {5, 1.5697},  {6, 1.4478},  {7, 1.3591},  {8, 1.3128},  {9, 1.2682},
    {10, 1.2453},  {11, 1.2240}, {12, 1.2065}, {13, 1.1920}, {14, 1.1770}, {15, 1.1688},
    {16, 1.1600},  {17, 1.1526}, {18, 1.1483}, {19, 1.1376}, {20, 1.1338}, {22, 1.1243},
    {24, 1.1117},  {26, 1.1063}, {28, 1.0994}, {30, 1.0955}, {40, 1.0735}, {60, 1.0555},
    {100, 1.0369}, {200, 1.0206}};

double trimmed_factor(int k) {
  const TrimmedFactor* prev = std::begin(kTrimmedFactors);
  for (const TrimmedFactor& row : kTrimmedFactors) {
    if (row.blocks == k) return row.factor;
    if (row.blocks > k) {
      const double w = static_cast<double>(k - prev->blocks) / (row.blocks - prev->blocks);
      return prev->factor + w * (row.factor - prev->factor);
    }
    prev = &row;
  }
  return prev->factor;
}

}  // namespace

double next_run_factor(int k) {
  if (k < 2) throw Error(ErrorKind::Internal, "an interval from fewer than two blocks");
  if (k <= 3) return t_quantile_975(k - 1) * std::sqrt(2.0 / k);
  return trimmed_factor(k) * t_quantile_975(k - 2) * std::sqrt(2.0 / k);
}

MedianInterval next_run_interval(const std::vector<double>& block_medians_ms, double center_ms) {
  MedianInterval out{center_ms, center_ms};
  const auto k = static_cast<int>(block_medians_ms.size());
  if (k < 2) return out;
  std::vector<double> kept = block_medians_ms;
  if (k > 3) {
    // Leave out the block median farthest from their median: a burst that hit one block moves
    // the run's pooled median little, and must not decide its interval.
    const double mid = median_of(block_medians_ms);
    kept.erase(std::max_element(kept.begin(), kept.end(), [mid](double a, double b) {
      return std::abs(a - mid) < std::abs(b - mid);
    }));
  }
  const double half = next_run_factor(k) * sample_sd(kept);
  out.low_ms = std::max(0.0, center_ms - half);  // a latency is never negative
  out.high_ms = center_ms + half;
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
