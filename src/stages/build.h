// Internal to the engine: what one build carries from tool to tool, and the tool bodies
// (stages.cpp, export_pytorch.cpp). Not thread-safe: one Build is worked on by one thread.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "turnkey/cache/build_cache.h"
#include "turnkey/cache/build_records.h"
#include "turnkey/common/flags.h"
#include "turnkey/common/tensor.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/console/report_printer.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey::engine_internal {

struct Build {
  std::string build_name;
  std::optional<BuildDir> dir;
  BuildState state;               // written as <name>_state.yaml (build_records.h)
  nlohmann::json previous_state;  // as read (reuse_policy.h); null when none or unreadable
  nlohmann::json previous_stats;  // its turnkey_stats.yaml, for what reused tools recorded
  BuildStats stats;               // written as turnkey_stats.yaml; fields checked by fields.h

  // The current model artifact and what goes with it.
  std::filesystem::path onnx_path;
  std::optional<onnx_model::ModelFacts> facts;  // of onnx_path, when loaded
  std::vector<std::filesystem::path> input_pbs, output_pbs;  // captured from the script
  std::vector<IntermediateTensor> intermediates;             // when the outputs carry no signal
  std::vector<std::filesystem::path> float64_pbs;  // PyTorch's outputs in float64, when made
  std::filesystem::path source_input;  // the ONNX file given by the user (load-onnx)
  std::string input_shapes;            // --input-shapes of load-onnx
  std::vector<HostTensor> inputs;      // prepared for the runtime
  std::string ones_note;               // symbolic dims prepare_inputs set to 1 ("" if none)
  // benchmark --input-data (docs/measurement.md): the data prepare_inputs feeds ("" = none), and
  // the outputs it says the model gives (the correctness reference when not empty).
  std::string input_data;
  std::vector<HostTensor> expected_outputs;

  // Discovery: the live model in the Python process (export-pytorch needs both).
  const DiscoveredModel* model = nullptr;
  ScriptSession* session = nullptr;
  // Ends the script's process (ScriptSession::close) and returns how it ended; set for the last
  // model of a script run once (script_input.cpp), empty otherwise. The runner calls it before
  // the first tool from which on no tool uses the process (ToolImpl::uses_script_process), so
  // that the model's weights in the script's process are not held while a runtime loads and
  // times its own copy. `process_note` is the line that says so, put at the head of that
  // tool's log.
  std::function<std::string()> release_script_process;
  std::string process_note;
  std::string python_override;  // --python: the interpreter of custom stages without a session
  // --sandbox: custom stages with a file run sandboxed too, writing through a staging folder.
  bool sandbox = false;
  std::vector<std::filesystem::path> sandbox_allow;

  // A sweep point's options (sweep.h), by tool, put over the request's: {"benchmark":
  // {"concurrency": 2}}.
  nlohmann::json point_options = nlohmann::json::object();

  // What the benchmark found, as data: the block, a sweep's table and the log render it.
  struct Findings {
    std::string correctness;  // the verdict's line ("within tolerance: ..."), "" when none
    std::vector<Flag> flags;  // why the numbers may not be trusted (flags.h)
  } findings;

  // What the running tool is doing now ("loading the model into ort"), for the line of a failure
  // whose exception does not say it (a std::bad_alloc): catalog/status.h failure_reason. Tools set
  // it at their phase boundaries, never inside a timed region; the runner clears it per tool.
  std::string step;

  std::string chain_key;  // cache key of what the tools so far produced
  bool failed = false;  // a tool body that knows its failure's status throws a StatusError
  ModelBlock block;
};

// Facts already read for build.onnx_path (a sweep reads an input's once), recorded in stats.
void use_facts(Build& build, const onnx_model::ModelFacts& facts);

// Loads facts for build.onnx_path (if not loaded for that path yet) and records them in stats.
const onnx_model::ModelFacts& ensure_facts(Build& build);

// The tensors in `files` (graph-input order) when they match the graph's inputs in count, dtype
// and every fixed dim; else an empty vector.
std::vector<HostTensor> matching_inputs(const std::vector<std::filesystem::path>& files,
                                        const onnx_model::ModelFacts& facts);

// Inputs for the runtime: benchmark --input-data (checked against the graph; it also replaces
// the PyTorch outputs as the correctness reference), captured from the script, shipped beside an
// ONNX file (test_data_set_0/), or generated from the fixed seed, in that order of preference.
// Records `input_source` in stats. Symbolic dims without --input-shapes become 1 (named in
// ones_note). Throws Error(InvalidInput) (an input without a shape, a dtype turnkey cannot
// generate, data that does not fit the graph, ...).
void prepare_inputs(Build& build);

// The block's "Input Shape" (ONNX-file blocks) set to the shapes of build.inputs, in the block's
// style, so the block shows what was fed rather than symbolic dims. No-op without inputs.
void show_fed_shapes(Build& build);

// The ONNX file `replied` (a path Outbox::file gave), taken into place with the external data
// files it names (staging.h). Throws Error(kind).
std::filesystem::path take_onnx(Outbox& outbox, const std::string& replied, ErrorKind kind);

// Tool bodies. Each appends what it did to `log` and throws Error on failure.
void tool_export_pytorch(Build& build, const nlohmann::json& options, std::string& log);
void tool_benchmark(Build& build, const nlohmann::json& options, std::string& log);
void tool_optimize_ort(Build& build, const nlohmann::json& options, std::string& log);
void tool_convert_fp16(Build& build, const nlohmann::json& options, std::string& log);
void tool_check_onnx(Build& build, const nlohmann::json& options, std::string& log);
void tool_python_stage(Build& build, const nlohmann::json& options, std::string& log);

// Whether a tool with these options uses the script's live process: export-pytorch always; a
// benchmark whose runtime times the live model (torch-eager, torch-compiled, torchscript) or is
// unknown (its error comes from the tool itself); a custom stage of the Python API (attached).
bool export_uses_script_process(const Build& build, const nlohmann::json& options);
bool benchmark_uses_script_process(const Build& build, const nlohmann::json& options);
bool python_stage_uses_script_process(const Build& build, const nlohmann::json& options);
// What a custom stage's output depends on beyond its options: its sequence file's SHA-256.
std::string python_stage_versions(const Build& build, const nlohmann::json& options);

// PyTorch's float64 outputs, the reference for a model that amplifies float32 rounding
// (docs/measurement.md), are made on demand: the benchmark asks the script's process for them
// only where a runtime's outputs are outside the tolerance of the float32 ones, which spares
// every other export one more forward in float64 (a third of a timm export). Deferrable: the
// build's PyTorch model is live, has at most 256 MiB of parameters (a larger one's export makes
// them, so that its process can end before the benchmark: docs/measurement.md), and its
// sequence has a benchmark (one run later through load-build has what the export made). On
// demand: deferrable, not made yet, the export wanted them (no --no-float64-reference) and its
// outputs are the reference. The benchmark then keeps the script's process alive.
bool float64_deferrable(const Build& build);
bool float64_on_demand(const Build& build);

// Writes turnkey_stats.yaml: the build's stats, with this run's result (when it benchmarked) put
// among the results earlier runs left (build_records.h). Throws Error(Io) when it cannot write.
void write_build_stats(Build& build);

// export-pytorch's options with values that come from the environment made explicit (the opset
// from TURNKEY_ONNX_OPSET or the default of the exporter tried first, which depends on the
// build's torch), so they take part in the cache key.
nlohmann::json resolve_export_options(nlohmann::json options, const Build& build);

// Versions a cacheable tool's output depends on (beyond turnkey's own and its options):
// export-pytorch "torch 1.13.1, onnx 1.12.0, exporter fixes 1[, onnxscript 0.7.2]";
// optimize-ort "onnxruntime 1.29.0"; check-onnx libonnx and onnxruntime; convert-fp16 libonnx;
// python-stage its sequence file's SHA-256 (python_stage_versions above).
std::string export_versions(const Build& build, const nlohmann::json& options);
std::string ort_versions(const Build& build, const nlohmann::json& options);
std::string onnx_and_ort_versions(const Build& build, const nlohmann::json& options);
std::string onnx_versions(const Build& build, const nlohmann::json& options);

}  // namespace turnkey::engine_internal
