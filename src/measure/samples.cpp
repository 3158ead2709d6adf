#include "turnkey/measure/samples.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "turnkey/common/error.h"

namespace turnkey {

namespace {

constexpr int64_t kSub = int64_t{1} << kSubBucketBits;
// Values up to 2^43 ns (~2.4 hours) get buckets of their own; longer ones share the last.
constexpr int kTopBit = 42;
constexpr size_t kBuckets = static_cast<size_t>((kTopBit - kSubBucketBits + 1) * kSub + kSub);
constexpr int64_t kMaxNs = (int64_t{1} << (kTopBit + 1)) - 1;

}  // namespace

// ---- LatencyHistogram ---------------------------------------------------------------------------

void LatencyHistogram::reserve() {
  if (counts_.size() != kBuckets) counts_.assign(kBuckets, 0);
}

size_t LatencyHistogram::index_of(int64_t ns) {
  ns = std::clamp<int64_t>(ns, 0, kMaxNs);
  if (ns < 2 * kSub) return static_cast<size_t>(ns);  // one bucket per nanosecond
  const int top = 63 - std::countl_zero(static_cast<uint64_t>(ns));
  const int shift = top - kSubBucketBits;
  return static_cast<size_t>((shift + 1) * kSub + ((ns >> shift) - kSub));
}

int64_t LatencyHistogram::lower_of(size_t index) {
  const auto i = static_cast<int64_t>(index);
  if (i < 2 * kSub) return i;
  const int64_t shift = i / kSub - 1;
  return (i % kSub + kSub) << shift;
}

int64_t LatencyHistogram::upper_of(size_t index) {
  const auto i = static_cast<int64_t>(index);
  if (i < 2 * kSub) return i;
  return lower_of(index) + (int64_t{1} << (i / kSub - 1)) - 1;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  if (other.total_ == 0) return;
  reserve();
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
}

void LatencyHistogram::clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = 0;
}

double LatencyHistogram::value_at_rank(int64_t rank) const {
  if (total_ == 0) throw Error(ErrorKind::Internal, "percentile of an empty histogram");
  rank = std::clamp<int64_t>(rank, 0, total_ - 1);
  int64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen > rank)
      return (static_cast<double>(lower_of(i)) + static_cast<double>(upper_of(i))) / 2;
  }
  return static_cast<double>(kMaxNs);  // unreachable: the counts add up to total_
}

double LatencyHistogram::percentile(double q) const {
  const double h = static_cast<double>(total_ - 1) * std::clamp(q, 0.0, 1.0);
  const auto lo = static_cast<int64_t>(std::floor(h));
  const double a = value_at_rank(lo), b = value_at_rank(std::min(lo + 1, total_ - 1));
  return a + (h - static_cast<double>(lo)) * (b - a);
}

std::vector<LatencyHistogram::Bucket> LatencyHistogram::buckets() const {
  std::vector<Bucket> out;
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] > 0) out.push_back({lower_of(i), upper_of(i), counts_[i]});
  }
  return out;
}

// ---- SampleStore --------------------------------------------------------------------------------

void SampleStore::reserve() {
  kept_.reserve(static_cast<size_t>(kExactSamples));
  // Touch the room so its pages are resident now, not faulted in during the timed phase.
  double* room = kept_.data();
  std::memset(static_cast<void*>(room), 0, sizeof(double) * static_cast<size_t>(kExactSamples));
  histogram_.reserve();
}

uint64_t SampleStore::next_random() {
  // xorshift64*: cheap, deterministic, good enough to choose reservoir slots.
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  return rng_ * 0x2545F4914F6CDD1DULL;
}

void SampleStore::add(double ms) {
  ++count_;
  if (count_ == 1) {
    min_ = max_ = ms;
  } else {
    min_ = std::min(min_, ms);
    max_ = std::max(max_, ms);
  }
  const double delta = ms - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (ms - mean_);
  histogram_.add(std::llround(ms * 1e6));
  if (count_ <= kExactSamples) {
    kept_.push_back(ms);
    return;
  }
  // Reservoir sampling (Algorithm R): the count_-th sample replaces a kept one with probability
  // kExactSamples / count_.
  const auto slot = static_cast<uint64_t>(
      (static_cast<unsigned __int128>(next_random()) * static_cast<uint64_t>(count_)) >> 64);
  if (slot < kept_.size()) kept_[slot] = ms;
}

void SampleStore::clear() {
  kept_.clear();
  histogram_.clear();
  count_ = 0;
  mean_ = m2_ = min_ = max_ = 0;
}

void SampleStore::merge(const SampleStore& other) {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    // Copies into the room already reserved (no allocation when reserve() was called).
    kept_.assign(other.kept_.begin(), other.kept_.end());
    histogram_ = other.histogram_;
    count_ = other.count_;
    mean_ = other.mean_;
    m2_ = other.m2_;
    min_ = other.min_;
    max_ = other.max_;
    return;
  }
  const int64_t n = count_ + other.count_;
  if (n <= kExactSamples) {
    kept_.insert(kept_.end(), other.kept_.begin(), other.kept_.end());
  } else {
    // Each side's kept samples are a uniform subset of its calls: draw from each, uniformly, as
    // many as its share of all calls.
    auto draw = [&](std::vector<double> from, int64_t k) {
      k = std::min<int64_t>(k, static_cast<int64_t>(from.size()));
      for (int64_t i = 0; i < k; ++i) {  // partial Fisher-Yates
        const auto j =
            i + static_cast<int64_t>(next_random() %
                                     static_cast<uint64_t>(from.size() - static_cast<size_t>(i)));
        std::swap(from[static_cast<size_t>(i)], from[static_cast<size_t>(j)]);
      }
      from.resize(static_cast<size_t>(k));
      return from;
    };
    const auto from_other = static_cast<int64_t>(
        std::llround(static_cast<double>(kExactSamples) * static_cast<double>(other.count_) /
                     static_cast<double>(n)));
    std::vector<double> mine = draw(kept_, kExactSamples - from_other);
    const std::vector<double> theirs = draw(other.kept_, from_other);
    kept_.assign(mine.begin(), mine.end());
    kept_.insert(kept_.end(), theirs.begin(), theirs.end());
  }
  histogram_.merge(other.histogram_);
  const double delta = other.mean_ - mean_;
  const double na = static_cast<double>(count_), nb = static_cast<double>(other.count_);
  mean_ += delta * nb / (na + nb);
  m2_ += other.m2_ + delta * delta * na * nb / (na + nb);
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  count_ = n;
}

LatencyStats SampleStore::stats() const {
  if (count_ == 0) throw Error(ErrorKind::Internal, "statistics of no samples");
  if (exact()) return compute_stats(kept_);
  LatencyStats s;
  s.iterations = count_;
  s.min_ms = min_;
  s.max_ms = max_;
  s.mean_ms = mean_;
  s.std_ms = count_ > 1 ? std::sqrt(m2_ / static_cast<double>(count_ - 1)) : 0.0;
  s.cv = s.mean_ms > 0 ? s.std_ms / s.mean_ms : 0.0;
  // The histogram's values, ns to ms, within [min, max] (clamping only brings them closer).
  auto ms = [&](double ns) { return std::clamp(ns / 1e6, min_, max_); };
  s.median_ms = ms(histogram_.percentile(0.5));
  s.p90_ms = ms(histogram_.percentile(0.90));
  s.p95_ms = ms(histogram_.percentile(0.95));
  s.p99_ms = ms(histogram_.percentile(0.99));
  const RankInterval ci = median_ci_ranks(count_);
  s.median_ci_low_ms = ms(histogram_.value_at_rank(ci.low));
  s.median_ci_high_ms = ms(histogram_.value_at_rank(ci.high));
  return s;
}

std::string samples_file_text(const SampleStore& store) {
  nlohmann::ordered_json j = {{"unit", "ms"},
                              {"count", store.count()},
                              {"kept", store.exact() ? "all" : "uniform subset"},
                              {"samples", store.kept()}};
  if (!store.exact()) {
    nlohmann::json buckets = nlohmann::json::array();
    for (const LatencyHistogram::Bucket& b : store.histogram().buckets()) {
      buckets.push_back({b.lower_ns, b.upper_ns, b.count});
    }
    j["histogram"] = {{"unit", "ns"},
                      {"relative_error", kHistogramRelativeError},
                      {"buckets", std::move(buckets)}};
  }
  return j.dump() + "\n";
}

}  // namespace turnkey
