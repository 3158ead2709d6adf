// `turnkey compare A B`: matches the measurements of two reports by (model content hash, runtime,
// device) and tests, on the stored raw samples, whether B is slower than A by more than a
// threshold: a one-sided Mann-Whitney U test (normal approximation with tie and continuity
// correction) of B against A scaled by (1 + threshold). Where both sides recorded the
// machine-speed probe (docs/measurement.md) and it moved the same way as the latency by more than
// the probe's threshold, the verdict is "machine speed differs", not a slowdown or speed-up.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "turnkey/report/report.h"

namespace turnkey::report {

struct UTest {
  double u = 0;        // U of `candidate`: pairs where candidate > base, ties counted 1/2
  double z = 0;        // standardized U (continuity-corrected)
  double p_value = 1;  // one-sided: P(U >= observed) if candidate is not stochastically greater
};

// One-sided Mann-Whitney U test that `candidate` is stochastically greater than `base`.
// Needs both non-empty (else p_value 1).
UTest mann_whitney_greater(const std::vector<double>& candidate, const std::vector<double>& base);

double median_of(std::vector<double> values);  // NaN when empty

struct CompareOptions {
  double threshold = 0.05;  // a slowdown counts when B > A * (1 + threshold)
  double alpha = 0.01;      // significance level of each one-sided test
  size_t min_samples = 8;   // fewer raw samples on either side: not tested
};

enum class Verdict { Slower, Faster, NoChange, Untested, MachineDiffers };
const char* verdict_name(Verdict v);

struct Matched {
  std::string model_name, build_name_a, build_name_b, runtime, device;
  std::string settings;  // Row::settings() of the result, "" for rows of older caches
  double median_a_ms = 0, median_b_ms = 0, ratio = 0;  // ratio = B / A
  size_t samples_a = 0, samples_b = 0;
  double p_slower = 1, p_faster = 1;      // one-sided p-values (1 when untested)
  double probe_a_ms = 0, probe_b_ms = 0;  // the machine-speed probe of each side (0: none)
  Verdict verdict = Verdict::Untested;
  std::string note;  // why untested, or which duplicate was used
};

struct Unmatched {
  std::string model_name, build_name, runtime, device;
  std::string settings;  // Row::settings()
  std::string
      other_side;  // what the other report says about this model, e.g. "failed at benchmark"
};

struct Comparison {
  std::vector<Matched> matched;
  std::vector<Unmatched> only_a, only_b;
  int slowdowns = 0;        // matched entries with verdict Slower
  int machine_differs = 0;  // matched entries with verdict MachineDiffers
};

// Successful rows with a median take part; duplicates (duplicate_of set) are left out so each
// key is compared once.
Comparison compare_reports(const Report& a, const Report& b, const CompareOptions& options);

// The readable table, with a header naming A, B, the test and the threshold.
std::string format_comparison(const Comparison& c, const CompareOptions& options,
                              const std::string& label_a, const std::string& label_b);

}  // namespace turnkey::report
