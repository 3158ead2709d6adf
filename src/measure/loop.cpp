#include "turnkey/measure/loop.h"

#include <chrono>

namespace turnkey {

LoopResult run_loop(Session& session, const LoopOptions& options) {
  using clock = std::chrono::steady_clock;
  LoopResult result;
  result.samples_ms.resize(static_cast<size_t>(std::max<int64_t>(options.iterations, 0)));

  auto t0 = clock::now();
  session.run();
  auto t1 = clock::now();
  result.cold_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();

  for (int64_t i = 0; i < options.warmup_iterations; ++i) session.run();
  result.warmup_iterations = options.warmup_iterations;

  // The timed region: a clock read, run(), a clock read. Samples are stored as raw durations
  // and converted after the loop.
  std::vector<clock::duration> raw(result.samples_ms.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    auto start = clock::now();
    session.run();
    raw[i] = clock::now() - start;
  }
  for (size_t i = 0; i < raw.size(); ++i) {
    result.samples_ms[i] = std::chrono::duration<double, std::milli>(raw[i]).count();
  }
  return result;
}

}  // namespace turnkey
