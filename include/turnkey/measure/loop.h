// The measurement loop: nothing in the timed region but the call being measured. Each iteration
// is timed on its own with steady_clock (two clock reads, ~20-40 ns here, inside the sample; the
// same holds for the bare loops in bench/, so overhead ratios compare like with like). Sessions
// that time themselves (the Python side) hand over their own per-call samples instead.
//
// One driver for every runtime (docs/measurement.md states the rules):
//   cold      the very first call, reported on its own;
//   warm-up   rounds of calls until steady: at least `warmup_iterations` calls and
//             `min_warmup_s` seconds, then more rounds while a round's median differs from the
//             previous round's by more than `steady_tolerance`; capped by `max_warmup_rounds`
//             and `max_warmup_s` (then `warmup_steady` is false);
//   timed     a fixed count (`iterations`), a duration (`duration_s`), or adaptive: batches until
//             the 95% confidence interval of the median is within +-`ci_target` of the median,
//             between `min_iterations` and `max_iterations` calls and within `max_duration_s`;
//             With `blocks` above 1 (the default 5), a fixed count or a duration is cut into that
//             many consecutive blocks (equal counts, or equal shares of the duration), and each
//             block's median is kept: what varies over the timed phase, which the interval for
//             the next run's median is made from (statistics.h next_run_interval). Nothing
//             changes inside the timed region: the blocks follow each other without a pause.
//   overhead  the same loop around an empty call (`overhead_iterations` of them), the harness's
//             own per-iteration cost, which is inside every sample.
// Not thread-safe per session.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "turnkey/measure/samples.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey {

enum class StopRule { Iterations, Duration, Adaptive };

struct LoopOptions {
  // Warm-up
  int64_t warmup_iterations = 10;  // 0: no warm-up at all (cold measurements on purpose)
  double min_warmup_s = 0.05;
  double steady_tolerance = 0.05;
  int max_warmup_rounds = 20;
  double max_warmup_s = 30;
  int64_t max_warmup_iterations = 1000000;
  // Timed phase
  StopRule rule = StopRule::Iterations;
  int64_t iterations = 100;
  double duration_s = 0;
  double ci_target = 0.02;  // half-width of the median's 95% CI / median
  int64_t min_iterations = 10;
  int64_t max_iterations = 100000;
  double max_duration_s = 60;
  int blocks = 5;  // consecutive blocks of a fixed count or a duration (not adaptive); 1: one
  // Harness overhead
  int64_t overhead_iterations = 1000;
};

struct LoopResult {
  double cold_ms = 0;             // the very first call, before warm-up
  int64_t warmup_iterations = 0;  // calls discarded after the cold one (as many as really ran)
  int warmup_rounds = 0;
  bool warmup_steady = true;       // false when a cap ended the warm-up first
  SampleStore samples;             // the timed calls, bounded (samples.h)
  std::string stop_reason;         // "100 iterations", "CI +-1.7% <= +-2%", "max duration 60 s"
  std::vector<double> block_medians_ms;  // each block's median, in order (one: the whole phase)
  double timed_s = 0;              // wall time of the timed phase
  double overhead_median_ms = 0;   // median of the empty-call loop
  // Peak resident memory of the process holding the model, bytes (0 when /proc cannot tell):
  // while loading (filled by the caller around Runtime::load) and during the warm-up and
  // timed calls (filled by run_loop).
  int64_t rss_before_load_bytes = 0;
  int64_t peak_rss_load_bytes = 0;
  int64_t peak_rss_run_bytes = 0;
};

// Called by run_loop right before the first and right after the last timed call (after the
// warm-up, before the overhead loop), outside the timed region, so the throttling counters
// bracket exactly the timed phase (run_concurrent_loop: its window). Either may be empty.
struct LoopHooks {
  std::function<void()> before_timed, after_timed;
};

// The loop's storage: the timed calls' samples and a warm-up round's. A caller that reads the
// model's memory reserves it before its baseline, so the harness's storage, the same for any run
// length, is never counted as the model's.
struct LoopRoom {
  SampleStore timed, round;
  void reserve() {
    timed.reserve();
    round.reserve();
  }
};

// Throws Error(InvalidInput) for options that cannot be run (no iterations, negative times).
void validate_loop_options(const LoopOptions& options);

// Times `session` (already loaded) into `room` (moved into the result's samples; a room of its
// own, reserved here, when null). Throws whatever the session throws (Error(Runtime)).
LoopResult run_loop(Session& session, const LoopOptions& options, const LoopHooks& hooks = {},
                    LoopRoom* room = nullptr);

// The timed calls alone: `n` calls of session.run() (or of an empty function when
// `empty_call`), each between two clock reads, added to `into`. The raw durations go through a
// fixed buffer of kCallChunk on the stack, converted and added between chunks, outside every
// sample's clock reads: nothing is allocated for any n. For sessions that time themselves, their
// own run_timed(), kCallChunk calls at a time. Milliseconds.
inline constexpr int64_t kCallChunk = 4096;
void timed_calls(Session& session, int64_t n, SampleStore& into, bool empty_call = false);
// The same for a few calls (the cold call, the overhead loop), as a vector of n.
std::vector<double> timed_calls(Session& session, int64_t n, bool empty_call = false);

// Peak resident memory: reset_peak_rss(pid) makes the kernel's high-water mark (VmHWM) restart
// from the current RSS (writes "5" to /proc/<pid>/clear_refs); peak_rss_bytes(pid) reads it.
// Neither touches the timed region. Both return false / 0 when /proc does not allow it.
bool reset_peak_rss(pid_t pid);
int64_t peak_rss_bytes(pid_t pid);
int64_t current_rss_bytes(pid_t pid);

}  // namespace turnkey
