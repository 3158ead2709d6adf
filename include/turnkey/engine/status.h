// The one failure taxonomy (docs/corpus_runs.md): every input and every build ends with exactly
// one of these status names, in build states, input records, the closing summary and reports.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace turnkey {

struct StatusInfo {
  const char* name;     // machine name, stored in YAML/JSON ("export_failed")
  const char* meaning;  // one line for docs and --help
  bool failure;         // counts as a failure (exit code 1)
};

// Every status, in the order the closing summary lists them.
const std::vector<StatusInfo>& status_table();
const StatusInfo* find_status(const std::string& name);
bool is_failure_status(const std::string& name);

// The status of a build that failed in `tool` with `error` (one line). `explicit_status`, when a
// tool body set one (e.g. "numeric_mismatch"), wins.
std::string status_for_failed_tool(const std::string& tool, const std::string& error,
                                   const std::string& explicit_status = "");

// N of "killed by signal N" in a process description (process.h), else 0.
int signal_in(const std::string& error);

// "crashed (signal 11)" for crashed with a signal, else the name.
std::string status_display(const std::string& name, int signal = 0);

}  // namespace turnkey
