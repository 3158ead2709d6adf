// Entry points of `turnkey report` (alias `cache report`) and `turnkey compare`, for the CLI to
// call with the arguments after the command word. They print to stdout/stderr and return the exit
// code; they catch turnkey::Error themselves (usage errors: one line on stderr, code 2).
//   report:  0 report written; 1 written, but some build dirs were unreadable; 2 usage error.
//   compare: 0 no significant slowdown; 1 a significant slowdown beyond --threshold;
//            2 usage error (or an input that is neither a cache nor a JSON report).
// Not thread-safe (they write to the standard streams).
#pragma once

#include <string>
#include <vector>

namespace turnkey::cli {

int report_main(const std::vector<std::string>& args);
int compare_main(const std::vector<std::string>& args);

}  // namespace turnkey::cli
