// The measurement driver on a real ONNX Runtime session: stop rules, warm-up accounting, the
// empty-call overhead loop, peak RSS, and the option checks users hit first. Then the concurrent
// driver (src/measure/concurrent_loop.cpp) on real sessions and on sessions made to show what it
// does: callers really run at once, the window's numbers add up, a failing caller stops everyone,
// and what it cannot run is refused. No timing claims (those are bench/concurrency's).
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/common/error.h"
#include "turnkey/machine/system_info.h"
#include "turnkey/measure/concurrent_loop.h"
#include "turnkey/measure/loop.h"
#include "turnkey/measure/statistics.h"
#include "turnkey/onnx/model_facts.h"
#include "turnkey/runtime/runtime.h"

// Under AddressSanitizer freed blocks wait in its quarantine (256 MiB) before the memory is
// reused: the process's RSS grows by what a loop frees, not by what it keeps.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/allocator_interface.h>
#define TURNKEY_TEST_ASAN 1
#endif
#endif

namespace turnkey {
namespace {

class MeasureLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto model = dir.path() / "linear.onnx";
    test::linear_relu(model);
    auto facts = onnx_model::load_facts(model);
    inputs = onnx_model::generate_inputs(facts, onnx_model::resolve_input_shapes(facts, {}));
    RuntimeOptions ro;
    ro.threads = 1;
    session = find_runtime("ort")->load(model, inputs, ro);
  }
  test::TempDir dir{"tk-loop"};
  std::vector<HostTensor> inputs;
  std::unique_ptr<Session> session;
};

TEST_F(MeasureLoop, FixedIterationsGiveExactlyThatManySamples) {
  LoopOptions o;
  o.iterations = 37;
  LoopResult r = run_loop(*session, o);
  EXPECT_EQ(r.samples.count(), 37);
  EXPECT_GT(r.cold_ms, 0);
  EXPECT_GE(r.warmup_iterations, 10);
  EXPECT_GE(r.warmup_rounds, 1);
  EXPECT_EQ(r.stop_reason, "37 iterations");
  for (double s : r.samples.kept()) EXPECT_GT(s, 0);
  // The empty call costs clock reads only: far below one inference.
  EXPECT_GT(r.overhead_median_ms, 0);
  EXPECT_LT(r.overhead_median_ms, r.samples.stats().median_ms);
  EXPECT_GT(r.peak_rss_run_bytes, 0);
}

TEST_F(MeasureLoop, NoWarmupMeansNone) {
  LoopOptions o;
  o.iterations = 5;
  o.warmup_iterations = 0;
  o.min_warmup_s = 0;
  LoopResult r = run_loop(*session, o);
  EXPECT_EQ(r.warmup_iterations, 0);
  EXPECT_EQ(r.warmup_rounds, 0);
}

TEST_F(MeasureLoop, DurationRunsAtLeastThatLong) {
  LoopOptions o;
  o.rule = StopRule::Duration;
  o.duration_s = 0.2;
  LoopResult r = run_loop(*session, o);
  EXPECT_GE(r.timed_s, 0.2);
  EXPECT_LT(r.timed_s, 2.0);
  EXPECT_GT(r.samples.count(), 10);
}

TEST_F(MeasureLoop, LongRunKeepsBoundedSamplesAndMemory) {
  // A µs model for 1.5 s makes far more calls than kExactSamples: the samples stay bounded and
  // the process's peak during the run stays within 1 MB of its memory before (the room for the
  // samples is reserved before the baseline, as the benchmark does).
  LoopRoom room;
  room.reserve();
  const int64_t before = current_rss_bytes(getpid());
  ASSERT_TRUE(reset_peak_rss(getpid()));
  LoopOptions o;
  o.rule = StopRule::Duration;
  o.duration_s = 1.5;
#ifdef TURNKEY_TEST_ASAN
  // The RSS holds ASan's quarantine: what a run keeps is the allocator's count of live bytes, and
  // it must not grow with the calls. A run of a tenth of the time is the yardstick (a run keeps
  // about 1 MiB whatever its length: ONNX Runtime's and the result's own buffers).
  const auto live = [] { return static_cast<int64_t>(__sanitizer_get_current_allocated_bytes()); };
  int64_t short_kept = 0, short_calls = 0;
  {
    LoopRoom short_room;
    short_room.reserve();
    LoopOptions short_o = o;
    short_o.duration_s = 0.15;
    const int64_t live0 = live();
    const LoopResult s = run_loop(*session, short_o, {}, &short_room);
    short_kept = live() - live0;
    short_calls = s.samples.count();
  }
  const int64_t live_before = live();
#endif
  LoopResult r = run_loop(*session, o, {}, &room);
  ASSERT_GT(r.samples.count(), 3 * kExactSamples) << "the model is slower than expected";
  EXPECT_FALSE(r.samples.exact());
  EXPECT_EQ(r.samples.kept().size(), static_cast<size_t>(kExactSamples));
  ASSERT_GT(before, 0);
#ifdef TURNKEY_TEST_ASAN
  const int64_t kept = live() - live_before;
  EXPECT_LT(kept - short_kept, int64_t{64} << 10)
      << short_calls << " calls kept " << short_kept << " bytes, " << r.samples.count()
      << " calls kept " << kept;
#else
  EXPECT_LT(r.peak_rss_run_bytes - before, int64_t{1} << 20)
      << r.samples.count() << " calls grew the process by " << r.peak_rss_run_bytes - before;
#endif
  const LatencyStats st = r.samples.stats();
  EXPECT_GT(st.median_ms, 0);
  EXPECT_LE(st.median_ms, st.p99_ms);
}

TEST_F(MeasureLoop, AdaptiveStopsAtTheTargetOrSaysWhichCapStoppedIt) {
  LoopOptions o;
  o.rule = StopRule::Adaptive;
  o.ci_target = 0.05;
  o.min_iterations = 15;
  o.max_iterations = 5000;
  o.max_duration_s = 5;
  LoopResult r = run_loop(*session, o);
  ASSERT_GE(r.samples.count(), 15);
  EXPECT_LE(r.samples.count(), 5000);
  LatencyStats st = r.samples.stats();
  const double half = (st.median_ci_high_ms - st.median_ci_low_ms) / 2 / st.median_ms;
  if (r.stop_reason.rfind("95% CI", 0) == 0) {
    EXPECT_LE(half, 0.05);
  } else {
    EXPECT_NE(r.stop_reason.find("max "), std::string::npos) << r.stop_reason;
  }
  // A cap of 15 iterations stops there, and says so unless the CI was already tight.
  o.max_iterations = 15;
  o.ci_target = 1e-9;
  r = run_loop(*session, o);
  EXPECT_EQ(r.samples.count(), 15);
  EXPECT_NE(r.stop_reason.find("max iterations 15"), std::string::npos) << r.stop_reason;
}

TEST_F(MeasureLoop, TimedCallsComeInBlocksWhoseMediansAreKept) {
  // The default: 100 calls in 5 blocks of 20, each block's median kept, all 100 pooled.
  LoopOptions o;
  LoopResult r = run_loop(*session, o);
  EXPECT_EQ(r.samples.count(), 100);
  ASSERT_EQ(r.block_medians_ms.size(), 5u);
  const std::vector<double> kept = r.samples.kept();  // in call order
  ASSERT_EQ(kept.size(), 100u);
  for (size_t b = 0; b < 5; ++b) {
    EXPECT_EQ(r.block_medians_ms[b],
              median_of(std::vector<double>(kept.begin() + 20 * b, kept.begin() + 20 * (b + 1))))
        << "block " << b;
  }
  EXPECT_EQ(r.stop_reason, "100 iterations");
  // Uneven counts: 37 calls in 3 blocks (13, 12, 12): no call lost.
  o.iterations = 37;
  r = run_loop(*session, o);
  EXPECT_EQ(r.samples.count(), 37);
  EXPECT_EQ(r.block_medians_ms.size(), 3u);
  // Too few calls for 10 a block: one block, the whole phase.
  o.iterations = 15;
  r = run_loop(*session, o);
  ASSERT_EQ(r.block_medians_ms.size(), 1u);
  EXPECT_EQ(r.block_medians_ms[0], r.samples.stats().median_ms);
  // --blocks 1: the timed phase as one.
  o.iterations = 100;
  o.blocks = 1;
  r = run_loop(*session, o);
  EXPECT_EQ(r.block_medians_ms.size(), 1u);
  // A duration: equal shares of it.
  o.blocks = 4;
  o.rule = StopRule::Duration;
  o.duration_s = 0.2;
  r = run_loop(*session, o);
  EXPECT_EQ(r.block_medians_ms.size(), 4u);
  EXPECT_GE(r.timed_s, 0.2);
  // Adaptive stops on the pooled CI: one block.
  o.rule = StopRule::Adaptive;
  o.max_duration_s = 2;
  r = run_loop(*session, o);
  EXPECT_EQ(r.block_medians_ms.size(), 1u);
}

TEST(LoopOptionsCheck, RejectsWhatCannotRun) {
  LoopOptions o;
  o.iterations = 0;
  EXPECT_THROW(validate_loop_options(o), Error);
  o = {};
  o.rule = StopRule::Duration;
  o.duration_s = -1;
  EXPECT_THROW(validate_loop_options(o), Error);
  o = {};
  o.rule = StopRule::Adaptive;
  o.min_iterations = 10;
  o.max_iterations = 5;
  EXPECT_THROW(validate_loop_options(o), Error);
  o = {};
  o.blocks = 0;
  EXPECT_THROW(validate_loop_options(o), Error);
  o = {};
  EXPECT_NO_THROW(validate_loop_options(o));
}

TEST(PeakRss, ResetThenGrowIsSeen) {
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
  // Under ThreadSanitizer (its own allocator and shadow memory) the high-water mark did not move
  // for the touched block; what this test checks is the kernel's count, not a race.
  GTEST_SKIP() << "the peak RSS does not follow a touched block under ThreadSanitizer";
#endif
#endif
  const pid_t self = getpid();
  ASSERT_TRUE(reset_peak_rss(self));
  const int64_t before = peak_rss_bytes(self);
  {
    // 64 MiB, touched, then unmapped: straight from the kernel, so that no allocator keeps it
    // (ASan's quarantine held a freed std::vector's block, and the high-water mark with it).
    const size_t size = 64 << 20;
    void* block = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(block, MAP_FAILED);
    std::memset(block, 1, size);
    ASSERT_EQ(static_cast<char*>(block)[12345], 1);
    munmap(block, size);
  }
  EXPECT_GE(peak_rss_bytes(self) - before, 60 << 20);
  ASSERT_TRUE(reset_peak_rss(self));
  EXPECT_LT(peak_rss_bytes(self), before + (32 << 20));  // the high-water mark restarted
}

TEST(CpuList, ParsesRangesAndRefusesUnavailableCpus) {
  const std::vector<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  EXPECT_EQ(parse_cpu_list(std::to_string(allowed[0])), std::vector<int>{allowed[0]});
  if (allowed.size() >= 2 && allowed[1] == allowed[0] + 1) {
    EXPECT_EQ(parse_cpu_list(std::to_string(allowed[0]) + "-" + std::to_string(allowed[1])),
              (std::vector<int>{allowed[0], allowed[1]}));
  }
  for (const char* bad : {"", "a", "1-", "3-1", "0,,1", "99999"}) {
    EXPECT_THROW(parse_cpu_list(bad), Error) << bad;
  }
  try {
    parse_cpu_list("4095");
    FAIL() << "CPU 4095 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not available"), std::string::npos) << e.what();
  }
}

// ---- machine busy: who competes for the benchmark's CPUs --------------------------------------

TEST(CompetingThreads, ReadsStateAndCpuPastACommandNameWithParentheses) {
  // Fields 3 (state) and 39 (processor) of a real line whose command name holds ") (".
  std::string line =
      "4242 (we) (ird) R 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 123 "
      "1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
  const std::optional<TaskState> t = parse_task_stat(4242, line);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->state, 'R');
  EXPECT_EQ(t->cpu, 1);
  EXPECT_EQ(t->pid, 4242);
  EXPECT_FALSE(parse_task_stat(1, "garbage").has_value());
  EXPECT_FALSE(parse_task_stat(1, "1 (short) R 1 2").has_value());
}

TEST(CompetingThreads, OnlyOtherProcessesRunnableOnOurCpusCount) {
  const std::vector<TaskState> tasks = {
      {100, 'R', 0},                 // ours (the benchmark): the measurement itself
      {100, 'R', 1}, {200, 'R', 0},  // the Python side holding the model: ours too
      {300, 'R', 0},                 // another process on our CPU: a competitor
      {301, 'S', 0},                 // asleep: no competitor
      {302, 'R', 1},                 // on a CPU we may not use
  };
  EXPECT_EQ(count_competing(tasks, {0}, {100, 200}), 1);
  EXPECT_EQ(count_competing(tasks, {0, 1}, {100, 200}), 2);
  EXPECT_EQ(count_competing(tasks, {}, {100}), 3);  // every CPU
  EXPECT_EQ(count_competing(tasks, {0}, {}), 3);
}

TEST(CompetingThreads, ABusyProcessOnOurCpuIsSeenAndOursIsNot) {
  const std::vector<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const int cpu = allowed.front();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
    for (;;) asm volatile("" ::: "memory");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // pinned and spinning
  // Always runnable on `cpu` (running, or waiting for it): seen in every read.
  EXPECT_GE(runnable_other_threads({cpu}, {getpid()}), 1.0);
  // Named as one of the benchmark's processes, it is the measurement, not a competitor: in one
  // reading of /proc, exactly its one thread less.
  const std::vector<TaskState> now = read_tasks();
  const int with = count_competing(now, {cpu}, {getpid()});
  const int without = count_competing(now, {cpu}, {getpid(), child});
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(with - without, 1);
}

// ---- requests in flight ------------------------------------------------------------------

TEST_F(MeasureLoop, ConcurrentCallersOfASharedOrtSessionAndTheWindowAddsUp) {
  ASSERT_TRUE(find_runtime("ort")->concurrency().shared_session);
  std::unique_ptr<Session> other = session->caller();
  ASSERT_NE(other, nullptr);
  LoopOptions o;
  o.iterations = 200;
  ConcurrentResult r = run_concurrent_loop({session.get(), other.get()}, o);
  EXPECT_EQ(r.callers, 2);
  // The window holds every caller's share (100 calls each begun and ended in it); the first to
  // finish its share goes on until the last does.
  EXPECT_GE(r.loop.samples.count(), 200);
  EXPECT_GE(r.completed, 200);
  ASSERT_EQ(r.completed_per_caller.size(), 2u);
  EXPECT_EQ(r.completed_per_caller[0] + r.completed_per_caller[1], r.completed);
  EXPECT_GE(r.completed_per_caller[0], 100);
  EXPECT_GE(r.completed_per_caller[1], 100);
  EXPECT_GT(r.loop.timed_s, 0);
  // The calls' work in the window, parts of calls counted: within a call per caller of the
  // calls that ended in it (callers that did not overlap, on a busy machine, included).
  EXPECT_NEAR(r.calls_per_s * r.loop.timed_s, static_cast<double>(r.completed), 2.0);
  EXPECT_GT(r.loop.cold_ms, 0);
  EXPECT_GE(r.loop.warmup_rounds, 1);
  EXPECT_GT(r.loop.overhead_median_ms, 0);
  EXPECT_EQ(r.loop.stop_reason, "200 iterations over 2 requests in flight (at least 100 each)");
  for (double s : r.loop.samples.kept()) EXPECT_GT(s, 0);
  // Each caller's outputs are its own and the model's: the same numbers from both.
  const std::vector<HostTensor> a = session->outputs(), b = other->outputs();
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].shape, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(a[0].data, b[0].data);
}

TEST_F(MeasureLoop, ConcurrentDurationWindowIsAtLeastTheDuration) {
  std::unique_ptr<Session> other = session->caller();
  LoopOptions o;
  o.rule = StopRule::Duration;
  o.duration_s = 0.2;
  o.warmup_iterations = 0;
  o.min_warmup_s = 0;
  ConcurrentResult r = run_concurrent_loop({session.get(), other.get()}, o);
  EXPECT_GE(r.loop.timed_s, 0.2);
  EXPECT_EQ(r.loop.warmup_rounds, 0);
  EXPECT_GT(r.completed, 0);
  EXPECT_GT(r.loop.samples.count(), 0);
  EXPECT_EQ(r.loop.stop_reason, "duration 0.2 s with 2 requests in flight");
}

// A call that takes a fixed time and no CPU.
class SleepingSession final : public Session {
 public:
  explicit SleepingSession(std::chrono::microseconds call) : call_(call) {}
  void run() override { std::this_thread::sleep_for(call_); }

 private:
  std::chrono::microseconds call_;
};

TEST(ConcurrentDriver, SustainedThroughputLosesNoPartDoneCallAtTheWindowsEnd) {
  // 100 ms calls, a 0.59 s window: each caller runs 5.9 calls' worth of it. The window opens as
  // the last caller begins a call, whose 6th call is part-done when it closes: counting the
  // calls that ended in the window over its length read 10 or 11 calls in 0.59 s (17-19/s), 7-15%
  // below the 2 callers' 20/s.
  SleepingSession a(std::chrono::milliseconds(100)), b(std::chrono::milliseconds(100));
  LoopOptions o;
  o.rule = StopRule::Duration;
  o.duration_s = 0.59;
  o.warmup_iterations = 1;
  o.overhead_iterations = 10;
  ConcurrentResult r = run_concurrent_loop({&a, &b}, o);
  const std::vector<double>& ms = r.loop.samples.kept();
  ASSERT_FALSE(ms.empty());
  double sum_ms = 0;
  for (double v : ms) sum_ms += v;
  const double each_per_s = 1000.0 / (sum_ms / static_cast<double>(ms.size()));
  EXPECT_NEAR(r.calls_per_s, 2 * each_per_s, 0.03 * 2 * each_per_s);
}

// A session that counts how many of its kind are inside run() at once.
class OverlapSession final : public Session {
 public:
  OverlapSession(std::atomic<int>& inside, std::atomic<int>& most) : inside_(inside), most_(most) {}
  void run() override {
    const int now = ++inside_;
    int seen = most_.load();
    while (now > seen && !most_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    --inside_;
  }

 private:
  std::atomic<int>& inside_;
  std::atomic<int>& most_;
};

TEST(ConcurrentDriver, CallersAreInsideRunAtTheSameTime) {
  std::atomic<int> inside{0}, most{0};
  OverlapSession a(inside, most), b(inside, most), c(inside, most);
  LoopOptions o;
  o.iterations = 60;
  o.warmup_iterations = 3;
  o.overhead_iterations = 10;
  ConcurrentResult r = run_concurrent_loop({&a, &b, &c}, o);
  EXPECT_EQ(r.callers, 3);
  EXPECT_EQ(most.load(), 3);  // a sleeping call needs no CPU: all three overlap
  EXPECT_GE(r.loop.samples.count(), 60);
}

class FailingSession final : public Session {
 public:
  explicit FailingSession(int calls_before_failing) : left_(calls_before_failing) {}
  void run() override {
    if (left_-- <= 0) throw Error(ErrorKind::Runtime, "the runtime gave up");
  }

 private:
  int left_;
};

TEST(ConcurrentDriver, AFailingCallerStopsEveryoneAndItsErrorComesBack) {
  FailingSession ok(1 << 30), failing(50);
  LoopOptions o;
  o.rule = StopRule::Duration;
  o.duration_s = 30;  // the failure ends it long before
  try {
    run_concurrent_loop({&ok, &failing}, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_STREQ(e.what(), "the runtime gave up");
  }
}

class SelfTimingSession final : public Session {
 public:
  void run() override {}
  bool times_itself() const override { return true; }
};

TEST(ConcurrentDriver, RefusesWhatItCannotRun) {
  FailingSession a(1000), b(1000);
  LoopOptions adaptive;
  adaptive.rule = StopRule::Adaptive;
  EXPECT_THROW(run_concurrent_loop({&a, &b}, adaptive), Error);
  EXPECT_THROW(run_concurrent_loop({&a}, LoopOptions{}), Error);
  SelfTimingSession s1, s2;
  try {
    run_concurrent_loop({&s1, &s2}, LoopOptions{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
  }
}

TEST(ConcurrencySupport, EachBuiltInRuntimeSaysWhatItCanDo) {
  EXPECT_TRUE(find_runtime("ort")->concurrency().shared_session);
  EXPECT_TRUE(find_runtime("ort")->concurrency().session_per_request);
  EXPECT_TRUE(find_runtime("torchscript")->concurrency().shared_session);
  EXPECT_FALSE(find_runtime("torchscript")->concurrency().session_per_request);
  for (const char* name : {"torch-eager", "torch-compiled"}) {
    const ConcurrencySupport c = find_runtime(name)->concurrency();
    EXPECT_FALSE(c.any()) << name;
    EXPECT_NE(c.refusal.find("one loop of the script's Python process"), std::string::npos)
        << c.refusal;
  }
}

}  // namespace
}  // namespace turnkey
