// Internal to the engine: the loop over a run's inputs. Each input is started by its first tool
// (a script's discovery, an ONNX file, a cached build), each model it yields is built by the
// build runner, and each input's result block is printed. A failure of one input or model becomes
// a result with a status and the loop goes on. Not thread-safe: one loop per run.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "pipeline/build_runner.h"
#include "console/result_block.h"
#include "pipeline/run_context.h"
#include "run/sweep.h"
#include "turnkey/catalog/request.h"
#include "turnkey/inputs/inputs.h"

namespace turnkey::engine_internal {

class InputLoop {
 public:
  explicit InputLoop(const RunRequest& request, Supervisor* link = nullptr)
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
  InputOutcome run_item(const InputItem& item);
  void run_contained(const InputItem& item);
  void run_input(const InputItem& item, const std::string& first);
  void input_error(const std::string& given, Status status, std::string reason);
  void waiting_for(const std::string& build_name) const;

  // script_input.cpp: a script, once, or once per --batch-sizes value.
  void run_script(const InputItem& item);
  // A batch sweep's runs of one script: what they built, and each model's points.
  struct ScriptSweep {
    std::map<std::string, int64_t> built;  // model hash -> the batch size it was built at
    int repeated = 0;                      // models found again, unchanged, at a later size
    std::map<std::string, std::pair<ModelBlock, SweepTable>> tables;  // by model name and class
  };
  // One run of the script (with --batch_size `batch` when given) and its models' builds, each
  // once per concurrency of `plan`. False when the script could not run (no interpreter).
  bool run_script_once(const InputItem& item, const SweepPlan& plan, std::optional<int64_t> batch,
                       ScriptSweep* sweep);
  // run_script_once's parts (script_input.cpp): the interpreter (false: the input failed), the
  // script's options, each discovered model's block (built or why not), the model's passes, and
  // the script's footer.
  struct ScriptPass;
  bool find_script_python(const InputItem& item);
  ScriptOptions script_options(const InputItem& item, const nlohmann::json& discover_opts,
                               std::optional<int64_t> batch) const;
  ModelBlock model_of_script(ScriptPass& pass, const DiscoveredModel& m);
  ModelBlock build_points(ScriptPass& pass, const DiscoveredModel& m);
  ScriptFooter script_footer(ScriptPass& pass);
  // What a model's builds take from its script's discovery.
  struct ModelSource {
    const DiscoveredModel& model;
    const DiscoveryResult& disc;
    ScriptSession& session;
    std::string script;
    const Labels& labels;
    const std::string& discover_log;
    double discover_s;
    Status ended_status;
    const std::string& forced_name;
    // The script's last model in a run of one point (no sweep): its build may end the script's
    // process once no tool needs it (Build::release_script_process).
    bool last_use = false;
  };
  // One pass of a discovered model's build at `point`, handed to `record` after its tools ran,
  // before it is finished.
  void build_model(const InputItem& item, const ModelSource& source, const SweepPoint& point,
                   Build& build, const SweepRecord& record);
  void run_onnx_file(const InputItem& item);
  // One point of an ONNX file's sweep (sweep.h): its pass of the build, handed to `record`
  // before it is finished; returns its block.
  ModelBlock run_onnx_point(const InputItem& item, const onnx_model::ModelFacts& facts,
                            const SweepPoint& point, const SweepRecord& record);
  void load_onnx_point(const InputItem& item, const onnx_model::ModelFacts& facts,
                       const SweepPoint& point, Build& build,
                       const onnx_model::BatchShapes* batch, const std::string& batch_error);
  // A batch point's model: build.onnx_path, or a copy of it with a symbolic batch dim when the
  // file fixes another batch (build/batch_variant.h). Returns what it did, for the log.
  std::string batch_model(Build& build, const onnx_model::BatchShapes& batch, int64_t size) const;
  void run_load_build(const InputItem& item);
  // One point (a concurrency) of a cached build continued, as run_onnx_point.
  ModelBlock run_load_build_point(const InputItem& item, const nlohmann::json& previous,
                                  const SweepPoint& point, const SweepRecord& record);
  std::filesystem::path write_script_log(const InputItem& item, const std::string& text) const;

  RunContext ctx_;
  BuildRunner runner_;
  ResultPrinter printer_;
  bool models_seen_ = false;  // by the current input
  nlohmann::json input_outcomes_ = nlohmann::json::array();
  std::string last_ones_note_;  // the symbolic-dims notice last said (said once per sweep)
  int labelled_scripts_ = 0;           // scripts that passed the --labels filter
  std::string python_, python_error_;  // looked up once per run
};


}  // namespace turnkey::engine_internal
