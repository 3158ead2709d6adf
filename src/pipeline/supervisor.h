// The pipeline's door to whoever supervises this process (the corpus runner's worker link,
// corpus/worker_link.h): progress events it keeps even if this process is killed, and the
// benchmark slot that pauses other inputs' builds while this one measures. Null where nothing
// supervises. One per process; not thread-safe.
#pragma once

#include "pipeline/progress.h"

namespace turnkey::engine_internal {

class Supervisor {
 public:
  virtual ~Supervisor() = default;
  // One progress event; kept however the process ends.
  virtual void event(const ProgressEvent& e) = 0;
  // Blocks until the supervisor grants the benchmark slot to a benchmark on `threads` threads.
  virtual void acquire_benchmark(int threads) = 0;
  virtual void release_benchmark() = 0;
};

}  // namespace turnkey::engine_internal
