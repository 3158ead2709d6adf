// Bounded storage of a timed phase's latencies (docs/measurement.md, "Samples"). However many
// calls a run makes, its samples take a fixed amount of memory, allocated and touched before the
// timed phase (reserve()), so that adding one is O(1) and allocates nothing:
//   - every sample, exactly, while there are at most kExactSamples of them; past that a uniform
//     random subset of kExactSamples of them (reservoir sampling, a fixed seed), which is what
//     the samples file keeps;
//   - always, a log-linear histogram of all of them (HdrHistogram's layout): exact to the
//     nanosecond below 2^(kSubBucketBits + 1) ns, above that 2^kSubBucketBits buckets per power of
//     two, so a bucket's middle is within kHistogramRelativeError of any value in it;
//   - count, mean and the sum of squared deviations (Welford: mean and std exact), min and max.
// Statistics are exact while every sample is kept; past that the percentiles and the median's
// interval come from the histogram, each within kHistogramRelativeError of the exact value (or
// 1 ns, whichever is larger: values are put in the histogram as whole nanoseconds).
// Not thread-safe; a store is copied and moved as a value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "turnkey/measure/statistics.h"

namespace turnkey {

// Samples kept exactly: 10,000 (80 KB); the samples file holds at most this many.
inline constexpr int64_t kExactSamples = 10000;
inline constexpr int kSubBucketBits = 8;
// A histogram percentile's largest error relative to the exact one: half a bucket, 2^-(bits+1).
inline constexpr double kHistogramRelativeError = 1.0 / (1 << (kSubBucketBits + 1));

// Log-linear histogram of nanosecond values (values above ~2.4 hours share the last bucket).
class LatencyHistogram {
 public:
  // Allocates (and zeroes) the buckets, ~74 KB; add() does it on first use otherwise.
  void reserve();
  void add(int64_t ns) {
    if (counts_.empty()) reserve();
    ++counts_[index_of(ns)];
    ++total_;
  }
  void merge(const LatencyHistogram& other);
  void clear();
  int64_t total() const { return total_; }
  // The value of the rank-th smallest sample (0-based): its bucket's middle, ns.
  double value_at_rank(int64_t rank) const;
  // Type-7 percentile (statistics.h) from value_at_rank, ns; q in [0, 1].
  double percentile(double q) const;
  // (lower ns, upper ns inclusive, count) of every non-empty bucket, ascending.
  struct Bucket {
    int64_t lower_ns, upper_ns, count;
  };
  std::vector<Bucket> buckets() const;

  static size_t index_of(int64_t ns);
  static int64_t lower_of(size_t index);
  static int64_t upper_of(size_t index);

 private:
  std::vector<int64_t> counts_;
  int64_t total_ = 0;
};

class SampleStore {
 public:
  // Allocates and touches the kept samples' room and the histogram: call before the memory
  // baseline of the model is read, so the harness's storage is never counted as the model's.
  void reserve();
  // O(1), no allocation after reserve().
  void add(double ms);
  void add_all(const std::vector<double>& ms) {
    for (double v : ms) add(v);
  }
  void clear();  // keeps the room reserved
  // Pools another store's samples (repetitions): exact while the two together fit
  // kExactSamples; else the histograms add up and the kept subset is drawn from both in
  // proportion to their counts.
  void merge(const SampleStore& other);

  int64_t count() const { return count_; }
  bool exact() const { return count_ == static_cast<int64_t>(kept_.size()); }
  // Every sample in call order when exact(); else a uniform random subset (no order).
  const std::vector<double>& kept() const { return kept_; }
  const LatencyHistogram& histogram() const { return histogram_; }
  // Throws Error(Internal) when empty.
  LatencyStats stats() const;

 private:
  std::vector<double> kept_;
  LatencyHistogram histogram_;
  int64_t count_ = 0;
  double mean_ = 0, m2_ = 0, min_ = 0, max_ = 0;
  uint64_t rng_ = 0x9E3779B97F4A7C15ULL;
  uint64_t next_random();
};

// The samples file's text (docs/measurement.md, "Samples"), at most ~kExactSamples values and
// the histogram's non-empty buckets for any run length:
//   {"unit": "ms", "count": <calls>, "kept": "all" | "uniform subset", "samples": [kept(), ...],
//    "histogram": {"unit": "ns", "relative_error": ..., "buckets": [[lower, upper, count], ...]}}
// "histogram" only when not every sample is kept.
std::string samples_file_text(const SampleStore& store);

}  // namespace turnkey
