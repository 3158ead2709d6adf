// The one status table (docs/corpus_runs.md): every input, build and tool step ends with exactly
// one of these statuses, in build states, input records, the closing summary and reports. A status
// travels as the enum; its name is what YAML/JSON/CSV store. A failure carries its status from
// where it happens (StatusError); nothing decides a status by reading a message's wording.
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "turnkey/common/error.h"

namespace turnkey {

enum class Status {
  Successful,
  NoModels,
  SkippedByFilter,
  InvalidInput,
  DiscoveryFailed,
  ExportFailed,
  OptimizationFailed,
  Fp16Failed,
  CheckFailed,
  StageFailed,
  RuntimeLoadFailed,
  RuntimeRunFailed,
  NumericMismatch,
  Timeout,
  OutOfMemory,
  ProcessLimit,
  Crashed,
  Cancelled,
  NodeFailed,
  SlurmUnreachable,
  // Recorded states of a build or a tool step (build_status, tools[].status), and the report's
  // row for a build dir it cannot read.
  Failed,
  Running,
  Incomplete,
  Unreadable,
};

// What a headline count puts a status under. Every status is in exactly one group, so the
// group counts of a set of builds add up to the number of builds.
enum class StatusGroup { Success, Failure, Skipped, Unfinished, Unreadable };
inline constexpr std::array<StatusGroup, 5> kStatusGroups = {
    StatusGroup::Success, StatusGroup::Failure, StatusGroup::Skipped, StatusGroup::Unfinished,
    StatusGroup::Unreadable};

struct StatusInfo {
  Status status;
  const char* name;     // machine name, stored in YAML/JSON ("export_failed")
  const char* meaning;  // one line for docs and --help
  StatusGroup group;
  bool failure;  // counts as a failure (exit code 1)
  // The input never had a fair run (interrupted, its nodes lost, its job's end unknown): a
  // corpus run that resumes runs it again without --retry-failed.
  bool rerun = false;
};

// Every status, in the order the closing summary lists them.
const std::vector<StatusInfo>& status_table();
const StatusInfo& status_info(Status status);
const char* status_name(Status status);
// nullptr / nullopt for a name that is not in the table.
const StatusInfo* find_status(const std::string& name);
std::optional<Status> parse_status(const std::string& name);
// An unknown name counts as a failure (a record from a newer or damaged writer).
bool is_failure_status(const std::string& name);
bool is_failure_status(Status status);
bool is_success(const std::string& name);
StatusGroup status_group(const std::string& name);
// "successful", "failed", "skipped", "incomplete", "unreadable": the headline label of a group.
const char* group_label(StatusGroup group);

// How many of `names` fall in each group (indexed like kStatusGroups); they add up to the size.
std::array<int, kStatusGroups.size()> count_by_group(const std::vector<std::string>& names);

// A failure that knows its status where it happens (the benchmark's load and run phases, a
// damaged build dir, a Python side that reported a MemoryError or was killed by a signal, ...).
// The engine records `status()` for the build, and `signal()` (> 0) with a crash. A cause of
// kind OutOfMemory stays out_of_memory whatever phase it happened in.
class StatusError : public Error {
 public:
  StatusError(Status status, ErrorKind kind, const std::string& message, int signal = 0)
      : Error(kind, message), status_(status), signal_(signal) {}
  StatusError(Status status, const Error& cause, int signal = 0)
      : Error(cause),
        status_(cause.kind() == ErrorKind::OutOfMemory ? Status::OutOfMemory : status),
        signal_(signal) {}
  Status status() const { return status_; }
  int signal() const { return signal_; }

 private:
  Status status_;
  int signal_;
};

// The status of `error` thrown by a tool: a StatusError's own; NumericMismatch, Timeout and
// OutOfMemory from the error's kind; OutOfMemory for std::bad_alloc; else `tool_failure` (the
// tool's row, tools.h failure_status_of_tool). Never from the error's message.
Status status_of_failure(Status tool_failure, const std::exception& error);
// The signal a StatusError carries (a crash), else 0.
int signal_of_failure(const std::exception& error);
// The one line of `error` thrown by a tool. A turnkey Error's message says where it arose; any
// other exception (std::bad_alloc, a file system or JSON library error) does not, so its line
// names `step`, what the tool was doing (Build::step; "" when unknown): "out of memory while
// reading the runtime's outputs (std::bad_alloc)".
std::string failure_reason(const std::exception& error, const std::string& step);

// The status of a Python-side end (discover, export-pytorch), from the structured parts the
// protocol carries (docs/protocol.md): the status the Python side gave its error
// (`error_status`, a name of this table, e.g. "out_of_memory" for a MemoryError), else Crashed
// when a signal ended the process (its wait status). nullopt when neither applies.
std::optional<Status> python_end_status(const std::string& error_status, int signal);

// "crashed (signal 11)" for crashed with a signal, else the name.
std::string status_display(const std::string& name, int signal = 0);
std::string status_display(Status status, int signal = 0);

}  // namespace turnkey
