// The closing summary of a corpus run: inputs per status, with the failures' one-line reasons.
#include "turnkey/corpus/corpus.h"

#include <chrono>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "corpus/corpus_internal.h"
#include "turnkey/common/error.h"
#include "turnkey/catalog/status.h"

namespace turnkey {

namespace fs = std::filesystem;
using namespace engine_internal;

namespace engine_internal {

// ---- summary -----------------------------------------------------------------------------------

int print_summary(const std::vector<InputResult>& results, const fs::path& inputs_dir,
                  double wall_s) {
  int earlier = 0;
  bool failed = false;
  for (const InputResult& r : results) {
    earlier += r.earlier;
    failed = failed || is_failure_status(r.status);
  }
  std::cout << std::flush;
  std::cout << fmt::format("\nCorpus summary: {} input{} in {:.1f} s{}\n", results.size(),
                           results.size() == 1 ? "" : "s", wall_s,
                           earlier ? fmt::format(" ({} from an earlier run)", earlier) : "");
  std::cout << fmt::format("  {:<24}{:>7}\n", "status", "inputs");
  for (const StatusInfo& s : status_table()) {
    std::map<std::string, int> counts;  // "crashed (signal 9)" apart from "crashed"
    for (const InputResult& r : results) {
      if (r.status == s.status) ++counts[status_display(r.status, r.signal)];
    }
    for (const auto& [display, n] : counts) {
      std::cout << fmt::format("  {:<24}{:>7}\n", display, n);
    }
  }
  bool any_listed = false;
  for (const InputResult& r : results) {
    if (!is_failure_status(r.status)) continue;
    if (!any_listed) std::cout << "Failed inputs (status, last stage, log):\n";
    any_listed = true;
    std::cout << fmt::format("  {:<22} {:<30} {:<15} {}\n", status_display(r.status, r.signal),
                             r.given, r.stage.empty() ? "-" : r.stage,
                             r.log.empty() ? first_line(r.error) : r.log.string());
  }
  std::cout << fmt::format("Logs and records: {}/<input>.log, .yaml\n", inputs_dir.string())
            << std::flush;
  return failed ? 1 : 0;
}

}  // namespace engine_internal

}  // namespace turnkey
