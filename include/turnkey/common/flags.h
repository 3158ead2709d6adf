// The flags a result carries when its numbers may not be trusted as they stand
// (measurement_flags, fields.h): each a code from this one table, with its text. The stats keep
// the texts (measurement_flags) and the codes (flag_codes) side by side; code that decides
// anything from a flag tests its code, never its wording. Immutable; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace turnkey {

enum class FlagCode {
  ThreadsExceedCores,  // more threads than (pinned) physical cores
  FrequencyCapped,     // cpufreq caps the CPU below its hardware maximum
  MachineBusy,         // other runnable threads did not leave our threads their CPUs
  Oversubscribed,      // more requests in flight than CPUs
  UnequalRequests,     // one caller starved
  HarnessOverhead,     // the clock reads are a tenth of the median or more
  Noisy,               // the median's interval is wider than +-5%
  WarmupNotSteady,     // warm-up ended without a steady state
  MachineSlowed,       // the speed probes around the timed calls ran slower than the machine's best
  QuotaThrottled,      // a CPU quota throttled the timed calls
  NoThroughputGain,    // a sweep's higher concurrency did not raise throughput
};

struct FlagSpec {
  FlagCode code;
  const char* name;     // "noisy": the code in flag_codes
  const char* meaning;  // one line for docs
};

const std::vector<FlagSpec>& flag_table();
const char* flag_name(FlagCode code);

struct Flag {
  FlagCode code;
  std::string text;  // one line, no "; " (the report joins flags with it)
};

// The texts and the names of `flags`, in order (what measurement_flags and flag_codes hold).
std::vector<std::string> flag_texts(const std::vector<Flag>& flags);
std::vector<std::string> flag_names(const std::vector<Flag>& flags);

}  // namespace turnkey
