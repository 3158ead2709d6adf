// Issue 32: the interval for the next run's median joined with what varies between runs (the
// medians of the result's earlier runs on this host, carried in its stats), and the noisy flag
// that reads this run's own interval only (docs/measurement.md "The interval").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "benchmark/benchmark.h"
#include "turnkey/cache/build_records.h"
#include "turnkey/measure/statistics.h"

namespace turnkey {
namespace {

using nlohmann::json;
using engine_internal::add_earlier_runs;
using engine_internal::Measurement;
using engine_internal::trust_flags;

TEST(BetweenRunsInterval, IsThePredictionIntervalWithKMinusOneDegreesOfFreedom) {
  // Four run medians 9, 10, 10, 11: mean 10, sd 0.8165; t(0.975, 3) = 3.182; sqrt(1 + 1/4).
  const MedianInterval i = between_runs_interval({9, 10, 11, 10});
  const double half = 3.182 * std::sqrt(2.0 / 3.0) * std::sqrt(1.25);
  EXPECT_NEAR(i.low_ms, 10 - half, 1e-3);
  EXPECT_NEAR(i.high_ms, 10 + half, 1e-3);
  // Two medians: t(0.975, 1) = 12.706 (not the normal 1.96: two runs say little of the spread).
  const MedianInterval two = between_runs_interval({10, 11});
  EXPECT_NEAR(two.high_ms, 10.5 + 12.706 * std::sqrt(0.5) * std::sqrt(1.5), 1e-3);
  // Every run median is held, however lopsided, and the lower end stops at 0.
  const std::vector<double> lop = {1, 1, 1, 1, 1, 1, 1, 1, 1, 40};
  const MedianInterval l = between_runs_interval(lop);
  for (double m : lop) {
    EXPECT_LE(l.low_ms, m);
    EXPECT_GE(l.high_ms, m);
  }
  EXPECT_GE(l.low_ms, 0);
  EXPECT_EQ(between_runs_interval({7}).low_ms, 7);
  EXPECT_EQ(between_runs_interval({7}).high_ms, 7);
  EXPECT_EQ(between_runs_interval({}).high_ms, 0);
}

TEST(BetweenRunsInterval, HoldsOneMoreRunAboutNinetyFivePercentForNormalRuns) {
  std::mt19937 rng(11);
  std::normal_distribution<double> run(10.0, 0.5);
  int covered = 0;
  const int trials = 4000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> runs(4);
    for (double& x : runs) x = run(rng);
    const MedianInterval i = between_runs_interval(runs);
    const double next = run(rng);
    if (next >= i.low_ms && next <= i.high_ms) ++covered;
  }
  EXPECT_GT(covered, trials * 0.93);
  EXPECT_LT(covered, trials * 0.99);
}

ResultRecord result(const std::string& key, const std::string& host, double median,
                    json earlier = json()) {
  ResultRecord r;
  r.key = key;
  r.fields = {{"median_latency_ms", median}, {"environment", {{"host", host}}}};
  if (!earlier.is_null()) r.fields["earlier_medians_ms"] = earlier;
  return r;
}

TEST(EarlierMedians, CarryTheEarlierResultsHistoryOfThisHostMostRecentLast) {
  const std::vector<ResultRecord> results = {result("ort x86 threads=1", "a", 5),
                                             result("ort x86 threads=2", "a", 3, {1.0, 2.0})};
  EXPECT_EQ(earlier_medians(results, "ort x86 threads=2", "a"), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(earlier_medians(results, "ort x86 threads=1", "a"), (std::vector<double>{5}));
  // Another host's runs, another key, an unknown host, no median: nothing carried.
  EXPECT_TRUE(earlier_medians(results, "ort x86 threads=2", "b").empty());
  EXPECT_TRUE(earlier_medians(results, "torchscript x86 threads=2", "a").empty());
  EXPECT_TRUE(earlier_medians(results, "ort x86 threads=2", "").empty());
  EXPECT_TRUE(earlier_medians({result("k", "", 3)}, "k", "").empty());
  EXPECT_TRUE(earlier_medians({result("k", "a", 0)}, "k", "a").empty());
  ResultRecord bare;
  bare.key = "k";  // fields never read (null)
  EXPECT_TRUE(earlier_medians({bare}, "k", "a").empty());
  // What an older stats file or a damaged one holds is tolerated: no list, or not numbers.
  EXPECT_EQ(earlier_medians({result("k", "a", 4, "x")}, "k", "a"), (std::vector<double>{4}));
  EXPECT_EQ(earlier_medians({result("k", "a", 4, {"x", 2.0})}, "k", "a"),
            (std::vector<double>{2, 4}));
}

// A run measured while other processes took its CPUs (or the probes ran slow, or a quota bit)
// passes on the clean runs before it, not its own median: under load a 980 ms run of a 29 ms
// model had made the next clean run's interval [0, 10971] ms.
TEST(EarlierMedians, ARunFlaggedForItsMachinePassesOnTheCleanRunsButNotItsMedian) {
  for (const char* code : {"machine_busy", "machine_slowed", "quota_throttled"}) {
    ResultRecord flagged = result("k", "a", 980, {29.0, 30.0});
    flagged.fields["flag_codes"] = {"noisy", code};
    EXPECT_EQ(earlier_medians({flagged}, "k", "a"), (std::vector<double>{29, 30})) << code;
  }
  // Flags that say nothing about the machine keep the median: a noisy run is a run of this host.
  ResultRecord noisy = result("k", "a", 31, {29.0});
  noisy.fields["flag_codes"] = {"noisy", "harness_overhead"};
  EXPECT_EQ(earlier_medians({noisy}, "k", "a"), (std::vector<double>{29, 31}));
}

TEST(EarlierMedians, KeepTheLastTenRuns) {
  json ten = json::array();
  for (int i = 1; i <= 10; ++i) ten.push_back(i);
  const std::vector<double> carried = earlier_medians({result("k", "a", 11, ten)}, "k", "a");
  ASSERT_EQ(carried.size(), kEarlierMediansLimit);
  EXPECT_EQ(kEarlierMediansLimit, 10u);
  EXPECT_EQ(carried.front(), 2);  // the oldest went
  EXPECT_EQ(carried.back(), 11);  // the latest is last
}

// A run's within-run interval of [low, high] around a median of 10 ms, from 5 blocks.
Measurement measured(double low, double high) {
  Measurement m;
  m.repetitions.resize(1);
  m.stats.median_ms = 10;
  m.block_medians_ms = {low, 10, 10, 10, high};
  m.interval_low_ms = m.within_low_ms = low;
  m.interval_high_ms = m.within_high_ms = high;
  m.interval_method = "median +- c x sd of the 4 block medians nearest their median (of 5)";
  return m;
}

bool flagged_noisy(const Measurement& m) {
  const std::vector<Flag> flags = trust_flags(m);
  return std::any_of(flags.begin(), flags.end(),
                     [](const Flag& f) { return f.code == FlagCode::Noisy; });
}

TEST(AddEarlierRuns, JoinsTheRunsIntervalAndSaysHowManyRunsWentIn) {
  Measurement m = measured(9.9, 10.1);
  add_earlier_runs(m, {8, 12, 11});
  EXPECT_EQ(m.interval_runs, 4);
  EXPECT_EQ(m.earlier_medians_ms, (std::vector<double>{8, 12, 11}));
  const MedianInterval runs = between_runs_interval({8, 12, 11, 10});
  EXPECT_EQ(m.interval_low_ms, runs.low_ms);
  EXPECT_EQ(m.interval_high_ms, runs.high_ms);
  for (double r : {8.0, 12.0, 11.0, 10.0}) {
    EXPECT_LE(m.interval_low_ms, r);
    EXPECT_GE(m.interval_high_ms, r);
  }
  EXPECT_NE(m.interval_method.find("and the medians of this and 3 earlier runs of this result on "
                                   "this host: mean +- t(0.975, 3) x sd x sqrt(1+1/4)"),
            std::string::npos)
      << m.interval_method;
  // The within-run interval stays, and the blocks' part of the union is kept where it is wider.
  EXPECT_EQ(m.within_low_ms, 9.9);
  EXPECT_EQ(m.within_high_ms, 10.1);
  Measurement wide = measured(5, 15);
  add_earlier_runs(wide, {10.1});
  EXPECT_EQ(wide.interval_runs, 2);
  EXPECT_LE(wide.interval_low_ms, 5);
  EXPECT_NE(wide.interval_method.find("this and 1 earlier run of"), std::string::npos);
}

TEST(AddEarlierRuns, TheFirstRunSaysItCannotSeeWhatVariesBetweenRuns) {
  Measurement m = measured(9.9, 10.1);
  add_earlier_runs(m, {});
  EXPECT_EQ(m.interval_runs, 1);
  EXPECT_EQ(m.interval_low_ms, 9.9);
  EXPECT_EQ(m.interval_high_ms, 10.1);
  EXPECT_NE(m.interval_method.find("what varies within this run only: this is the first run of "
                                   "this result on this host"),
            std::string::npos)
      << m.interval_method;
  EXPECT_NE(m.interval_method.find("rerun to widen it"), std::string::npos);
}

TEST(AddEarlierRuns, TheNoisyFlagReadsThisRunsIntervalNotTheRuns) {
  // Tight blocks, earlier runs far apart: the interval is wide, the run is not noisy.
  Measurement quiet = measured(9.95, 10.05);
  add_earlier_runs(quiet, {6, 14, 9});
  ASSERT_GT((quiet.interval_high_ms - quiet.interval_low_ms) / 2 / 10, 0.03);
  EXPECT_FALSE(flagged_noisy(quiet));
  // Blocks wide on their own: noisy, with earlier runs or without.
  Measurement loud = measured(9, 11);
  EXPECT_TRUE(flagged_noisy(loud));
  add_earlier_runs(loud, {10, 10});
  EXPECT_TRUE(flagged_noisy(loud));
}

}  // namespace
}  // namespace turnkey
