// The machine-speed probe (docs/measurement.md, "Machine speed"): a fixed, deterministic compute
// workload of a few milliseconds, run right before and right after a timed phase on the same CPUs
// and with the same thread count as the measurement. Host contention, a CPU quota or a frequency
// cap slow it as they slow the model, also where no counter shows them (this VM reports no steal
// time). turnkey keeps the fastest probe it has seen per machine fingerprint in the state dir and
// flags a run whose probes are slower than that by more than kProbeSlowdownThreshold.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace turnkey {

// A probe slower than the machine's best by more than this fraction flags the run.
inline constexpr double kProbeSlowdownThreshold = 0.20;
// Part of the record's key; bump it whenever the workload changes (its times change with it).
inline constexpr int kProbeWorkloadVersion = 2;

// Wall time, ms, of `threads` copies of the workload started together on the calling thread's
// CPUs (each copy on a thread of its own pinned to one of those CPUs in turn, all created before
// the clock starts; the caller waits). Deterministic: the same arithmetic every time.
// Thread-safe.
double run_speed_probe(int threads);

// Waits until no thread of the processes `pids` but the caller is runnable (state R in
// /proc/<pid>/task/<tid>/stat), polling every millisecond, at most `max_ms`; returns the ms
// waited. A runtime's idle workers spin for tens of ms after a call or a session's creation
// (ONNX Runtime's allow_spinning); a probe then measures them, not the machine. Never throws.
double wait_for_quiet_threads(const std::vector<pid_t>& pids, double max_ms);

// The key of the best-probe record: CPU model, logical CPUs, threads, pinned CPUs and any CPU
// quota, so a probe is only compared with probes of the same kind.
std::string speed_probe_key(const std::string& cpu_model, int logical_cpus, int threads,
                            const std::string& pinned_cpus, double quota_cpus);

// The fastest probe remembered for `key` before this call (0: none yet), after recording
// `probe_ms` (kept when faster). The record is <state dir>/machine_speed.json, read and written
// under an flock, atomically; failing to read or write it never fails a run (returns 0 then).
double remember_speed_probe(const std::string& key, double probe_ms);

}  // namespace turnkey
