// Internal to the engine: benchmark --profile (docs/measurement.md). After the timed phase, and
// never inside it, a second session of the same model and settings with the runtime's profiler on
// runs one warm-up call and profile_calls() profiled calls; the profiler's own file is kept in the
// build dir and its numbers become the result's `profile` field (fields.h): the top op types and
// nodes by time, each with its share of the profiled node time. Not thread-safe: one Build is
// worked on by one thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "turnkey/runtime/profile.h"

namespace turnkey::engine_internal {

// Profiled calls, after one warm-up call: enough to fill about kProfileTargetMs at the timed
// median (a µs model's split over 10 calls is a handful of timer ticks), within [min, max].
inline constexpr int kProfileMinCalls = 10;
inline constexpr int kProfileMaxCalls = 1000;
inline constexpr double kProfileTargetMs = 200;
// The profile's node time per call and the timed median differing by more than this factor
// (either way) is said beside the profile: the profiler's own cost per node is in its times.
inline constexpr double kProfileDisagreeFactor = 3;

// The profiled calls for a timed median (ms; <= 0: unknown, the minimum).
int profile_calls(double timed_median_ms);
inline constexpr size_t kProfileTopRows = 10;   // rows kept per table (op types, nodes)
inline constexpr size_t kProfileBlockRows = 5;  // rows the printed block shows

// The profile pass for a benchmarked build: records `profile` in its stats. A failure of the pass
// is recorded as profile.error and logged, never thrown: the measurement before it stands.
void profile_pass(Build& build, const BenchmarkSetup& setup, std::string& log);

// The stats' `profile` object from a profiler's numbers: totals, the top `top` op types (with how
// many nodes each has) and nodes by total time, each with its share of the summed node time (so
// the shares of a table add up to at most 1), and `summary`, the report cell ("Conv 61.2%,
// Gemm 20.1%, ...").
// `timed_median_ms` (> 0) is recorded beside the profile's per-call node time, with
// `disagreement` (one line) when they differ by more than kProfileDisagreeFactor.
nlohmann::json profile_summary(const OpProfile& profile, size_t top = kProfileTopRows,
                               double timed_median_ms = 0);

// The block's lines for a `profile` object: a heading, then the top `rows` op types (share, ms per
// call, nodes); the error line when the pass failed.
std::vector<std::string> profile_block_lines(const nlohmann::json& profile,
                                             size_t rows = kProfileBlockRows);

}  // namespace turnkey::engine_internal
