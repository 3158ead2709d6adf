// The measurement driver for several requests in flight (--concurrency N > 1, docs/measurement.md).
// The single-request path is run_loop (loop.h) and nothing here touches it.
//
// N caller threads, one Session each (callers of one shared session, or a session per request),
// start together at a barrier and call run() back to back until told to stop. Each caller times
// its own calls: two steady_clock reads around run(), nothing else between them. A coordinator
// thread (the caller of run_concurrent_loop) only sleeps and reads per-caller counters:
//   cold      callers[0]'s first call, alone, before the threads start;
//   warm-up   rounds of at least max(min_warmup_s / 2, 25 ms) and `warmup_iterations` calls (all
//             callers), until a round's throughput is within `steady_tolerance` of the previous
//             round's (at least `min_warmup_s` in all); capped as run_loop's;
//   window    the timed window [T0, T1]: T0 once every caller records its calls (each has seen
//             the switch, so every call ending after T0 is recorded); T1 after `iterations` calls
//             that started at or after T0 (the N-th to end), or `duration_s` after T0;
//   overhead  the single-caller empty-call loop of run_loop, on callers[0], after the threads end.
// The hooks (loop.h: the throttling counters) run on the coordinating thread at T0 and when it
// stops the callers, so they bracket the window, not the warm-up; the callers keep calling
// meanwhile (a hook must be cheap: it takes no CPU from them beyond its own few reads).
// Sustained throughput = calls ending in (T0, T1] / (T1 - T0); latency samples = calls that
// started at or after T0 and ended by T1, over all callers. The adaptive stop rule is not
// available here (validate_concurrent_options says so).
// Not thread-safe per call: one run_concurrent_loop at a time on a set of sessions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "turnkey/measure/loop.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey {

struct ConcurrentResult {
  // cold_ms, warm-up facts, samples_ms (the window's calls, every caller), stop_reason, timed_s
  // (T1 - T0), overhead_median_ms and peak_rss_run_bytes, as run_loop fills them.
  LoopResult loop;
  int callers = 0;
  int64_t completed = 0;                      // calls that ended in (T0, T1]
  std::vector<int64_t> completed_per_caller;  // the same, per caller
  // Sustained calls per second: the calls' work in the window (each call counts the part of it
  // inside [T0, T1]) over timed_s.
  double calls_per_s = 0;
};

// Throws Error(InvalidInput) for options the driver cannot run (those of
// validate_loop_options, the adaptive rule, fewer than 2 callers).
void validate_concurrent_options(const LoopOptions& options, int callers);

// Times callers.size() (>= 2) sessions at once, one thread each; callers[0] is the loaded
// session (its process's peak memory is read). Sessions that time themselves cannot be driven
// here (Error(Internal)). When a caller's run() throws, every caller stops and the first error is
// rethrown after all threads ended.
ConcurrentResult run_concurrent_loop(const std::vector<Session*>& callers,
                                     const LoopOptions& options, const LoopHooks& hooks = {});

}  // namespace turnkey
