// Internal to the engine: one build from its opened dir to its recorded end. Opens the build dir
// (reading the previous state, damaged or not), runs the sequence tools with per-tool cache keys
// and reuse (reuse_policy.h), turns every failure into the build's status, and records the end.
// Any exception while building one model fails that build with one line and its state recorded;
// nothing escapes contain(). Not thread-safe: one build at a time.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "stages/build.h"
#include "pipeline/run_context.h"
#include "turnkey/catalog/status.h"
#include "turnkey/catalog/tools.h"

namespace turnkey::engine_internal {

class BuildRunner {
 public:
  explicit BuildRunner(RunContext& ctx) : ctx_(ctx) {}

  // `<stem>_<hash8>`, unless that build dir already belongs to another input file (same stem and
  // model in another folder): then the input's path hash goes into the name, so two inputs never
  // share (and overwrite) one build dir.
  std::string claim_build_name(const std::filesystem::path& input, const std::string& hash8) const;

  // Creates the build dir, reads the previous state (a damaged one: notice, then rebuilt) and
  // starts a fresh state whose first tool (already done by the caller) is recorded as
  // successful. Throws Error(Cache) when the state file's place is taken by something that
  // cannot be replaced (a directory).
  // The build dir is `<cache>/<build.build_name>`.
  void open_build(Build& build, const std::filesystem::path& cache,
                  const std::filesystem::path& input, const std::string& first,
                  const std::string& first_key, double first_s);

  // Runs the sequence tools after `first` in order; stops at the first failure (recorded).
  void run_tools(Build& build, const std::string& first);

  // Runs `work` for `build`; any exception (Error, filesystem, JSON/YAML types, bad_alloc, any
  // std::exception) fails the build at `tool` with one line. Never throws.
  void contain(Build& build, const std::string& tool, const std::function<void()>& work);

  // Records the build's failure at `tool` (its state too, when it can be written). `signal`
  // (> 0): the signal that crashed it.
  void fail(Build& build, const std::string& tool, Status status, const std::string& reason,
            int signal = 0);

  // Records the end of the build (status, finish time, stats; lean cache cleaning). Never throws.
  void finish_build(Build& build);

  void write_log(const Build& build, const std::string& tool, const std::string& text) const;

 private:
  // Ends the script's process (Build::release_script_process, when set) if no call from
  // calls[from] on uses it; the next tool's log says so.
  void release_when_unused(Build& build, const std::vector<const ToolCall*>& calls,
                           size_t from) const;
  void save_state(Build& build) const;
  std::string read_log(const Build& build, const std::string& tool) const;
  void read_previous_state(Build& build, const std::string& first) const;
  std::string stale_reason(const nlohmann::json& entry, const std::string& name,
                           const nlohmann::json& options, const Build& build) const;
  // Runs one tool not reused from the cache; false when it failed (recorded). `label`: the
  // call's name in logs and the monitor (call_label).
  bool run_tool(Build& build, const ToolSpec& spec, const std::string& label,
                const nlohmann::json& options, ToolStep step);

  RunContext& ctx_;
};

}  // namespace turnkey::engine_internal
