#include "turnkey/measure/loop.h"

#include <algorithm>
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

  const auto warmup_start = clock::now();
  const auto min_warmup = std::chrono::duration<double>(options.min_warmup_s);
  int64_t warmed = 0;
  while (warmed < options.max_warmup_iterations &&
         (warmed < options.warmup_iterations || clock::now() - warmup_start < min_warmup)) {
    session.run();
    ++warmed;
  }
  result.warmup_iterations = warmed;

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
