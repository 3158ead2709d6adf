// Internal to the engine: the loop over a run's inputs. Each input is started by its first tool
// (a script's discovery, an ONNX file, a cached build), each model it yields is built by the
// build runner, and each input's result block is printed. A failure of one input or model becomes
// a result with a status and the loop goes on. Not thread-safe: one loop per run.
#pragma once

#include <filesystem>
#include <string>

#include "build_runner.h"
#include "result_block.h"
#include "run_context.h"
#include "turnkey/engine/engine.h"
#include "turnkey/inputs/inputs.h"

namespace turnkey::engine_internal {

class InputLoop {
 public:
  explicit InputLoop(const RunRequest& request, WorkerLink* link = nullptr)
      : ctx_(request, link), runner_(ctx_) {}

  // Every input of the request. Returns the exit code: 0 when every input and model succeeded.
  int run();
  // Worker mode (corpus.h): one input, already expanded by the parent; the outcome goes to the
  // supervisor as the last progress event.
  int run_one(const InputItem& item);
  // What each input of run() came to, in order: {input, status, stage, error, builds: [{build,
  // dir}]} (--json, json_output.h).
  const nlohmann::json& input_outcomes() const { return input_outcomes_; }

 private:
  // Runs one input; nothing it throws escapes (it becomes the input's failure). Returns its
  // outcome, with its status decided (successful, no_models, or its first failure's).
  nlohmann::json run_item(const InputItem& item);
  void run_contained(const InputItem& item);
  void run_input(const InputItem& item, const std::string& first);
  void input_error(const std::string& given, Status status, std::string reason);
  void waiting_for(const std::string& build_name) const;

  void run_script(const InputItem& item);  // script_input.cpp
  void run_onnx_file(const InputItem& item);
  void run_load_build(const InputItem& item);
  std::filesystem::path write_script_log(const InputItem& item, const std::string& text) const;

  RunContext ctx_;
  BuildRunner runner_;
  ResultPrinter printer_;
  bool models_seen_ = false;  // by the current input
  nlohmann::json input_outcomes_ = nlohmann::json::array();
  int labelled_scripts_ = 0;           // scripts that passed the --labels filter
  std::string python_, python_error_;  // looked up once per run
};

// A corpus worker's one input (corpus.cpp), reported over `link`.
int run_worker_input(const RunRequest& request, const InputItem& item, WorkerLink& link);

}  // namespace turnkey::engine_internal
