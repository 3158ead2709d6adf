// The benchmark's measurement (docs/measurement.md): `--repetitions` sessions, each loaded with
// the holding process's memory read around the load, timed by the one loop with the cgroup
// throttling counters right before and after its timed phase, and bracketed by the machine-speed
// probe while the runtime is at rest: after the load, before the session's first call, and once
// the session is released. (Right after a call, ONNX Runtime's idle workers spin for tens of ms
// and the probe would measure them, not the machine.) Then the trust flags that say why a number
// may not hold.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <thread>

#include "benchmark/benchmark.h"
#include "turnkey/catalog/status.h"
#include "turnkey/common/error.h"
#include "turnkey/machine/speed_probe.h"

namespace turnkey::engine_internal {

namespace {

// The longest the probe waits for a runtime's spinning workers to go idle (ONNX Runtime's spin
// for tens of ms); past it, the probe runs anyway and may read slow.
constexpr double kQuietWaitMs = 200;

// Between repetitions: long enough that a passing burst of load (another process's compile, a
// cron job) is unlikely to cover two of them, short enough for a few repetitions to stay cheap.
constexpr double kRepetitionGapS = 1.0;

// The harness overhead is flagged only above this fraction of the median (docs/measurement.md,
// "Environment and trust flags").
constexpr double kOverheadFlagFraction = 0.10;

ThrottleCounters minus(const ThrottleCounters& after, const ThrottleCounters& before) {
  ThrottleCounters d;
  d.readable = after.readable && before.readable;
  if (!d.readable) return d;
  d.periods = std::max<int64_t>(0, after.periods - before.periods);
  d.throttled = std::max<int64_t>(0, after.throttled - before.throttled);
  d.throttled_ms = std::max(0.0, after.throttled_ms - before.throttled_ms);
  return d;
}

std::unique_ptr<Session> load_session(Build& build, const BenchmarkSetup& setup, bool live) {
  try {
    if (live) {
      LiveModel lm{build.session, build.model->id, build.dir->path(), build.build_name};
      return setup.runtime->load_live(lm, {}, setup.ro);
    }
    return setup.runtime->load(build.onnx_path, build.inputs, setup.ro);
  } catch (const Error& e) {
    throw StatusError(Status::RuntimeLoadFailed, e);
  }
}

}  // namespace

std::vector<HostTensor> outputs_of_one_more_call(Build& build, const BenchmarkSetup& setup,
                                                 bool live) {
  std::unique_ptr<Session> session = load_session(build, setup, live);
  session->run();
  return session->outputs();
}

namespace {

// What every repetition of one measurement shares.
struct RepetitionPlan {
  Build& build;
  const BenchmarkSetup& setup;
  bool live;
  pid_t holder;                   // the process holding the model
  std::vector<pid_t> quiet_pids;  // waited idle before each speed probe
  int probe_threads;
};

// One repetition: a fresh session (its load bracketed by the holder's memory), the speed probe
// before and after its timed phase, and the timed loop itself (one request or requests in
// flight). The last repetition keeps the outputs and the session's own stats in `m`.
Repetition run_repetition(const RepetitionPlan& plan, bool last, LoopRoom& room, Measurement& m) {
  const BenchmarkSetup& setup = plan.setup;
  Repetition rep;
  room.reserve();
  // Memory: the high-water mark restarts at the current RSS; what loading adds above the RSS
  // just before is the model's (plus the runtime's per-session state), not the process's.
  const bool rss_ok = reset_peak_rss(plan.holder);
  const int64_t before = current_rss_bytes(plan.holder);
  // The runtime's one-time start (initialize, in measure; torchscript's LibTorch module, loaded
  // by its probe) is not in load_s: the model's load alone.
  plan.build.step = "loading the model into " + setup.runtime_name;
  const auto load_start = std::chrono::steady_clock::now();
  std::unique_ptr<Session> session = load_session(plan.build, setup, plan.live);
  rep.load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  const int64_t load_peak = rss_ok ? peak_rss_bytes(plan.holder) : 0;
  rep.probe_waited_out = wait_for_quiet_threads(plan.quiet_pids, kQuietWaitMs) >= kQuietWaitMs;
  rep.probe_before_ms = run_speed_probe(plan.probe_threads);
  ThrottleCounters throttle_start;
  LoopHooks hooks;
  hooks.before_timed = [&] { throttle_start = read_throttle_counters(); };
  hooks.after_timed = [&] { rep.throttled = minus(read_throttle_counters(), throttle_start); };
  plan.build.step = "running the model on " + setup.runtime_name;
  if (setup.concurrency > 1) {
    // Requests in flight (benchmark_requests.cpp); the single request below stays run_loop.
    rep.requests = run_requests(
        *session, setup, [&] { return load_session(plan.build, setup, plan.live); }, hooks);
    rep.loop = std::move(rep.requests.run.loop);  // the samples, kept once
  }
  try {
    if (setup.concurrency == 1) rep.loop = run_loop(*session, setup.loop, hooks, &room);
    if (last) {
      plan.build.step = "reading " + setup.runtime_name + "'s outputs";
      m.outputs = session->outputs();
      m.session_stats = session->stats();
    }
  } catch (const Error& e) {
    throw StatusError(Status::RuntimeRunFailed, e);
  }
  session.reset();  // the next repetition loads from the same baseline
  if (wait_for_quiet_threads(plan.quiet_pids, kQuietWaitMs) >= kQuietWaitMs) {
    rep.probe_waited_out = true;
  }
  rep.probe_after_ms = run_speed_probe(plan.probe_threads);
  rep.loop.rss_before_load_bytes = before;
  rep.loop.peak_rss_load_bytes = load_peak;
  rep.stats = rep.loop.samples.stats();
  if (before > 0) {
    m.model_memory_load_bytes = std::max(m.model_memory_load_bytes, load_peak - before);
    m.model_memory_run_bytes =
        std::max(m.model_memory_run_bytes, rep.loop.peak_rss_run_bytes - before);
  }
  m.throttled.readable = m.throttled.readable || rep.throttled.readable;
  m.throttled.periods += rep.throttled.periods;
  m.throttled.throttled += rep.throttled.throttled;
  m.throttled.throttled_ms += rep.throttled.throttled_ms;
  return rep;
}

// The interval for the next run's median from this run alone (docs/measurement.md "The
// interval"): the prediction interval from the block medians (with four or more, the one farthest
// from their median left out of the spread), widened to hold the pooled median's 95% CI and, with
// repetitions, each repetition's CI. It is also the within-run interval the noisy flag reads;
// add_earlier_runs() joins the earlier runs' part.
void set_interval(Measurement& m) {
  for (const Repetition& rep : m.repetitions) {
    // Requests in flight time no blocks: their whole window is one.
    if (rep.loop.block_medians_ms.empty()) m.block_medians_ms.push_back(rep.stats.median_ms);
    m.block_medians_ms.insert(m.block_medians_ms.end(), rep.loop.block_medians_ms.begin(),
                              rep.loop.block_medians_ms.end());
  }
  const MedianInterval next = next_run_interval(m.block_medians_ms, m.stats.median_ms);
  m.interval_low_ms = std::min(next.low_ms, m.stats.median_ci_low_ms);
  m.interval_high_ms = std::max(next.high_ms, m.stats.median_ci_high_ms);
  for (const Repetition& rep : m.repetitions) {
    m.interval_low_ms = std::min(m.interval_low_ms, rep.stats.median_ci_low_ms);
    m.interval_high_ms = std::max(m.interval_high_ms, rep.stats.median_ci_high_ms);
  }
  m.within_low_ms = m.interval_low_ms;
  m.within_high_ms = m.interval_high_ms;
  const size_t k = m.block_medians_ms.size();
  const std::string sessions =
      m.repetitions.size() > 1
          ? fmt::format(" and each of the {} repetitions' CIs", m.repetitions.size())
          : "";
  const std::string spread =
      k > 3 ? fmt::format(
                  "c x sd of the {} block medians nearest their median (of {}; c = {:.3f} "
                  "for 95% coverage of the next run's median)",
                  k - 1, k, next_run_factor(static_cast<int>(k)))
            : fmt::format("t(0.975, {}) x sd of {} block medians x sqrt(2/{})", k - 1, k, k);
  m.interval_method =
      k > 1 ? fmt::format("median +- {}, widened to hold the median's 95% CI{}", spread, sessions)
            : fmt::format("the median's 95% CI (order statistics){}", sessions);
}

// Pooled: every repetition's samples; the first repetition's cold call, warm-up and load. The
// interval covers both kinds of spread: every repetition's own 95% CI of its median, and so the
// range of the repetitions' medians (docs/measurement.md states the estimator).
void pool_repetitions(Measurement& m, const BenchmarkSetup& setup, SampleStore pooled) {
  m.load_s = m.repetitions.front().load_s;
  m.concurrency = setup.concurrency;
  m.sessions = m.repetitions.front().requests.sessions;
  if (setup.concurrency > 1) {
    // Sustained over all repetitions: their calls' work over their windows' time.
    double calls = 0, window_s = 0;
    for (const Repetition& rep : m.repetitions) {
      calls += rep.requests.run.calls_per_s * rep.loop.timed_s;
      window_s += rep.loop.timed_s;
    }
    m.calls_per_s = window_s > 0 ? calls / window_s : 0;
  }
  m.loop = m.repetitions.front().loop;
  m.loop.samples = std::move(pooled);
  m.loop.timed_s = 0;
  std::vector<double> overheads;
  for (const Repetition& rep : m.repetitions) {
    m.loop.timed_s += rep.loop.timed_s;
    m.loop.warmup_steady = m.loop.warmup_steady && rep.loop.warmup_steady;
    m.loop.peak_rss_load_bytes = std::max(m.loop.peak_rss_load_bytes, rep.loop.peak_rss_load_bytes);
    m.loop.peak_rss_run_bytes = std::max(m.loop.peak_rss_run_bytes, rep.loop.peak_rss_run_bytes);
    overheads.push_back(rep.loop.overhead_median_ms);
  }
  if (m.repetitions.size() > 1) {
    m.loop.stop_reason = fmt::format("{} repetitions of {}", m.repetitions.size(),
                                     m.repetitions.front().loop.stop_reason);
  }
  m.loop.overhead_median_ms = median_of(overheads);
  m.stats = m.loop.samples.stats();
  set_interval(m);
}

// The machine's speed: this run's slowest probe against the fastest this machine has shown for
// the same threads and CPUs (this run's fastest included).
void judge_machine_speed(Measurement& m, const BenchmarkSetup& setup, int probe_threads) {
  const std::vector<double> probes = speed_probes_of(m);
  const double fastest = *std::min_element(probes.begin(), probes.end());
  const double slowest = *std::max_element(probes.begin(), probes.end());
  const std::string pinned = fmt::format("{}", fmt::join(setup.ro.cpus, ","));
  const double remembered = remember_speed_probe(
      speed_probe_key(m.env.cpu_model, m.env.logical_cpus, probe_threads, pinned, 0), fastest);
  m.probe_best_ms = remembered > 0 ? std::min(remembered, fastest) : fastest;
  m.probe_slowdown = m.probe_best_ms > 0 ? slowest / m.probe_best_ms - 1 : 0;
  double sustained = 0;
  for (const Repetition& rep : m.repetitions) {
    sustained = std::max(sustained, std::min(rep.probe_before_ms, rep.probe_after_ms));
  }
  m.probe_sustained_slowdown = m.probe_best_ms > 0 ? sustained / m.probe_best_ms - 1 : 0;
}

}  // namespace

void add_earlier_runs(Measurement& m, std::vector<double> earlier) {
  m.earlier_medians_ms = std::move(earlier);
  std::vector<double> runs = m.earlier_medians_ms;
  runs.push_back(m.stats.median_ms);
  const size_t k = runs.size();
  m.interval_runs = static_cast<int64_t>(k);
  if (k < 2) {
    m.interval_method +=
        "; it holds what varies within this run only: this is the first run of this result on "
        "this host, and one run cannot measure what varies between runs (rerun to widen it)";
    return;
  }
  // One more run's median, predicted from k run medians: the spread between processes and
  // sessions that the blocks of one run do not see (the host's other tenants, for one).
  const MedianInterval between = between_runs_interval(runs);
  m.interval_low_ms = std::min(m.within_low_ms, between.low_ms);
  m.interval_high_ms = std::max(m.within_high_ms, between.high_ms);
  m.interval_method += fmt::format(
      "; and the medians of this and {} earlier run{} of this result on this host: mean +- "
      "t(0.975, {}) x sd x sqrt(1+1/{}), widened to hold each of them (the union of the two)",
      k - 1, k == 2 ? "" : "s", k - 1, k);
}

Measurement measure(Build& build, const BenchmarkSetup& setup, bool live) {
  Measurement m;
  m.live = live;
  // The process holding the model: this one for in-process runtimes, the script's Python process
  // for torch-eager and torch-compiled (torchscript runs here, on what the Python side traced).
  const pid_t holder =
      live && setup.runtime_name != "torchscript" ? build.session->python_pid() : getpid();
  m.env = start_fingerprint(
      setup.threads, setup.ro.cpus,
      holder == getpid() ? std::vector<pid_t>{holder} : std::vector<pid_t>{getpid(), holder});
  m.budget = m.env.budget;
  ScopedPin pin(setup.ro.cpus);
  try {
    setup.runtime->initialize();
  } catch (const Error& e) {
    throw StatusError(Status::RuntimeLoadFailed, e);
  }
  // The probe waits until the threads of this process and of the model's holder are idle (a
  // runtime's workers spin after a session's creation and after calls), then runs as many
  // threads as the measurement keeps busy (all requests in flight), at most one per usable CPU.
  const RepetitionPlan plan{
      build,
      setup,
      live,
      holder,
      holder == getpid() ? std::vector<pid_t>{holder} : std::vector<pid_t>{getpid(), holder},
      std::clamp(setup.threads * std::max(1, setup.concurrency), 1,
                 std::max(1, static_cast<int>(m.budget.cpus.size())))};
  // The harness's sample storage (samples.h: the same size for any run length) is reserved
  // before each repetition's memory baseline, so it is never counted as the model's.
  SampleStore pooled;
  pooled.reserve();
  LoopRoom room;
  for (int r = 0; r < setup.repetitions; ++r) {
    if (r > 0) std::this_thread::sleep_for(std::chrono::duration<double>(kRepetitionGapS));
    Repetition rep = run_repetition(plan, r + 1 == setup.repetitions, room, m);
    pooled.merge(rep.loop.samples);
    rep.loop.samples = SampleStore();  // pooled now; one store's room per repetition at most
    m.repetitions.push_back(std::move(rep));
  }
  finish_fingerprint(m.env);
  pool_repetitions(m, setup, std::move(pooled));
  judge_machine_speed(m, setup, plan.probe_threads);
  return m;
}

std::vector<double> speed_probes_of(const Measurement& m) {
  std::vector<double> probes;
  for (const Repetition& r : m.repetitions) {
    probes.push_back(r.probe_before_ms);
    probes.push_back(r.probe_after_ms);
  }
  return probes;
}

// The half-width, in % of the median, past which a run's own interval is flagged. Calibrated on
// this machine (docs/measurement.md, "Calibration"): quiet runs whose median agreed with the same
// model's other runs reached +-3.6% (1.6-34 us models, 0.5 s runs); runs whose blocks were
// disturbed were +-5.1% to +-113%. (It was 3%: 2 of 20 undisturbed runs were flagged.)
constexpr double kNoisyHalfWidthPct = 5.0;

// Read on the within-run interval: the earlier runs' spread is the host's, not this run's noise
// (a quiet run after a slow one is no noisier for it), and the flag's threshold was calibrated on
// this run's blocks alone.
std::optional<Flag> noisy_flag(const Measurement& m) {
  const LatencyStats& st = m.stats;
  const double half_pct =
      st.median_ms > 0 ? (m.within_high_ms - m.within_low_ms) / 2 / st.median_ms * 100 : 0;
  if (half_pct <= kNoisyHalfWidthPct) return std::nullopt;
  if (m.block_medians_ms.size() <= 1 && m.repetitions.size() <= 1) {
    return Flag{FlagCode::Noisy, fmt::format("noisy: the median's 95% CI is +-{:.1f}% (> +-{}%)",
                                             half_pct, kNoisyHalfWidthPct)};
  }
  const std::string reps =
      m.repetitions.size() > 1 ? fmt::format(" of {} repetitions", m.repetitions.size()) : "";
  return Flag{FlagCode::Noisy,
              fmt::format("noisy: this run's interval for the next run's median ({} blocks{}) is "
                          "+-{:.1f}% (> +-{}%)",
                          m.block_medians_ms.size(), reps, half_pct, kNoisyHalfWidthPct)};
}

std::vector<Flag> trust_flags(const Measurement& m) {
  std::vector<Flag> flags = m.env.warnings;
  if (m.concurrency > 1) {
    for (const Repetition& rep : m.repetitions) {
      for (Flag& f : requests_flags(rep.requests, static_cast<int>(m.budget.cpus.size()))) {
        const bool seen = std::any_of(flags.begin(), flags.end(),
                                      [&](const Flag& g) { return g.text == f.text; });
        if (!seen) flags.push_back(std::move(f));
      }
    }
  }
  // The clock reads inside every sample (~20-40 ns) are a few % of a µs model's median and the
  // same in any bare loop: that is a field (harness_overhead_ms, _fraction), not a warning. Only
  // where they are a tenth of the median does the number mostly measure the harness.
  if (m.overhead_fraction > kOverheadFlagFraction) {
    flags.push_back({FlagCode::HarnessOverhead,
                     fmt::format("harness overhead {:.1f}% of the median (> {:.0f}%): {} ms per "
                                 "call of the clock reads around each call are in every sample",
                                 m.overhead_fraction * 100, kOverheadFlagFraction * 100,
                                 format_latency(m.loop.overhead_median_ms))});
  }
  if (std::optional<Flag> noisy = noisy_flag(m)) flags.push_back(std::move(*noisy));
  if (!m.loop.warmup_steady) {
    flags.push_back({FlagCode::WarmupNotSteady,
                     fmt::format("warm-up did not reach a steady state in {} rounds ({} calls)",
                                 m.loop.warmup_rounds, m.loop.warmup_iterations)});
  }
  // Both probes around a timed phase slow: the machine ran slower than its best during this
  // result (one slow probe alone is a burst that came and went). Under a CPU quota one slow probe
  // is enough: the other may have fit in a fresh period's allowance. What that did to each call
  // the probe cannot say (a compute loop in registers is not the model), so the flag says what
  // was measured and no more.
  const bool quota = m.budget.quota_cpus > 0;
  const double slowdown = quota ? m.probe_slowdown : m.probe_sustained_slowdown;
  if (slowdown > kProbeSlowdownThreshold) {
    std::vector<std::string> pairs;
    for (const Repetition& r : m.repetitions) {
      pairs.push_back(fmt::format("{:.2f} and {:.2f}", r.probe_before_ms, r.probe_after_ms));
    }
    const bool waited_out = std::any_of(m.repetitions.begin(), m.repetitions.end(),
                                        [](const Repetition& r) { return r.probe_waited_out; });
    flags.push_back(
        {FlagCode::MachineSlowed,
         fmt::format(
             "machine slowed: {} around the timed calls ran {:.2f}x this machine's best ({} ms vs "
             "{:.2f} ms; flagged above +{:.0f}%): this result was measured while the machine ran "
             "slower than it can{}",
             quota ? fmt::format("a speed probe under a CPU quota of {:.2f} CPUs",
                                 m.budget.quota_cpus)
                   : std::string("both speed probes"),
             1 + slowdown, fmt::join(pairs, "; "), m.probe_best_ms, kProbeSlowdownThreshold * 100,
             waited_out ? " (the runtime's own threads were still busy when a probe ran: they may "
                          "account for it)"
                        : "")});
  }
  // Throttled for more than 1% of the timed phase: the quota, not the model, set the pace.
  if (m.throttled.throttled > 0 && m.throttled.throttled_ms > 0.01 * m.loop.timed_s * 1000) {
    flags.push_back(
        {FlagCode::QuotaThrottled,
         fmt::format("CPU quota throttled the run: {} of {} periods, {:.0f} ms waiting for quota{}",
                     m.throttled.throttled, m.throttled.periods, m.throttled.throttled_ms,
                     m.budget.quota_source.empty() ? "" : " (" + m.budget.quota_source + ")")});
  }
  return flags;
}

}  // namespace turnkey::engine_internal
