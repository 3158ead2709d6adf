#include "turnkey/engine/status.h"

#include <cstdlib>

namespace turnkey {

const std::vector<StatusInfo>& status_table() {
  static const std::vector<StatusInfo> table = {
      {"successful", "every model of the input was built (and benchmarked, when asked)", false},
      {"no_models", "the script ran to its end but called no PyTorch model", false},
      {"skipped_by_filter", "not run: its labels did not match --labels", false},
      {"invalid_input",
       "not a usable input (missing, unreadable, wrong kind, bad ONNX file, "
       "no model matching ::hash)",
       true},
      {"discovery_failed", "the script raised, exited non-zero, or its interpreter died", true},
      {"export_failed", "torch.onnx.export failed (export-pytorch)", true},
      {"optimization_failed", "ONNX Runtime offline optimization failed (optimize-ort)", true},
      {"fp16_failed", "float16 conversion failed or left the tolerance (convert-fp16)", true},
      {"check_failed", "the ONNX checker, shape inference or a test session failed (check-onnx)",
       true},
      {"runtime_load_failed", "the runtime could not load the model or is unavailable", true},
      {"runtime_run_failed", "the runtime loaded the model but an inference failed", true},
      {"numeric_mismatch", "the runtime's outputs differ from the reference beyond tolerance",
       true},
      {"timeout",
       "killed after --timeout / TURNKEY_TIMEOUT_SECONDS (with every process it "
       "started)",
       true},
      {"out_of_memory", "went over --memory-limit (killed, or its allocation failed)", true},
      {"process_limit", "started more processes than --max-processes (a fork storm), killed", true},
      {"crashed", "its process ended by a signal or without a result (crashed (signal N))", true},
      {"cancelled", "its Slurm job was cancelled, or the run was interrupted", true},
  };
  return table;
}

const StatusInfo* find_status(const std::string& name) {
  for (const StatusInfo& s : status_table()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

bool is_failure_status(const std::string& name) {
  const StatusInfo* s = find_status(name);
  return s ? s->failure : true;
}

namespace {

bool contains(const std::string& text, const char* needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace

int signal_in(const std::string& error) {
  const std::string marker = "killed by signal ";
  size_t at = error.find(marker);
  if (at == std::string::npos) return 0;
  return std::atoi(error.c_str() + at + marker.size());
}

std::string status_for_failed_tool(const std::string& tool, const std::string& error,
                                   const std::string& explicit_status) {
  if (!explicit_status.empty()) return explicit_status;
  if (contains(error, "MemoryError") || contains(error, "std::bad_alloc") ||
      contains(error, "out of memory")) {
    return "out_of_memory";
  }
  if (signal_in(error) > 0) return "crashed";
  if (tool == "discover") return "discovery_failed";
  if (tool == "export-pytorch") return "export_failed";
  if (tool == "optimize-ort") return "optimization_failed";
  if (tool == "convert-fp16") return "fp16_failed";
  if (tool == "check-onnx") return "check_failed";
  if (tool == "load-onnx" || tool == "load-build") return "invalid_input";
  if (tool == "benchmark") {
    // A tool body may say precisely (Build::failure_status); otherwise the benchmark's own
    // wording tells loading (runtime unknown/unavailable, session creation) from running.
    if (contains(error, "mismatch")) return "numeric_mismatch";
    if (contains(error, "unavailable") || contains(error, "unknown runtime") ||
        contains(error, "load") || contains(error, "session") || contains(error, "--")) {
      return "runtime_load_failed";
    }
    return "runtime_run_failed";
  }
  return "crashed";
}

std::string status_display(const std::string& name, int signal) {
  if (name == "crashed" && signal > 0) return "crashed (signal " + std::to_string(signal) + ")";
  return name;
}

}  // namespace turnkey
