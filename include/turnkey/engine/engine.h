// The engine: runs one sequence of tools over every input and prints each model's result block
// as the reference tool did. A failure of one input or model becomes a result with a status and
// the run goes on.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace turnkey {

struct ToolCall {
  std::string name;
  nlohmann::json options = nlohmann::json::object();  // keys as in OptionSpec::key
};

struct GlobalOptions {
  std::vector<std::string> inputs;
  std::string cache_dir;             // as given ("" = TURNKEY_CACHE_DIR or default)
  std::vector<std::string> labels;   // key::value filters
  std::string rebuild = "if_needed";
  bool lean_cache = false;
  std::string python;                // interpreter override
  std::string search_dir;            // classic -s: inputs relative to it
};

struct RunRequest {
  GlobalOptions global;
  // The tool sequence. A first tool named "auto" (classic grammar) is replaced per input by
  // discover (.py), load-onnx (.onnx); sequence tools that do not apply are skipped.
  std::vector<ToolCall> sequence;
  std::string command_line;
};

// Returns the process exit code: 0 when every input and model succeeded, 1 otherwise.
int run_sequence(const RunRequest& request);

}  // namespace turnkey
