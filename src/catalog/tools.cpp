#include "turnkey/catalog/tools.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "turnkey/common/error.h"
#include "turnkey/measure/loop.h"
#include "catalog/tool_checks.h"

namespace turnkey {

using T = OptionSpec::Type;
using nlohmann::json;
using namespace tool_checks;

const std::vector<ToolSpec>& tool_specs() {
  using A = Artifact;
  // The measurement loop's own defaults (measure/loop.h), so there is one number for each.
  static const LoopOptions kLoop{};
  static const std::vector<ToolSpec> specs = {
      {"discover",
       ToolGroup::First,
       Status::DiscoveryFailed,
       ".py",
       "a Python script (.py)",
       "Run a Python script and discover the PyTorch models it calls",
       {{"--script-args",
         "script_args",
         T::String,
         "Arguments for the script, split like a shell (no shell involved)",
         "",
         {.check = check_script_args}},
        {"--max-depth",
         "max_depth",
         T::Int,
         "Also discover sub-modules down to this depth (0 = top-level models only)",
         0,
         {.low = 0}},
        {"--build-name",
         "build_name",
         T::String,
         "Build name for the one model built (default <script>_<hash8>; classic grammar: also for "
         "one ONNX file)",
         "",
         {.check = check_build_name}},
        {"--attach",
         "attach",
         T::String,
         "E,C: take the models from the calling Python process over these inherited pipes "
         "(used by the Python API, docs/python_api.md)",
         "",
         {.check = check_attach}},
        {"--batch-sizes",
         "batch_sizes",
         T::IntList,
         "Batch sizes to sweep, e.g. 1,2,4,8: the script runs once per size with --batch_size "
         "B (what turnkey.parse() reads); one result per size",
         nullptr,
         {.low = 1, .high = kMaxBatchSize}}},
       A::None,
       A::PyTorchModel,
       false,
       false,
       check_discover_together},
      {"load-onnx",
       ToolGroup::First,
       Status::InvalidInput,
       ".onnx",
       "an ONNX file (.onnx)",
       "Load an ONNX file: checker, parameters, ops, opset, inputs and outputs",
       {{"--input-shapes",
         "input_shapes",
         T::Strings,
         "Shapes for inputs with symbolic dims: name:1x3x224x224,other:1x128 (repeat the option "
         "to sweep several; one result each)",
         "",
         {.check = check_input_shapes}},
        {"--batch-sizes",
         "batch_sizes",
         T::IntList,
         "Batch sizes to sweep, e.g. 1,2,4,8: the first dim of the inputs (symbolic or fixed; "
         "docs/measurement.md); one result per size",
         nullptr,
         {.low = 1, .high = kMaxBatchSize}}},
       A::None,
       A::OnnxModel,
       false},
      {"load-build",
       ToolGroup::First,
       Status::InvalidInput,
       "_state.yaml",
       "a build state (<build>_state.yaml)",
       "Continue from a cached build (give its <build_name>_state.yaml)",
       {},
       A::None,
       A::OnnxModel,
       false},
      {"export-pytorch",
       ToolGroup::Sequence,
       Status::ExportFailed,
       nullptr,
       nullptr,
       "Export a discovered PyTorch model to ONNX (torch.onnx.export) and save its outputs",
       {{"--opset",
         "opset",
         T::Int,
         "ONNX opset (default TURNKEY_ONNX_OPSET, else 17 for the TorchScript exporter and 18, "
         "its base, for the dynamo exporter; torch 1.13 supports 7-17)",
         nullptr,
         {.low = 7, .high = 30}},
        {"--exporter",
         "exporter",
         T::String,
         "torch.onnx.export's exporter: auto (default: torch's own default, dynamo from torch "
         "2.9, else torchscript; the other when it fails, with the reason recorded), torchscript "
         "(dynamo=False) or dynamo (torch >= 2.5 with onnxscript)",
         nullptr,
         {.choices = exporters}},
        {"--no-float64-reference", "no_float64_reference", T::Flag,
         "Skip PyTorch's float64 run of the call, which tells a model that amplifies float32 "
         "rounding from a runtime's mismatch (docs/measurement.md). Made on demand after a "
         "mismatch (the script's process then stays for the benchmark); by the export for "
         "models over 256 MiB, a quarter of its time (bench/export_speed.py: 1.24x bert-base)",
         false}},
       A::PyTorchModel,
       A::OnnxModel,
       true},
      {"optimize-ort",
       ToolGroup::Sequence,
       Status::OptimizationFailed,
       nullptr,
       nullptr,
       "ONNX Runtime offline graph optimization, saved as a new ONNX file",
       {{"--level",
         "level",
         T::String,
         "basic (portable ONNX), extended (ONNX Runtime contrib ops), layout or all (this CPU's "
         "ISA only)",
         "basic",
         {.choices = ort_levels}}},
       A::OnnxModel,
       A::OnnxModel,
       true,
       false,
       nullptr,
       true},
      {"convert-fp16",
       ToolGroup::Sequence,
       Status::Fp16Failed,
       nullptr,
       nullptr,
       "Convert float tensors to float16 (blocked ops stay float32 behind Cast nodes)",
       {{"--no-keep-io-types", "no_keep_io_types", T::Flag,
         "Also make graph inputs and outputs float16", false}},
       A::OnnxModel,
       A::OnnxModel,
       true,
       false,
       nullptr,
       true},
      {"check-onnx",
       ToolGroup::Sequence,
       Status::CheckFailed,
       nullptr,
       nullptr,
       "Check the ONNX model: checker, strict shape inference, ONNX Runtime session",
       {},
       A::OnnxModel,
       A::None,
       true,
       false,
       nullptr,
       true},
      {"python-stage",
       ToolGroup::Sequence,
       Status::StageFailed,
       nullptr,
       nullptr,
       "Run a custom stage written in Python: ONNX file in, ONNX file out (docs/sequences.md; "
       "a Python --sequence-file adds these)",
       {{"--file", "file", T::String,
         "The Python sequence file whose Sequence has the stage (\"\" = the calling Python "
         "process, for the Python API)",
         ""},
        {"--stage", "stage", T::String, "The custom stage's unique_name", ""},
        {"--key", "key", T::String,
         "More of the stage's cache key (the Python side sets its source and parameters)", ""}},
       A::OnnxModel,
       A::OnnxModel,
       true,
       false,
       check_python_stage_together,
       true},
      {"benchmark",
       ToolGroup::Sequence,
       Status::RuntimeLoadFailed,
       nullptr,
       nullptr,
       "Measure latency and throughput on a runtime and device",
       {{"--device",
         "device",
         T::String,
         "Device to benchmark on: x86, nvidia",
         "x86",
         {.choices = device_names}},
        {"--runtime",
         "runtime",
         T::String,
         "Runtime: ort, torch-eager, torchscript, torch-compiled, openvino (availability below "
         "and in system-info)",
         "ort",
         {.check = check_runtime}},
        {"--iterations",
         "iterations",
         T::Int,
         "Timed iterations (the default stop rule; see --duration and --adaptive)",
         kLoop.iterations,
         {.low = 1, .high = 1e8}},
        {"--duration",
         "duration_s",
         T::Float,
         "Time the model for this many seconds instead of a fixed count",
         nullptr,
         {.low = 0, .high = 86400, .low_open = true}},
        {"--adaptive", "adaptive", T::Flag,
         "Stop when the median's 95% CI is within +-CI-TARGET% (between --min-iterations and "
         "--max-iterations, at most --max-duration seconds)",
         false},
        {"--ci-target",
         "ci_target_pct",
         T::Float,
         "Adaptive target: half-width of the median's 95% CI in % of the median",
         kLoop.ci_target * 100,
         {.low = 0, .high = 100, .low_open = true, .high_open = true}},
        {"--min-iterations",
         "min_iterations",
         T::Int,
         "Adaptive: fewest timed iterations",
         kLoop.min_iterations,
         {.low = 1, .high = 1e8}},
        {"--max-iterations",
         "max_iterations",
         T::Int,
         "Adaptive: most timed iterations",
         kLoop.max_iterations,
         {.low = 1, .high = 1e8}},
        {"--max-duration",
         "max_duration_s",
         T::Float,
         "Adaptive: most seconds of timed runs",
         kLoop.max_duration_s,
         {.low = 0, .high = 86400, .low_open = true}},
        {"--warmup",
         "warmup",
         T::Int,
         "Warm-up iterations after the cold run, at least 50 ms of them and more until steady "
         "(0 = none)",
         kLoop.warmup_iterations,
         {.low = 0, .high = 1e8}},
        {"--blocks",
         "blocks",
         T::Int,
         "Cut a fixed count or a duration of timed calls into this many consecutive blocks; the "
         "result's interval for the next run's median is made from their medians (1 = the "
         "median's 95% CI alone; docs/measurement.md)",
         kLoop.blocks,
         {.low = 1, .high = 1000}},
        {"--repetitions",
         "repetitions",
         T::Int,
         "Repeat the load and timed phase this many times in separate sessions, 1 s apart; the "
         "result's interval covers their medians and their blocks' (docs/measurement.md)",
         1,
         {.low = 1, .high = 1000}},
        {"--threads",
         "threads",
         T::Int,
         "Intra-op threads per request (0 = the physical cores this process may use, within any "
         "CPU quota, divided among --concurrency requests; docs/measurement.md)",
         0,
         {.low = 0, .high = 4096}},
        {"--concurrency",
         "concurrency",
         T::IntList,
         "Requests in flight, or a sweep such as 1,2,4 (one result each): sustained throughput "
         "and latency under that load (docs/measurement.md)",
         1,
         {.low = 1, .high = kMaxConcurrency}},
        {"--pin",
         "pin",
         T::String,
         "Pin the benchmark to these CPUs, e.g. 0-1 or 0,2 (the runtime's threads included)",
         "",
         {.check = check_cpu_list}},
        {"--rt-args",
         "rt_args",
         T::List,
         "Runtime arguments key=value (ort: threads, inter_op_threads, "
         "graph_optimization_level=disabled|basic|extended|all, execution_mode; torchscript: "
         "freeze=true, optimize=true; openvino: hint=latency|throughput, streams=N|auto, "
         "pinning=true|false, precision=f32|bf16|f16, reshape=true|false, threads)",
         json::array(),
         {.check = check_runtime_args}},
        {"--max-rel-error",
         "max_rel_error",
         T::Float,
         "Correctness: largest |runtime - PyTorch| / max|PyTorch| per output (default 1e-3, "
         "1e-2 after convert-fp16)",
         nullptr,
         {.low = 0}},
        {"--min-cosine",
         "min_cosine",
         T::Float,
         "Correctness: smallest cosine similarity to PyTorch's outputs (default 0.9999, 0.999 "
         "after convert-fp16)",
         nullptr,
         {.low = -1, .high = 1}},
        {"--profile",
         "profile",
         T::Flag,
         "After the timed phase, profile 10 calls in a separate session with the runtime's "
         "profiler (ort, torch-eager, torch-compiled): time per operator and node",
         false},
        {"--input-data",
         "input_data",
         T::String,
         "Feed these inputs instead of generated ones: a folder of input_N.pb (TensorProto, "
         "graph-input order; output_N.pb beside them are the expected outputs) or an .npz with "
         "arrays named after the inputs (and outputs)",
         "",
         {.check = check_input_data}}},
       A::OnnxModel,
       A::Measurement,
       false,
       true,
       check_benchmark_together},
      {"version", ToolGroup::Management, Status::Crashed, nullptr, nullptr, "Print the turnkey version", {}},
      {"cache",
       ToolGroup::Management,
       Status::Crashed,
       nullptr,
       nullptr,
       "Manage the cache: list, stats (print), delete, clean, location",
       {}},
      {"report",
       ToolGroup::Management,
       Status::Crashed,
       nullptr,
       nullptr,
       "Write CSV, JSON and (--html) HTML reports of one or more caches (alias: cache report)",
       {}},
      {"compare",
       ToolGroup::Management,
       Status::Crashed,
       nullptr,
       nullptr,
       "Compare two caches or JSON reports: ratio of medians with a significance test",
       {}},
      {"models", ToolGroup::Management, Status::Crashed, nullptr, nullptr, "Print where the bundled model corpora are (location)", {}},
      {"system-info",
       ToolGroup::Management,
       Status::Crashed,
       nullptr,
       nullptr,
       "Print CPU, memory, OS, and the versions of ONNX Runtime, torch and onnx found",
       {}},
  };
  return specs;
}

const char* artifact_name(Artifact artifact) {
  switch (artifact) {
    case Artifact::None: return "nothing";
    case Artifact::PyTorchModel: return "a PyTorch model";
    case Artifact::OnnxModel: return "an ONNX model";
    case Artifact::Measurement: return "a measurement";
  }
  return "nothing";
}

const std::vector<std::pair<std::string, std::vector<std::string>>>& named_sequences() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> sequences = {
      {"onnx-fp32", {"export-pytorch"}},
      {"optimize-fp32", {"export-pytorch", "optimize-ort"}},
      // The reference tool's default build: export, optimize, fp16.
      {"optimize-fp16", {"export-pytorch", "optimize-ort", "convert-fp16"}},
      {"check", {"export-pytorch", "check-onnx"}},
  };
  return sequences;
}

const std::vector<std::pair<std::string, std::string>>& tool_aliases() {
  // The reference tool's stage names (its sequence files and `cache stats` show them).
  static const std::vector<std::pair<std::string, std::string>> aliases = {
      {"export_pytorch", "export-pytorch"}, {"optimize_onnx", "optimize-ort"},
      {"fp16_conversion", "convert-fp16"},  {"check_onnx", "check-onnx"},
      {"set_success", ""},
  };
  return aliases;
}

void check_sequence(const std::vector<std::string>& tools) {
  Artifact have = Artifact::None;
  bool have_onnx = false;
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolSpec* spec = find_tool(tools[i]);
    if (!spec || spec->group == ToolGroup::Management) {
      throw Error(ErrorKind::InvalidInput, fmt::format("'{}' is not a build tool", tools[i]));
    }
    if (i == 0 && spec->group != ToolGroup::First) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("'{}' cannot start a sequence: start with a first tool "
                              "(discover, load-onnx, load-build)",
                              spec->name));
    }
    if (i > 0 && spec->group == ToolGroup::First) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("'{}' is a first tool: it can only start a sequence", spec->name));
    }
    bool satisfied = spec->needs == Artifact::None || spec->needs == have ||
                     (spec->needs == Artifact::OnnxModel && have_onnx) ||
                     (spec->takes_pytorch_model && have == Artifact::PyTorchModel);
    if (!satisfied) {
      // The tools that turn what the build has into what this one needs (export-pytorch for a
      // PyTorch model), else every tool that makes it.
      std::string makers, all_makers;
      for (const ToolSpec& s : tool_specs()) {
        if (s.produces != spec->needs || &s == spec) continue;
        all_makers += (all_makers.empty() ? "" : " or ") + s.name;
        if (s.needs == have) makers += (makers.empty() ? "" : " or ") + s.name;
      }
      if (makers.empty()) makers = all_makers;
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{} needs {}: put {} before it", spec->name,
                              artifact_name(spec->needs), makers));
    }
    if (spec->produces != Artifact::None) have = spec->produces;
    if (spec->produces == Artifact::OnnxModel) have_onnx = true;
  }
}

const ToolSpec* first_tool_for_file(const std::string& file) {
  for (const ToolSpec& s : tool_specs()) {
    if (s.input_suffix && file.size() >= std::strlen(s.input_suffix) &&
        file.compare(file.size() - std::strlen(s.input_suffix), std::string::npos,
                     s.input_suffix) == 0) {
      return &s;
    }
  }
  return nullptr;
}

Status failure_status_of_tool(const std::string& tool) {
  const ToolSpec* spec = find_tool(tool);
  return spec ? spec->failure : Status::Crashed;
}

bool tool_in_result_label(const std::string& tool) {
  const ToolSpec* spec = find_tool(tool);
  return !spec || spec->in_result_label;
}

const ToolSpec* find_tool(const std::string& name) {
  for (const ToolSpec& s : tool_specs()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const char* tool_group_title(ToolGroup group) {
  switch (group) {
    case ToolGroup::First: return "First tools (start a sequence)";
    case ToolGroup::Sequence: return "Sequence tools";
    case ToolGroup::Management: return "Management tools";
  }
  return "";
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
      }
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::string best;
  size_t best_d = std::max<size_t>(3, name.size() / 3) + 1;
  for (const std::string& c : candidates) {
    if (c == name) continue;  // never "did you mean" the very word
    size_t d = distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace turnkey
