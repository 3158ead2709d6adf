// The measurement loop: nothing in the timed region but Session::run(). Each iteration is timed
// on its own with steady_clock (two clock reads, ~20-40 ns here, inside the sample; the same
// holds for the bare loops in bench/, so overhead ratios compare like with like).
#pragma once

#include <cstdint>
#include <vector>

#include "turnkey/runtime/runtime.h"

namespace turnkey {

// Warm-up rule: after the cold run, at least `warmup_iterations` runs AND at least
// `min_warmup_s` seconds of runs (so microsecond models warm their caches, thread pools and
// branch predictors too), capped at `max_warmup_iterations`.
struct LoopOptions {
  int64_t warmup_iterations = 10;
  double min_warmup_s = 0.05;
  int64_t max_warmup_iterations = 100000;
  int64_t iterations = 100;
};

struct LoopResult {
  double cold_ms = 0;              // the very first run(), before warm-up
  int64_t warmup_iterations = 0;   // runs discarded after the cold one (as many as really ran)
  std::vector<double> samples_ms;  // one per timed iteration
};

// Throws whatever Session::run throws (Error(Runtime)).
LoopResult run_loop(Session& session, const LoopOptions& options);

}  // namespace turnkey
