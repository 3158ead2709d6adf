// Requests in flight (--concurrency N > 1, docs/measurement.md): the thread budget per request,
// the sessions the callers use, and the trust flags of a concurrent measurement. The
// single-request path (run_loop) never comes here.
#include <fmt/format.h>

#include <algorithm>

#include "benchmark/benchmark.h"
#include "turnkey/common/error.h"
#include "turnkey/catalog/status.h"
#include "turnkey/catalog/tools.h"

namespace turnkey::engine_internal {

using nlohmann::json;

int requested_concurrency(const Runtime& runtime, const json& opts) {
  const std::vector<long long> values = int_list_values(opts.value("concurrency", json(1)));
  if (values.size() > 1) {
    // The sweep (sweep.h) runs the benchmark once per value.
    throw Error(ErrorKind::Internal, "benchmark: one concurrency per run, not a list");
  }
  const int n = values.empty() ? 1 : static_cast<int>(values.front());
  if (n < 1) throw Error(ErrorKind::InvalidInput, fmt::format("--concurrency {}: below 1", n));
  if (n > 1) {
    const ConcurrencySupport support = runtime.concurrency();
    if (!support.any()) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("--concurrency {}: {} cannot serve concurrent requests: {}", n,
                              runtime.name(), support.refusal));
    }
  }
  return n;
}

int threads_per_request(int usable_threads, int concurrency) {
  return std::max(1, usable_threads / std::max(1, concurrency));
}

Requests run_requests(Session& first, const BenchmarkSetup& setup,
                      const std::function<std::unique_ptr<Session>()>& load,
                      const LoopHooks& hooks) {
  const ConcurrencySupport support = setup.runtime->concurrency();
  const int n = setup.concurrency;
  // One session shared by the callers when each request gets one thread (no thread pool to
  // share) or the runtime loads no more; else a session (and a pool of its own) per request.
  const bool per_request =
      support.session_per_request && (setup.threads > 1 || !support.shared_session);
  Requests r;
  r.sessions = per_request ? n : 1;
  std::vector<std::unique_ptr<Session>> owned;
  std::vector<Session*> callers = {&first};
  for (int i = 1; i < n; ++i) {
    std::unique_ptr<Session> s = per_request ? load() : first.caller();
    if (!s) {
      throw Error(
          ErrorKind::Internal,
          fmt::format("{}: its session gave no caller for another thread", setup.runtime_name));
    }
    callers.push_back(s.get());
    owned.push_back(std::move(s));
  }
  try {
    r.run = run_concurrent_loop(callers, setup.loop, hooks);
  } catch (const Error& e) {
    throw StatusError(Status::RuntimeRunFailed, e);
  }
  return r;
}

std::vector<Flag> requests_flags(const Requests& r, int usable_cpus) {
  std::vector<Flag> flags;
  if (r.run.callers > usable_cpus) {
    flags.push_back({FlagCode::Oversubscribed,
                     fmt::format("{} requests in flight on {} CPUs: callers wait for a CPU, so "
                                 "latency includes waiting",
                                 r.run.callers, usable_cpus)});
  }
  // A caller that completed far fewer calls than the others was starved (scheduling, a lock).
  if (!r.run.completed_per_caller.empty() && r.run.completed > 0) {
    const double fair = static_cast<double>(r.run.completed) / r.run.callers;
    const auto [low, high] =
        std::minmax_element(r.run.completed_per_caller.begin(), r.run.completed_per_caller.end());
    if (*low < 0.5 * fair) {
      flags.push_back({FlagCode::UnequalRequests,
                       fmt::format("unequal requests: one caller completed {} calls, another {} "
                                   "(fair share {:.0f})",
                                   *low, *high, fair)});
    }
  }
  return flags;
}

}  // namespace turnkey::engine_internal
