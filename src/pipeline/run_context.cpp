#include "pipeline/run_context.h"

#include "turnkey/discovery/sandbox.h"

#include <fmt/format.h>

#include <iostream>

#include "turnkey/cache/build_cache.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/version.h"
#include "pipeline/supervisor.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

RunContext::RunContext(const RunRequest& request, Supervisor* link)
    : request(request),
      cache_dir(resolve_cache_dir(request.global.cache_dir)),
      monitor(env_bool("TURNKEY_BUILD_MONITOR", true)),
      link(link),
      sandbox(sandbox_requested(request.global.sandbox)) {}

const std::string& RunContext::run_id() {
  if (!run_id_) {
    std::error_code ec;
    run_id_ = request.run_id.empty()
                  ? record_run(cache_dir,
                               {request.command_line, fs::current_path(ec).string(), kVersion})
                  : request.run_id;
  }
  return *run_id_;
}

void RunContext::notice(const std::string& text) const {
  std::cout << std::flush;
  std::cerr << "turnkey: " << text << "\n" << std::flush;
}

void RunContext::note_failure(Status status, const std::string& stage, const std::string& error,
                              int signal, const std::filesystem::path& log) {
  if (outcome.status) return;
  outcome.status = status;
  outcome.stage = stage;
  outcome.error = one_line(error);
  outcome.log = log;
  if (status == Status::Crashed && signal > 0) outcome.signal = signal;
}

std::string closing_line(size_t inputs, size_t failed, bool interrupted, size_t ran) {
  auto count = [](size_t n) { return fmt::format("{} input{}", n, n == 1 ? "" : "s"); };
  if (interrupted) {
    return fmt::format("Interrupted: {} of {} ran before the run was stopped, {} failed.", ran,
                       count(inputs), failed);
  }
  if (failed == 0) {
    return inputs == 1 ? "Done: the input finished without a failure."
                       : fmt::format("Done: all {} finished without a failure.", count(inputs));
  }
  return fmt::format("Done with failures: {} of {} failed (the blocks above say why).", failed,
                     count(inputs));
}

void RunContext::progress(const ProgressEvent& event) const {
  if (link) link->event(event);
}

BenchmarkSlot::BenchmarkSlot(Supervisor* link, int threads) {
  if (!link) return;
  link->acquire_benchmark(threads);
  link_ = link;
}

BenchmarkSlot::~BenchmarkSlot() {
  if (!link_) return;
  try {
    link_->release_benchmark();
  } catch (const std::exception&) {
    // The parent is gone (its pipe closed): there is no slot left to give back.
  }
}

}  // namespace turnkey::engine_internal
