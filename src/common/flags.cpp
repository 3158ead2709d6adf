#include "turnkey/common/flags.h"

namespace turnkey {

const std::vector<FlagSpec>& flag_table() {
  static const std::vector<FlagSpec> kFlags = {
      {FlagCode::ThreadsExceedCores, "threads_exceed_cores",
       "the runtime's threads outnumber the physical (or pinned) cores"},
      {FlagCode::FrequencyCapped, "frequency_capped",
       "cpufreq's scaling_max_freq holds the CPU below its hardware maximum"},
      {FlagCode::MachineBusy, "machine_busy",
       "other runnable threads and ours did not fit on the CPUs before or after the run"},
      {FlagCode::Oversubscribed, "oversubscribed",
       "more requests in flight than CPUs: latency includes waiting for a CPU"},
      {FlagCode::UnequalRequests, "unequal_requests",
       "one caller completed under half its fair share of calls"},
      {FlagCode::HarnessOverhead, "harness_overhead",
       "the clock reads around each call are over a tenth of the median"},
      {FlagCode::Noisy, "noisy", "the median's 95% interval is wider than +-5%"},
      {FlagCode::WarmupNotSteady, "warmup_not_steady",
       "warm-up ended at its limit without a steady state"},
      {FlagCode::MachineSlowed, "machine_slowed",
       "the speed probes around the timed calls ran slower than this machine's best"},
      {FlagCode::QuotaThrottled, "quota_throttled",
       "a CPU quota throttled the run for over 1% of the timed phase"},
      {FlagCode::NoThroughputGain, "no_throughput_gain",
       "a sweep's higher concurrency gave no more throughput than a lower one"},
  };
  return kFlags;
}

const char* flag_name(FlagCode code) {
  for (const FlagSpec& f : flag_table()) {
    if (f.code == code) return f.name;
  }
  return "unknown";
}

std::vector<std::string> flag_texts(const std::vector<Flag>& flags) {
  std::vector<std::string> out;
  for (const Flag& f : flags) out.push_back(f.text);
  return out;
}

std::vector<std::string> flag_names(const std::vector<Flag>& flags) {
  std::vector<std::string> out;
  for (const Flag& f : flags) out.push_back(flag_name(f.code));
  return out;
}

}  // namespace turnkey
