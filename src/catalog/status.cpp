#include "turnkey/catalog/status.h"

#include <filesystem>
#include <map>
#include <new>

#include "turnkey/common/error.h"
#include "turnkey/common/text.h"

namespace turnkey {

namespace {

using G = StatusGroup;

}  // namespace

const std::vector<StatusInfo>& status_table() {
  static const std::vector<StatusInfo> table = {
      {Status::Successful, "successful",
       "every model of the input was built (and benchmarked, when asked)", G::Success, false},
      {Status::NoModels, "no_models", "the script ran to its end but called no PyTorch model",
       G::Success, false},
      {Status::SkippedByFilter, "skipped_by_filter", "not run: its labels did not match --labels",
       G::Skipped, false},
      {Status::InvalidInput, "invalid_input",
       "not a usable input (missing, unreadable, wrong kind, bad ONNX file, "
       "no model matching ::hash)",
       G::Failure, true},
      {Status::DiscoveryFailed, "discovery_failed",
       "the script raised, exited non-zero, or its interpreter died", G::Failure, true},
      {Status::ExportFailed, "export_failed", "torch.onnx.export failed (export-pytorch)",
       G::Failure, true},
      {Status::OptimizationFailed, "optimization_failed",
       "ONNX Runtime offline optimization failed (optimize-ort)", G::Failure, true},
      {Status::Fp16Failed, "fp16_failed",
       "float16 conversion failed or left the tolerance (convert-fp16)", G::Failure, true},
      {Status::CheckFailed, "check_failed",
       "the ONNX checker, shape inference or a test session failed (check-onnx)", G::Failure, true},
      {Status::StageFailed, "stage_failed",
       "a custom stage written in Python failed (python-stage, docs/sequences.md)", G::Failure,
       true},
      {Status::RuntimeLoadFailed, "runtime_load_failed",
       "the runtime could not load the model or is unavailable", G::Failure, true},
      {Status::RuntimeRunFailed, "runtime_run_failed",
       "the runtime loaded the model but an inference failed", G::Failure, true},
      {Status::NumericMismatch, "numeric_mismatch",
       "the runtime's outputs differ from the reference beyond tolerance", G::Failure, true},
      {Status::Timeout, "timeout",
       "killed after --timeout / TURNKEY_TIMEOUT_SECONDS (with every process it started)",
       G::Failure, true},
      {Status::OutOfMemory, "out_of_memory",
       "went over --memory-limit (killed, or its allocation failed)", G::Failure, true},
      {Status::ProcessLimit, "process_limit",
       "started more processes than --max-processes (a fork storm), killed", G::Failure, true},
      {Status::Crashed, "crashed",
       "its process ended by a signal or without a result (crashed (signal N))", G::Failure, true},
      {Status::Cancelled, "cancelled", "its Slurm job was cancelled, or the run was interrupted",
       G::Failure, true, true},
      {Status::NodeFailed, "node_failed",
       "its Slurm job's node failed or could not use the cache dir, on every attempt (NODE_FAIL, "
       "lost slurmd, launch failure)",
       G::Failure, true, true},
      {Status::SlurmUnreachable, "slurm_unreachable",
       "turnkey stopped waiting for its Slurm job: the controller did not answer for "
       "--slurm-controller-timeout seconds (the job may still run and write its result)",
       G::Failure, true, true},
      {Status::Failed, "failed",
       "build_status / tool step: a tool failed (the build's status says which way)", G::Failure,
       true},
      {Status::Running, "running", "tool step: started and not ended (the process was killed)",
       G::Unfinished, true},
      {Status::Incomplete, "incomplete", "build_status: the build has not ended (or was killed)",
       G::Unfinished, true},
      {Status::Unreadable, "unreadable", "report row: the build dir's files cannot be read",
       G::Unreadable, true},
  };
  return table;
}

const StatusInfo& status_info(Status status) {
  // The table is in enum order (tested), so the enum indexes it.
  return status_table()[static_cast<size_t>(status)];
}

const char* status_name(Status status) { return status_info(status).name; }

const StatusInfo* find_status(const std::string& name) {
  for (const StatusInfo& s : status_table()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::optional<Status> parse_status(const std::string& name) {
  const StatusInfo* s = find_status(name);
  if (!s) return std::nullopt;
  return s->status;
}

bool is_failure_status(const std::string& name) {
  const StatusInfo* s = find_status(name);
  return s ? s->failure : true;
}

bool is_failure_status(Status status) { return status_info(status).failure; }

bool is_success(const std::string& name) { return name == status_name(Status::Successful); }

StatusGroup status_group(const std::string& name) {
  const StatusInfo* s = find_status(name);
  return s ? s->group : StatusGroup::Failure;
}

const char* group_label(StatusGroup group) {
  switch (group) {
    case StatusGroup::Success:
      return "successful";
    case StatusGroup::Failure:
      return "failed";
    case StatusGroup::Skipped:
      return "skipped";
    case StatusGroup::Unfinished:
      return "incomplete";
    case StatusGroup::Unreadable:
      return "unreadable";
  }
  return "failed";
}

std::array<int, kStatusGroups.size()> count_by_group(const std::vector<std::string>& names) {
  std::array<int, kStatusGroups.size()> counts{};
  for (const std::string& name : names) ++counts[static_cast<size_t>(status_group(name))];
  return counts;
}

std::optional<Status> python_end_status(const std::string& error_status, int signal) {
  if (std::optional<Status> s = parse_status(error_status)) return s;
  if (signal > 0) return Status::Crashed;
  return std::nullopt;
}

Status status_of_failure(Status tool_failure, const std::exception& error) {
  if (const auto* s = dynamic_cast<const StatusError*>(&error)) return s->status();
  if (dynamic_cast<const std::bad_alloc*>(&error)) return Status::OutOfMemory;
  if (const auto* e = dynamic_cast<const Error*>(&error)) {
    if (e->kind() == ErrorKind::NumericMismatch) return Status::NumericMismatch;
    if (e->kind() == ErrorKind::OutOfMemory) return Status::OutOfMemory;
    if (e->kind() == ErrorKind::Timeout) return Status::Timeout;
  }
  return tool_failure;
}

int signal_of_failure(const std::exception& error) {
  const auto* s = dynamic_cast<const StatusError*>(&error);
  return s ? s->signal() : 0;
}

std::string failure_reason(const std::exception& error, const std::string& step) {
  if (dynamic_cast<const Error*>(&error)) return one_line(error.what());
  const std::string at = step.empty() ? "" : " while " + step;
  if (dynamic_cast<const std::bad_alloc*>(&error))
    return "out of memory" + at + " (std::bad_alloc)";
  // Not turnkey's own: name what kind of trouble it was.
  if (dynamic_cast<const std::filesystem::filesystem_error*>(&error)) {
    return "file system" + at + ": " + one_line(error.what());
  }
  return "internal error" + at + ": " + one_line(error.what());
}

std::string status_display(const std::string& name, int signal) {
  if (name == status_name(Status::Crashed) && signal > 0) {
    return name + " (signal " + std::to_string(signal) + ")";
  }
  return name;
}

std::string status_display(Status status, int signal) {
  return status_display(status_name(status), signal);
}

}  // namespace turnkey
