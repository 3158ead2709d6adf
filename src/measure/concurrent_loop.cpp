#include "turnkey/measure/concurrent_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "turnkey/common/error.h"
#include "turnkey/measure/statistics.h"

namespace turnkey {

namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

enum Phase : int { kWarm = 0, kTimed = 1, kStop = 2 };

struct Call {
  Clock::time_point start, end;
};

// One caller thread's state. Its counter is written by its thread only and read by the
// coordinator; `calls` is read only after the thread ended. Aligned so that callers' counters do
// not share a cache line.
struct alignas(64) Caller {
  Session* session = nullptr;
  std::atomic<int64_t> done{0};        // calls completed (warm-up and window)
  std::atomic<bool> recording{false};  // this caller records every call it starts from now
  std::vector<Call> calls;             // the recorded calls
};

class Shared {
 public:
  std::atomic<int> phase{kWarm};
  int64_t reserve_per_caller = 0;  // written before phase becomes kTimed

  void fail(std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = e;
      failed_ = true;
    }
    phase.store(kStop, std::memory_order_release);
    wake_.notify_all();
  }
  // Sleeps `s` seconds, or less when a caller failed: false then.
  bool sleep(double s) {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait_for(lock, Seconds(std::max(s, 0.0)), [&] { return failed_; });
    return !failed_;
  }
  bool failed() {
    std::lock_guard<std::mutex> lock(mutex_);
    return failed_;
  }
  std::exception_ptr error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool failed_ = false;
  std::exception_ptr error_;
};

// A caller thread: waits at the barrier, then calls run() back to back. The timed region is the
// two clock reads around run(); the phase check, the record and the counter come after it.
void caller_body(Caller& c, Shared& shared, std::barrier<>& start) {
  start.arrive_and_wait();
  try {
    Session& session = *c.session;
    bool recording = false;
    int64_t done = 0;
    for (;;) {
      const int phase = shared.phase.load(std::memory_order_acquire);
      if (phase == kStop) break;
      if (phase == kTimed && !recording) {
        c.calls.reserve(static_cast<size_t>(shared.reserve_per_caller));
        recording = true;
        c.recording.store(true, std::memory_order_release);
      }
      const auto t0 = Clock::now();
      session.run();
      const auto t1 = Clock::now();
      if (recording) c.calls.push_back({t0, t1});
      c.done.store(++done, std::memory_order_release);
    }
  } catch (...) {
    shared.fail(std::current_exception());
  }
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

void validate_concurrent_options(const LoopOptions& o, int callers) {
  validate_loop_options(o);
  if (callers < 2) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("concurrency {}: the concurrent driver needs at least 2 requests in "
                            "flight (1 is the single-request loop)",
                            callers));
  }
  if (o.rule == StopRule::Adaptive) {
    throw Error(ErrorKind::InvalidInput,
                "--adaptive stops on the confidence interval of one request's median: with "
                "--concurrency above 1 use --iterations or --duration");
  }
}

ConcurrentResult run_concurrent_loop(const std::vector<Session*>& sessions, const LoopOptions& o,
                                     const LoopHooks& hooks) {
  const int n = static_cast<int>(sessions.size());
  validate_concurrent_options(o, n);
  for (Session* s : sessions) {
    if (!s) throw Error(ErrorKind::Internal, "concurrent loop: a caller has no session");
    if (s->times_itself()) {
      throw Error(ErrorKind::Internal,
                  "concurrent loop: a session that times itself cannot be driven by threads");
    }
  }
  ConcurrentResult r;
  r.callers = n;
  const pid_t pid = sessions[0]->process_id();
  const bool rss_ok = reset_peak_rss(pid);
  r.loop.cold_ms = timed_calls(*sessions[0], 1).front();

  Shared shared;
  std::vector<std::unique_ptr<Caller>> callers;
  for (Session* s : sessions) {
    callers.push_back(std::make_unique<Caller>());
    callers.back()->session = s;
  }
  std::barrier<> start(n + 1);
  std::vector<std::thread> threads;
  // Every path out stops and joins the callers (a coordinator error included).
  struct Joiner {
    Shared& shared;
    std::vector<std::thread>& threads;
    ~Joiner() {
      shared.phase.store(kStop, std::memory_order_release);
      for (std::thread& t : threads) {
        if (t.joinable()) t.join();
      }
    }
  } joiner{shared, threads};
  try {
    for (auto& c : callers) {
      threads.emplace_back(caller_body, std::ref(*c), std::ref(shared), std::ref(start));
    }
  } catch (const std::system_error& e) {
    // The threads that started wait at the barrier: arrive for the missing ones (and for the
    // coordinator) so that they see the stop and end.
    shared.phase.store(kStop, std::memory_order_release);
    (void)start.arrive(static_cast<std::ptrdiff_t>(n + 1 - threads.size()));
    throw Error(ErrorKind::Runtime,
                fmt::format("could not start {} caller threads: {}", n, e.what()));
  }
  start.arrive_and_wait();
  auto total = [&] {
    int64_t sum = 0;
    for (const auto& c : callers) sum += c->done.load(std::memory_order_acquire);
    return sum;
  };
  // Sleeps until `count()` reaches `need` (or `deadline_s` seconds after `since` pass): sleeps
  // of the expected time at `rate` calls/s, at least 1 ms. False when a caller failed.
  auto wait_for_calls = [&](auto count, int64_t need, double rate, Clock::time_point since,
                            double deadline_s) {
    for (;;) {
      const int64_t got = count();
      if (got >= need || seconds_between(since, Clock::now()) >= deadline_s) return true;
      const double expected = rate > 0 ? static_cast<double>(need - got) / rate : 0.01;
      if (!shared.sleep(std::clamp(expected, 0.001, 0.25))) return false;
    }
  };

  // ---- warm-up: rounds until the throughput is steady ------------------------------------------
  const auto warm_start = Clock::now();
  double rate = 0;  // calls per second, all callers
  if (o.warmup_iterations > 0) {
    const double round_s = std::max(o.min_warmup_s / 2, 0.025);
    double previous = -1;
    int64_t before = 0;
    auto round_start = warm_start;
    for (;;) {
      if (!shared.sleep(round_s)) break;
      const int64_t need = before + std::max<int64_t>(o.warmup_iterations, n);
      if (!wait_for_calls(total, need, rate, warm_start, o.max_warmup_s)) break;
      const auto now = Clock::now();
      const int64_t calls = total();
      const double round_rate =
          static_cast<double>(calls - before) / std::max(seconds_between(round_start, now), 1e-9);
      ++r.loop.warmup_rounds;
      before = calls;
      round_start = now;
      rate = round_rate;
      const double elapsed = seconds_between(warm_start, now);
      const bool enough = calls >= o.warmup_iterations && elapsed >= o.min_warmup_s;
      const bool steady =
          previous > 0 && std::abs(round_rate - previous) <= o.steady_tolerance * previous;
      previous = round_rate;
      if (enough && steady) break;
      if (r.loop.warmup_rounds >= o.max_warmup_rounds || elapsed >= o.max_warmup_s ||
          calls >= o.max_warmup_iterations) {
        r.loop.warmup_steady = false;
        break;
      }
    }
  }
  if (!(rate > 0)) rate = n * 1000.0 / std::max(r.loop.cold_ms, 1e-6);

  // ---- the timed window ------------------------------------------------------------------------
  const double per_caller_rate = rate / n;
  const double expected_per_caller = o.rule == StopRule::Iterations
                                         ? static_cast<double>(o.iterations) / n
                                         : std::min(per_caller_rate * o.duration_s, 1e8);
  shared.reserve_per_caller = static_cast<int64_t>(expected_per_caller * 1.25) + 1024;
  if (o.rule == StopRule::Iterations) {
    shared.reserve_per_caller = std::min(shared.reserve_per_caller, o.iterations + 16);
  }
  shared.phase.store(kTimed, std::memory_order_release);
  // T0 once every caller records: every call that ends after T0 is then recorded.
  auto recording = [&] {
    int64_t k = 0;
    for (const auto& c : callers) k += c->recording.load(std::memory_order_acquire) ? 1 : 0;
    return k;
  };
  wait_for_calls(recording, n, 0, Clock::now(), 1e9);
  const auto t0 = Clock::now();
  // On this coordinator, which otherwise only waits: the counters bracket the window alone.
  if (hooks.before_timed) hooks.before_timed();
  std::vector<int64_t> done_at_t0;
  for (const auto& c : callers) done_at_t0.push_back(c->done.load(std::memory_order_acquire));
  const int64_t share = (o.iterations + n - 1) / n;  // the Iterations rule's calls per caller
  auto since_t0 = [&] {
    int64_t sum = 0;
    for (size_t i = 0; i < callers.size(); ++i) {
      sum += callers[i]->done.load(std::memory_order_acquire) - done_at_t0[i];
    }
    return sum;
  };
  if (!shared.failed()) {
    // Each caller's first call counted after T0 may have started before it: n more calls make
    // sure enough started after T0.
    if (o.rule == StopRule::Iterations) {
      // Every caller's share (one more: its first call counted may have begun before T0).
      auto slowest = [&] {
        int64_t least = INT64_MAX;
        for (size_t i = 0; i < callers.size(); ++i) {
          least = std::min(least, callers[i]->done.load(std::memory_order_acquire) - done_at_t0[i]);
        }
        return least;
      };
      wait_for_calls(slowest, share + 1, rate / n, t0, 1e18);
    } else {
      shared.sleep(o.duration_s);
      wait_for_calls(since_t0, n + 1, rate, t0, 1e18);  // at least one call in the window
    }
  }
  shared.phase.store(kStop, std::memory_order_release);
  if (hooks.after_timed) hooks.after_timed();
  for (std::thread& t : threads) t.join();
  if (std::exception_ptr e = shared.error()) std::rethrow_exception(e);

  // ---- the window's numbers, from the recorded calls ------------------------------------------
  std::vector<Call> started;  // calls that started at or after T0
  Clock::time_point t1 = t0;
  for (const auto& c : callers) {
    int64_t k = 0;
    for (const Call& call : c->calls) {
      if (call.start < t0) continue;
      started.push_back(call);
      // Iterations: the window ends when the last caller completed its share (a caller's calls
      // are recorded in order).
      if (++k == share) t1 = std::max(t1, call.end);
    }
    if (o.rule == StopRule::Iterations && k < share) {
      throw Error(ErrorKind::Internal,
                  "concurrent loop: a caller recorded fewer calls than its share");
    }
  }
  std::sort(started.begin(), started.end(),
            [](const Call& a, const Call& b) { return a.end < b.end; });
  if (o.rule == StopRule::Iterations) {
    r.loop.stop_reason = fmt::format("{} iterations over {} requests in flight (at least {} each)",
                                     o.iterations, n, share);
  } else {
    if (started.empty()) throw Error(ErrorKind::Internal, "concurrent loop: no call in the window");
    t1 = std::max(t0 + std::chrono::duration_cast<Clock::duration>(Seconds(o.duration_s)),
                  started.front().end);
    r.loop.stop_reason = fmt::format("duration {} s with {} requests in flight", o.duration_s, n);
  }
  std::sort(started.begin(), started.end(),
            [](const Call& a, const Call& b) { return a.start < b.start; });
  for (const Call& call : started) {
    if (call.end <= t1) {
      r.loop.samples.add(std::chrono::duration<double, std::milli>(call.end - call.start).count());
    }
  }
  for (const auto& c : callers) {
    int64_t k = 0;
    for (const Call& call : c->calls) k += call.end > t0 && call.end <= t1 ? 1 : 0;
    r.completed_per_caller.push_back(k);
    r.completed += k;
  }
  int64_t warmup_calls = 0;
  for (int64_t d : done_at_t0) warmup_calls += d;
  r.loop.warmup_iterations = warmup_calls;
  r.loop.timed_s = seconds_between(t0, t1);
  r.calls_per_s = r.loop.timed_s > 0 ? static_cast<double>(r.completed) / r.loop.timed_s : 0;
  if (rss_ok) r.loop.peak_rss_run_bytes = peak_rss_bytes(pid);

  if (o.overhead_iterations > 0) {
    r.loop.overhead_median_ms = median_of(timed_calls(*sessions[0], o.overhead_iterations, true));
  }
  return r;
}

}  // namespace turnkey
