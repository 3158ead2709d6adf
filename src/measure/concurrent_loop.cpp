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
      session.release_outputs();
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

namespace {

// The coordinator of one concurrent run: starts the callers at a barrier, watches the warm-up's
// throughput until it is steady, opens the timed window once every caller records, closes it,
// and computes the window's numbers from the recorded calls. It only waits and reads counters
// while callers run; every path out stops and joins them. One per run; its own thread only.
class Coordinator {
 public:
  Coordinator(const std::vector<Session*>& sessions, const LoopOptions& o, const LoopHooks& hooks)
      : sessions_(sessions),
        o_(o),
        hooks_(hooks),
        n_(static_cast<int>(sessions.size())),
        start_(n_ + 1),
        share_((o.iterations + n_ - 1) / n_) {}
  ~Coordinator() {
    shared_.phase.store(kStop, std::memory_order_release);
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  ConcurrentResult run() {
    const pid_t pid = sessions_[0]->process_id();
    const bool rss_ok = reset_peak_rss(pid);
    r_.callers = n_;
    r_.loop.cold_ms = timed_calls(*sessions_[0], 1).front();
    start_callers();
    double rate = warm_up();
    if (!(rate > 0)) rate = n_ * 1000.0 / std::max(r_.loop.cold_ms, 1e-6);
    timed_window(rate);
    window_numbers();
    if (rss_ok) r_.loop.peak_rss_run_bytes = peak_rss_bytes(pid);
    if (o_.overhead_iterations > 0) {
      r_.loop.overhead_median_ms = median_of(timed_calls(*sessions_[0], o_.overhead_iterations, true));
    }
    return std::move(r_);
  }

 private:
  int64_t total() const {
    int64_t sum = 0;
    for (const auto& c : callers_) sum += c->done.load(std::memory_order_acquire);
    return sum;
  }
  int64_t recording() const {
    int64_t k = 0;
    for (const auto& c : callers_) k += c->recording.load(std::memory_order_acquire) ? 1 : 0;
    return k;
  }
  int64_t since_t0() const {
    int64_t sum = 0;
    for (size_t i = 0; i < callers_.size(); ++i) {
      sum += callers_[i]->done.load(std::memory_order_acquire) - done_at_t0_[i];
    }
    return sum;
  }
  int64_t slowest_since_t0() const {
    int64_t least = INT64_MAX;
    for (size_t i = 0; i < callers_.size(); ++i) {
      least = std::min(least, callers_[i]->done.load(std::memory_order_acquire) - done_at_t0_[i]);
    }
    return least;
  }

  // Sleeps until `count()` reaches `need` (or `deadline_s` seconds after `since` pass): sleeps
  // of the expected time at `rate` calls/s, at least 1 ms. False when a caller failed.
  template <class Count>
  bool wait_for_calls(Count count, int64_t need, double rate, Clock::time_point since,
                      double deadline_s) {
    for (;;) {
      const int64_t got = count();
      if (got >= need || seconds_between(since, Clock::now()) >= deadline_s) return true;
      const double expected = rate > 0 ? static_cast<double>(need - got) / rate : 0.01;
      if (!shared_.sleep(std::clamp(expected, 0.001, 0.25))) return false;
    }
  }

  void start_callers() {
    for (Session* s : sessions_) {
      callers_.push_back(std::make_unique<Caller>());
      callers_.back()->session = s;
    }
    try {
      for (auto& c : callers_) {
        threads_.emplace_back(caller_body, std::ref(*c), std::ref(shared_), std::ref(start_));
      }
    } catch (const std::system_error& e) {
      // The threads that started wait at the barrier: arrive for the missing ones (and for the
      // coordinator) so that they see the stop and end.
      shared_.phase.store(kStop, std::memory_order_release);
      (void)start_.arrive(static_cast<std::ptrdiff_t>(n_ + 1 - threads_.size()));
      throw Error(ErrorKind::Runtime,
                  fmt::format("could not start {} caller threads: {}", n_, e.what()));
    }
    start_.arrive_and_wait();
  }

  // Rounds until the throughput is steady; returns the last round's rate (calls/s, all callers).
  double warm_up() {
    const auto warm_start = Clock::now();
    double rate = 0;
    if (o_.warmup_iterations <= 0) return rate;
    const double round_s = std::max(o_.min_warmup_s / 2, 0.025);
    double previous = -1;
    int64_t before = 0;
    auto round_start = warm_start;
    for (;;) {
      if (!shared_.sleep(round_s)) break;
      const int64_t need = before + std::max<int64_t>(o_.warmup_iterations, n_);
      if (!wait_for_calls([&] { return total(); }, need, rate, warm_start, o_.max_warmup_s)) break;
      const auto now = Clock::now();
      const int64_t calls = total();
      const double round_rate =
          static_cast<double>(calls - before) / std::max(seconds_between(round_start, now), 1e-9);
      ++r_.loop.warmup_rounds;
      before = calls;
      round_start = now;
      rate = round_rate;
      const double elapsed = seconds_between(warm_start, now);
      const bool enough = calls >= o_.warmup_iterations && elapsed >= o_.min_warmup_s;
      const bool steady =
          previous > 0 && std::abs(round_rate - previous) <= o_.steady_tolerance * previous;
      previous = round_rate;
      if (enough && steady) break;
      if (r_.loop.warmup_rounds >= o_.max_warmup_rounds || elapsed >= o_.max_warmup_s ||
          calls >= o_.max_warmup_iterations) {
        r_.loop.warmup_steady = false;
        break;
      }
    }
    return rate;
  }

  // Opens the window at T0, once every caller records (every call that ends after T0 is then
  // recorded), and closes it when the rule is met; the hooks bracket the window alone.
  void timed_window(double rate) {
    const double per_caller_rate = rate / n_;
    const double expected_per_caller = o_.rule == StopRule::Iterations
                                           ? static_cast<double>(o_.iterations) / n_
                                           : std::min(per_caller_rate * o_.duration_s, 1e8);
    shared_.reserve_per_caller = static_cast<int64_t>(expected_per_caller * 1.25) + 1024;
    if (o_.rule == StopRule::Iterations) {
      shared_.reserve_per_caller = std::min(shared_.reserve_per_caller, o_.iterations + 16);
    }
    shared_.phase.store(kTimed, std::memory_order_release);
    wait_for_calls([&] { return recording(); }, n_, 0, Clock::now(), 1e9);
    t0_ = Clock::now();
    if (hooks_.before_timed) hooks_.before_timed();
    for (const auto& c : callers_) done_at_t0_.push_back(c->done.load(std::memory_order_acquire));
    if (!shared_.failed()) {
      // Each caller's first call counted after T0 may have started before it: one more call per
      // caller (Iterations) or n more calls (Duration) make sure enough started after T0.
      if (o_.rule == StopRule::Iterations) {
        wait_for_calls([&] { return slowest_since_t0(); }, share_ + 1, rate / n_, t0_, 1e18);
      } else {
        shared_.sleep(o_.duration_s);
        wait_for_calls([&] { return since_t0(); }, n_ + 1, rate, t0_, 1e18);
      }
    }
    shared_.phase.store(kStop, std::memory_order_release);
    if (hooks_.after_timed) hooks_.after_timed();
    for (std::thread& t : threads_) t.join();
    if (std::exception_ptr e = shared_.error()) std::rethrow_exception(e);
  }

  // The window's end, and its samples and counts from the calls that started at or after T0.
  void window_numbers() {
    std::vector<Call> started;
    Clock::time_point t1 = t0_;
    for (const auto& c : callers_) {
      int64_t k = 0;
      for (const Call& call : c->calls) {
        if (call.start < t0_) continue;
        started.push_back(call);
        // Iterations: the window ends when the last caller completed its share (a caller's
        // calls are recorded in order).
        if (++k == share_) t1 = std::max(t1, call.end);
      }
      if (o_.rule == StopRule::Iterations && k < share_) {
        throw Error(ErrorKind::Internal,
                    "concurrent loop: a caller recorded fewer calls than its share");
      }
    }
    std::sort(started.begin(), started.end(),
              [](const Call& a, const Call& b) { return a.end < b.end; });
    if (o_.rule == StopRule::Iterations) {
      r_.loop.stop_reason = fmt::format(
          "{} iterations over {} requests in flight (at least {} each)", o_.iterations, n_, share_);
    } else {
      if (started.empty()) throw Error(ErrorKind::Internal, "concurrent loop: no call in the window");
      t1 = std::max(t0_ + std::chrono::duration_cast<Clock::duration>(Seconds(o_.duration_s)),
                    started.front().end);
      r_.loop.stop_reason =
          fmt::format("duration {} s with {} requests in flight", o_.duration_s, n_);
    }
    std::sort(started.begin(), started.end(),
              [](const Call& a, const Call& b) { return a.start < b.start; });
    for (const Call& call : started) {
      if (call.end <= t1) {
        r_.loop.samples.add(std::chrono::duration<double, std::milli>(call.end - call.start).count());
      }
    }
    for (const auto& c : callers_) {
      int64_t k = 0;
      for (const Call& call : c->calls) k += call.end > t0_ && call.end <= t1 ? 1 : 0;
      r_.completed_per_caller.push_back(k);
      r_.completed += k;
    }
    int64_t warmup_calls = 0;
    for (int64_t d : done_at_t0_) warmup_calls += d;
    r_.loop.warmup_iterations = warmup_calls;
    r_.loop.timed_s = seconds_between(t0_, t1);
    r_.calls_per_s = sustained_rate(t1);
  }

  // The calls' work done in the window over its length: each call counts the part of it that
  // lies in [T0, T1] (a call wholly inside counts 1). A count of the calls that end in (T0, T1]
  // is biased low: T0 opens as the last caller begins a call, so that caller's part-done call at
  // T1 was lost, up to one call in n x window / latency (bench/peers read turnkey 3.3% below a
  // bare ORT loop on a 130 ms model at 5 s). Every call that overlaps the window is recorded:
  // callers record from before T0 and finish the call they are in after T1.
  double sustained_rate(Clock::time_point t1) const {
    const double window_s = seconds_between(t0_, t1);
    if (window_s <= 0) return 0;
    double calls = 0;
    for (const auto& c : callers_) {
      for (const Call& call : c->calls) {
        const Clock::time_point from = std::max(call.start, t0_), to = std::min(call.end, t1);
        if (to < from || (to == from && call.end > call.start)) continue;
        const double whole_s = seconds_between(call.start, call.end);
        calls += whole_s > 0 ? seconds_between(from, to) / whole_s : 1.0;
      }
    }
    return calls / window_s;
  }

  const std::vector<Session*>& sessions_;
  const LoopOptions& o_;
  const LoopHooks& hooks_;
  const int n_;
  Shared shared_;
  std::barrier<> start_;
  const int64_t share_;  // the Iterations rule's calls per caller
  std::vector<std::unique_ptr<Caller>> callers_;
  std::vector<std::thread> threads_;
  ConcurrentResult r_;
  Clock::time_point t0_;
  std::vector<int64_t> done_at_t0_;
};

}  // namespace

ConcurrentResult run_concurrent_loop(const std::vector<Session*>& sessions, const LoopOptions& o,
                                     const LoopHooks& hooks) {
  validate_concurrent_options(o, static_cast<int>(sessions.size()));
  for (Session* s : sessions) {
    if (!s) throw Error(ErrorKind::Internal, "concurrent loop: a caller has no session");
    if (s->times_itself()) {
      throw Error(ErrorKind::Internal,
                  "concurrent loop: a session that times itself cannot be driven by threads");
    }
  }
  return Coordinator(sessions, o, hooks).run();
}

}  // namespace turnkey
