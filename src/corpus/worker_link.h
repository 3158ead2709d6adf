// Internal to the engine: a worker's side of the link to its supervisor (isolation.cpp, or the
// supervisor inside a Slurm job). Progress events are appended, one JSON object per line, to a
// file the supervisor reads after the worker ended, however it ended (so a killed worker still
// tells which builds it had started and which stage it reached). Under a local parent, a control
// pipe serializes benchmarks: the worker asks for the benchmark slot and waits for "go". Not
// thread-safe; one per worker process.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "pipeline/supervisor.h"

namespace turnkey::engine_internal {

class WorkerLink : public Supervisor {
 public:
  // control_fd < 0: no parent to ask (Slurm job, or the parent runs one input at a time).
  WorkerLink(const std::filesystem::path& progress_file, int control_fd);
  ~WorkerLink();
  WorkerLink(const WorkerLink&) = delete;
  WorkerLink& operator=(const WorkerLink&) = delete;

  // Appends {"e": ..., ...} with one write(2) (O_APPEND), so a line is never torn by a kill.
  void event(const ProgressEvent& e) override;
  // Blocks until the parent grants the benchmark slot: then the other workers are paused, or
  // pinned to other CPUs than the ones this worker is pinned to for the benchmark.
  void acquire_benchmark(int threads) override;
  void release_benchmark() override;

 private:
  std::vector<int> saved_cpus_;  // affinity before the benchmark, when the parent pinned it
  int progress_fd_ = -1;
  int control_fd_ = -1;
  bool holding_ = false;
};

}  // namespace turnkey::engine_internal
