#include "turnkey/measure/loop.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <fstream>
#include <string>

#include "turnkey/common/error.h"
#include "turnkey/measure/statistics.h"
#include "turnkey/machine/system_info.h"

namespace turnkey {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The empty call of the overhead loop: a call through the same kind of virtual dispatch as
// Session::run, which the compiler cannot drop.
class EmptySession final : public Session {
 public:
  void run() override { asm volatile("" ::: "memory"); }
};

}  // namespace

bool reset_peak_rss(pid_t pid) {
  std::ofstream out(fmt::format("/proc/{}/clear_refs", pid));
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

int64_t peak_rss_bytes(pid_t pid) {
  return std::max<int64_t>(0, proc_kib_as_bytes(fmt::format("/proc/{}/status", pid), "VmHWM"));
}
int64_t current_rss_bytes(pid_t pid) {
  return std::max<int64_t>(0, proc_kib_as_bytes(fmt::format("/proc/{}/status", pid), "VmRSS"));
}

void validate_loop_options(const LoopOptions& o) {
  auto bad = [](const std::string& what) { throw Error(ErrorKind::InvalidInput, what); };
  if (o.warmup_iterations < 0) bad("--warmup must not be negative");
  if (o.blocks < 1 || o.blocks > 1000)
    bad(fmt::format("--blocks {}: expected 1 to 1000", o.blocks));
  switch (o.rule) {
    case StopRule::Iterations:
      if (o.iterations < 1 || o.iterations > 100000000) {
        bad(fmt::format("--iterations {}: must be between 1 and 100000000", o.iterations));
      }
      break;
    case StopRule::Duration:
      if (!(o.duration_s > 0) || o.duration_s > 86400) {
        bad(fmt::format("--duration {}: must be more than 0 and at most 86400 seconds",
                        o.duration_s));
      }
      break;
    case StopRule::Adaptive:
      if (!(o.ci_target > 0) || o.ci_target >= 1) {
        bad(fmt::format("--ci-target {}: must be a percentage above 0 and below 100",
                        o.ci_target * 100));
      }
      if (o.min_iterations < 1 || o.max_iterations < o.min_iterations) {
        bad(fmt::format("--min-iterations {} / --max-iterations {}: need 1 <= min <= max",
                        o.min_iterations, o.max_iterations));
      }
      if (!(o.max_duration_s > 0)) bad("--max-duration must be more than 0 seconds");
      break;
  }
}

void timed_calls(Session& session, int64_t n, SampleStore& into, bool empty_call) {
  if (session.times_itself()) {
    for (int64_t done = 0; done < n;) {
      const int64_t k = std::min(kCallChunk, n - done);
      const std::vector<double> samples = session.run_timed(k, empty_call);
      if (static_cast<int64_t>(samples.size()) != k) {
        throw Error(ErrorKind::Runtime,
                    fmt::format("the runtime returned {} samples for {} calls", samples.size(), k));
      }
      into.add_all(samples);
      done += k;
    }
    return;
  }
  EmptySession empty;
  Session& target = empty_call ? static_cast<Session&>(empty) : session;
  std::array<Clock::duration, kCallChunk> raw;
  for (int64_t done = 0; done < n;) {
    const auto k = static_cast<size_t>(std::min(kCallChunk, n - done));
    // The timed region: a clock read, run(), a clock read. Raw durations are converted after.
    for (size_t i = 0; i < k; ++i) {
      target.release_outputs();
      const auto start = Clock::now();
      target.run();
      raw[i] = Clock::now() - start;
    }
    for (size_t i = 0; i < k; ++i) {
      into.add(std::chrono::duration<double, std::milli>(raw[i]).count());
    }
    done += static_cast<int64_t>(k);
  }
}

std::vector<double> timed_calls(Session& session, int64_t n, bool empty_call) {
  if (n <= 0) return {};
  if (session.times_itself()) {
    std::vector<double> samples = session.run_timed(n, empty_call);
    if (static_cast<int64_t>(samples.size()) != n) {
      throw Error(ErrorKind::Runtime,
                  fmt::format("the runtime returned {} samples for {} calls", samples.size(), n));
    }
    return samples;
  }
  EmptySession empty;
  Session& target = empty_call ? static_cast<Session&>(empty) : session;
  // The timed region: a clock read, run(), a clock read. Raw durations are converted after.
  std::vector<Clock::duration> raw(static_cast<size_t>(n));
  for (auto& d : raw) {
    target.release_outputs();
    const auto start = Clock::now();
    target.run();
    d = Clock::now() - start;
  }
  std::vector<double> samples(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    samples[i] = std::chrono::duration<double, std::milli>(raw[i]).count();
  }
  return samples;
}

namespace {

// Warm-up in rounds until two rounds' medians agree within the steady tolerance (or a limit is
// reached: then warmup_steady is false). Outside the timed phase.
void warm_up(Session& session, const LoopOptions& o, SampleStore& round, LoopResult& r) {
  if (o.warmup_iterations <= 0) return;
  const auto start = Clock::now();
  double estimate_ms = std::max(r.cold_ms, 1e-6);
  double previous_median = -1;
  for (;;) {
    // A round: at least the asked warm-up calls, and enough to fill ~min_warmup_s / 2.
    int64_t n = std::max<int64_t>(o.warmup_iterations,
                                  static_cast<int64_t>(o.min_warmup_s * 500.0 / estimate_ms));
    n = std::clamp<int64_t>(n, 1,
                            std::max<int64_t>(1, o.max_warmup_iterations - r.warmup_iterations));
    round.clear();
    timed_calls(session, n, round);
    r.warmup_iterations += n;
    ++r.warmup_rounds;
    const double median = round.stats().median_ms;
    estimate_ms = std::max(median, 1e-6);
    const bool enough =
        r.warmup_iterations >= o.warmup_iterations && seconds_since(start) >= o.min_warmup_s;
    const bool steady = previous_median > 0 &&
                        std::abs(median - previous_median) <= o.steady_tolerance * previous_median;
    previous_median = median;
    if (enough && steady) break;
    if (r.warmup_rounds >= o.max_warmup_rounds || seconds_since(start) >= o.max_warmup_s ||
        r.warmup_iterations >= o.max_warmup_iterations) {
      r.warmup_steady = false;
      break;
    }
  }
}

// --duration (or one block of it): batches of ~1/10 of `duration_s` (at least one call), so the
// pause between batches (outside the timed region anyway) stays rare. Returns the per-call
// estimate for the next block.
double run_for_duration(Session& session, double duration_s, double estimate_ms,
                        SampleStore& timed) {
  const auto start = Clock::now();
  estimate_ms = std::max(estimate_ms, 1e-6);
  while (seconds_since(start) < duration_s) {
    const double left_ms = (duration_s - seconds_since(start)) * 1000.0;
    const int64_t n = std::clamp<int64_t>(
        static_cast<int64_t>(std::min(left_ms, duration_s * 100.0) / estimate_ms), 1, 10000000);
    const auto batch_start = Clock::now();
    timed_calls(session, n, timed);
    estimate_ms = std::max(seconds_since(batch_start) * 1000.0 / static_cast<double>(n), 1e-6);
  }
  return estimate_ms;
}

// Fewer calls than this in a block and its median says little: `--iterations 20` makes 2
// blocks, `--iterations 10` one.
constexpr int64_t kMinBlockCalls = 10;

// A fixed count or a duration in consecutive blocks (LoopOptions::blocks), each timed into
// `block` and then added to `timed`, its median kept. Returns the stop reason.
std::string run_blocks(Session& session, const LoopOptions& o, double cold_ms, LoopRoom& room,
                       std::vector<double>& medians) {
  const bool fixed = o.rule == StopRule::Iterations;
  const int64_t blocks =
      fixed ? std::clamp<int64_t>(o.iterations / kMinBlockCalls, 1, std::max(o.blocks, 1))
            : std::max(o.blocks, 1);
  double estimate_ms = cold_ms;
  for (int64_t b = 0; b < blocks; ++b) {
    room.round.clear();
    if (fixed) {
      timed_calls(session, o.iterations / blocks + (b < o.iterations % blocks ? 1 : 0), room.round);
    } else {
      estimate_ms = run_for_duration(session, o.duration_s / static_cast<double>(blocks),
                                     estimate_ms, room.round);
    }
    // Between blocks, outside every sample: the block's median, and its samples pooled.
    medians.push_back(room.round.stats().median_ms);
    room.timed.merge(room.round);
  }
  return fixed ? fmt::format("{} iterations", o.iterations)
               : fmt::format("duration {} s", o.duration_s);
}

// --adaptive: batches that grow by half of what is there until the median's 95% CI is within
// the target, or the iteration or time cap is reached. Returns the stop reason.
std::string run_adaptive(Session& session, const LoopOptions& o, Clock::time_point start,
                         SampleStore& timed) {
  int64_t n = o.min_iterations;
  for (;;) {
    timed_calls(session, n, timed);
    const LatencyStats st = timed.stats();
    const double half = (st.median_ci_high_ms - st.median_ci_low_ms) / 2;
    const double rel = st.median_ms > 0 ? half / st.median_ms : 0;
    const int64_t count = timed.count();
    if (rel <= o.ci_target) {
      return fmt::format("95% CI of the median +-{:.2f}% <= +-{:g}%", rel * 100,
                         o.ci_target * 100);
    }
    if (count >= o.max_iterations) {
      return fmt::format("max iterations {} (CI +-{:.2f}%, target +-{:g}%)", o.max_iterations,
                         rel * 100, o.ci_target * 100);
    }
    const double elapsed = seconds_since(start);
    if (elapsed >= o.max_duration_s) {
      return fmt::format("max duration {:g} s (CI +-{:.2f}%, target +-{:g}%)", o.max_duration_s,
                         rel * 100, o.ci_target * 100);
    }
    // Grow by half of what we have, within the caps of count and time.
    const double per_call_s = elapsed / static_cast<double>(count);
    int64_t next = std::max<int64_t>(count / 2, 1);
    next = std::min(next, o.max_iterations - count);
    if (per_call_s > 0) {
      next = std::min(
          next, std::max<int64_t>(1, static_cast<int64_t>((o.max_duration_s - elapsed) / per_call_s)));
    }
    n = next;
  }
}

}  // namespace

LoopResult run_loop(Session& session, const LoopOptions& o, const LoopHooks& hooks,
                    LoopRoom* room) {
  validate_loop_options(o);
  LoopRoom own;
  if (room == nullptr) {
    own.reserve();
    room = &own;
  }
  SampleStore& timed = room->timed;
  timed.clear();
  LoopResult r;
  const pid_t pid = session.process_id();

  // The process's high-water mark restarts here: what follows is the run's peak.
  const bool rss_ok = reset_peak_rss(pid);
  r.cold_ms = timed_calls(session, 1).front();
  warm_up(session, o, room->round, r);

  // ---- timed phase ---------------------------------------------------------------------------
  if (hooks.before_timed) hooks.before_timed();
  const auto start = Clock::now();
  if (o.rule == StopRule::Adaptive) {
    r.stop_reason = run_adaptive(session, o, start, timed);
  } else {
    r.stop_reason = run_blocks(session, o, r.cold_ms, *room, r.block_medians_ms);
  }
  r.timed_s = seconds_since(start);
  if (r.block_medians_ms.empty()) r.block_medians_ms.push_back(timed.stats().median_ms);
  if (rss_ok) r.peak_rss_run_bytes = peak_rss_bytes(pid);
  r.samples = std::move(timed);
  if (hooks.after_timed) hooks.after_timed();

  // ---- the harness's own overhead: the same loop around an empty call ------------------------
  if (o.overhead_iterations > 0) {
    r.overhead_median_ms = median_of(timed_calls(session, o.overhead_iterations, true));
  }
  return r;
}

}  // namespace turnkey
