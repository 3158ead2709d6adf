#include "turnkey/cache/fields.h"

#include <sstream>

namespace turnkey {

const std::vector<StatsField>& field_table() {
  using enum FieldType;
  constexpr FieldScope M = FieldScope::Model, R = FieldScope::Result, B = FieldScope::Build,
                       P = FieldScope::Report;
  // clang-format off
  static const std::vector<StatsField> kFields = {
    // key                     type     scope unit   column               since meaning [label, line, part]
    {"cache",                  Text,    P, "",      "cache",             1, "the cache the row comes from, as given with -d"},
    {"build_name",             Text,    P, "",      "build_name",        1, "build directory name, <stem>_<hash8>"},
    {"script",                 Text,    M, "",      "script",            1, "absolute path of the Python script (empty for ONNX-file inputs)"},
    {"model_name",             Text,    M, "",      "model_name",        1, "variable name of the model in the script, or the ONNX file's stem"},
    {"class",                  Text,    M, "",      "class",             1, "Python class of the model (empty for ONNX files)"},
    {"class_path",             Text,    M, "",      nullptr,             1, "module path of the model's class"},
    {"model_type",             Text,    M, "",      nullptr,             1, "Pytorch (torch.nn.Module), Keras (tf.keras.Model), Keras (tf.keras.layers.Layer) or ONNX file"},
    {"location",               Text,    M, "",      nullptr,             1, "where the script built the model, file:line"},
    {"input",                  Text,    M, "",      nullptr,             1, "the input file the build came from"},
    {"hash",                   Text,    M, "",      "hash",              1, "first 8 hex digits of the model's content hash"},
    {"hash_full",              Text,    M, "",      nullptr,             1, "the model's full content hash"},
    {"labels",                 Text,    M, "",      "labels",            1, "the script's labels, key::value pairs"},
    {"parameters",             Integer, M, "",      "parameters",        1, "number of model parameters"},
    {"parameter_bytes",        Integer, M, "bytes", nullptr,             1, "bytes of the model's parameters"},
    {"inputs",                 Object,  M, "",      nullptr,             1, "the model's inputs as the script called it: [{name, dtype, shape}]"},
    {"torch_version",          Text,    M, "",      nullptr,             1, "PyTorch version of the script's interpreter"},
    {"onnx_python_version",    Text,    M, "",      nullptr,             1, "onnx (Python) version of the exporter"},
    {"onnxscript_version",     Text,    M, "",      nullptr,             7, "onnxscript version of the script's interpreter (the dynamo exporter's), when it has one"},
    {"python_version",         Text,    M, "",      nullptr,             1, "version of the script's interpreter"},
    {"keras_versions",         Text,    M, "",      nullptr,             7, "a Keras model's TensorFlow, Keras and tf2onnx versions (its exporter's), e.g. tensorflow 2.21.0, keras 3.15.1, tf2onnx 1.17.0"},
    {"input_shapes",           Text,    R, "",      "input_shapes",      1, "inputs benchmarked, name:dim1xdim2,... (name:() for a scalar); a result key since schema 4"},
    {"sequence",               Text,    R, "",      "sequence",          1, "tools the build ran, space-separated"},
    {"runtime",                Text,    R, "",      "runtime",           1, "runtime name (ort, ...)"},
    {"runtime_name",           Text,    R, "",      nullptr,             1, "the runtime's display name"},
    {"device",                 Text,    R, "",      "device",            1, "device name (x86, ...)"},
    {"device_name",            Text,    R, "",      "device_name",       1, "the device as the benchmark saw it (CPU model)"},
    {"runtime_version",        Text,    R, "",      "runtime_version",   1, "version of the runtime"},
    {"iterations",             Integer, R, "",      "iterations",        1, "number of timed iterations"},
    {"mean_latency_ms",        Number,  R, "ms",    "mean_latency_ms",   1, "mean latency, ms", "Mean Latency", 1},
    {"median_latency_ms",      Number,  R, "ms",    "median_latency_ms", 1, "median latency, ms", "Latency (ms)", 4},
    {"median_ci_low_ms",       Number,  R, "ms",    "median_ci_low_ms",  1, "lower bound of the 95% CI of the median, ms"},
    {"median_ci_high_ms",      Number,  R, "ms",    "median_ci_high_ms", 1, "upper bound of the 95% CI of the median, ms"},
    {"min_latency_ms",         Number,  R, "ms",    nullptr,             1, "fastest timed iteration, ms"},
    {"max_latency_ms",         Number,  R, "ms",    nullptr,             1, "slowest timed iteration, ms"},
    {"p90_latency_ms",         Number,  R, "ms",    "p90_latency_ms",    1, "90th percentile latency, ms"},
    {"p95_latency_ms",         Number,  R, "ms",    nullptr,             1, "95th percentile latency, ms"},
    {"p99_latency_ms",         Number,  R, "ms",    "p99_latency_ms",    1, "99th percentile latency, ms"},
    {"std_latency_ms",         Number,  R, "ms",    "std_ms",            1, "sample standard deviation of the latency, ms"},
    {"throughput_ips",         Number,  R, "ips",   "throughput_ips",    1, "inferences per second: batch_size * 1000 / mean_latency_ms at concurrency 1; sustained, completed calls * batch_size / the timed window, above it", "Throughput", 2},
    {"peak_memory_bytes",      Integer, R, "bytes", "peak_memory_bytes", 1, "peak resident memory of the whole process holding the model (its own baseline included), during load or run, bytes"},
    {"peak_memory_load_bytes", Integer, R, "bytes", nullptr,             1, "peak resident memory while loading, bytes"},
    {"peak_memory_run_bytes",  Integer, R, "bytes", nullptr,             1, "peak resident memory while timing, bytes"},
    {"memory_before_load_bytes", Integer, R, "bytes", nullptr,           1, "resident memory before loading, bytes"},
    {"max_abs_error",          Number,  R, "",      "max_abs_error",     1, "largest absolute output difference against PyTorch's outputs"},
    {"status",                 Text,    P, "",      "status",            1, "successful, failed, numeric_mismatch (outputs outside tolerance: latency left empty), incomplete or unreadable"},
    {"last_stage",             Text,    P, "",      "last_stage",        1, "the tool the build stopped at (failed in, or last run)"},
    {"error",                  Text,    P, "",      "error",             1, "one-line reason for a failed, incomplete or unreadable build"},
    {"finished_utc",           Text,    P, "",      "finished_utc",      1, "when the build (or this result's latest run) finished, ISO 8601 UTC"},
    {"duplicate_of",           Text,    P, "",      "duplicate_of",      1, "<cache>/<build_name> of the first row with the same measurement"},
    {"cold_latency_ms",        Number,  R, "ms",    "cold_latency_ms",   2, "the first (cold) call, ms"},
    {"cv",                     Number,  R, "",      "cv",                2, "coefficient of variation of the latency, std / mean"},
    {"harness_overhead_ms",    Number,  R, "ms",    "harness_overhead_ms", 2, "median of the same loop around an empty call, ms"},
    {"harness_overhead_fraction", Number, R, "",    nullptr,             2, "harness_overhead_ms / median_latency_ms"},
    {"max_rel_error",          Number,  R, "",      "max_rel_error",     2, "largest max|diff| / max|reference| over the outputs"},
    {"min_cosine",             Number,  R, "",      "min_cosine",        2, "smallest cosine similarity to PyTorch's outputs over the outputs"},
    {"measurement_flags",      TextList, R, "",     "measurement_flags", 2, "why the measurement may not be trusted (busy machine, noise, overhead), '; '-separated"},
    {"noisy",                  Boolean, R, "",      nullptr,             2, "measurement_flags is not empty"},
    {"stop_rule",              Text,    R, "",      nullptr,             2, "iterations, duration or adaptive"},
    {"stop_reason",            Text,    R, "",      nullptr,             2, "why the timed loop stopped"},
    {"timed_s",                Number,  R, "s",     nullptr,             2, "time spent in the timed loop, s"},
    {"warmup_iterations",      Integer, R, "",      nullptr,             2, "warm-up calls made"},
    {"warmup_rounds",          Integer, R, "",      nullptr,             2, "warm-up rounds until steady"},
    {"warmup_steady",          Boolean, R, "",      nullptr,             2, "the warm-up reached a steady state"},
    {"environment",            Object,  R, "",      nullptr,             2, "machine state around the run (load, governor, other runnable threads, usable CPUs and threads, host, Slurm job and node)"},
    {"benchmarked_model",      Text,    R, "",      nullptr,             2, "the ONNX file timed, or 'live PyTorch model'"},
    {"input_source",           Text,    R, "",      nullptr,             2, "captured from the script, test_data_set_0 beside the model, or generated (seeded)"},
    {"percentile_method",      Text,    R, "",      nullptr,             2, "how percentiles are computed"},
    {"throughput_definition",  Text,    R, "",      nullptr,             2, "how throughput_ips is computed"},
    {"correctness",            Object,  R, "",      "correctness",       3, "outputs against PyTorch's (or --input-data's): within_tolerance, within_tolerance_up_to_ties, within_tolerance_on_intermediates (the outputs carry no signal; an intermediate tensor matched), within_tolerance_of_float64 (the model amplifies float32 rounding; the runtime is as close to PyTorch's float64 outputs as PyTorch's float32 ones are; since 10), inconclusive, known_deviation (a mismatch the runtime's or ONNX's maintainers document), outside_tolerance or not_checked", "Correctness", 6, "verdict"},
    // Build fields (no column): what the tools made of the model; recorded since schema 1-3,
    // named by the table since 4.
    {"executed",               Integer, B, "",      nullptr,             1, "how many times the script called the model with this input signature"},
    {"depth",                  Integer, B, "",      nullptr,             1, "nesting depth of the model in the script's calls (0 = top level)"},
    {"first_call_s",           Number,  B, "s",     nullptr,             12, "wall time of the script's first call of the model with this input signature (its forward, in discovery), s; absent when unknown"},
    {"onnx_file",              Text,    B, "",      nullptr,             1, "the ONNX file the facts below describe (the latest the build made or loaded)"},
    {"onnx_file_size_bytes",   Integer, B, "bytes", nullptr,             1, "size of onnx_file, bytes"},
    {"onnx_opset",             Integer, B, "",      nullptr,             1, "default-domain opset of onnx_file"},
    {"onnx_ir_version",        Integer, B, "",      nullptr,             1, "IR version of onnx_file"},
    {"onnx_producer",          Text,    B, "",      nullptr,             1, "producer named in onnx_file"},
    {"onnx_parameters",        Integer, B, "",      nullptr,             1, "parameters stored in onnx_file (identical weights stored once)"},
    {"onnx_parameter_bytes",   Integer, B, "bytes", nullptr,             1, "bytes of the parameters stored in onnx_file"},
    {"onnx_node_count",        Integer, B, "",      nullptr,             1, "nodes in onnx_file's main graph"},
    {"onnx_ops",               Object,  B, "",      nullptr,             1, "op type -> count in onnx_file"},
    {"onnx_checker_note",      Text,    B, "",      nullptr,             1, "what the ONNX checker said of onnx_file, when not clean"},
    {"onnx_inputs",            Object,  B, "",      nullptr,             1, "onnx_file's graph inputs: [{name, dtype, shape}] (symbolic dims by name)"},
    {"onnx_outputs",           Object,  B, "",      nullptr,             1, "onnx_file's graph outputs: [{name, dtype, shape}]"},
    {"export_s",               Number,  B, "s",     nullptr,             1, "time torch.onnx.export took, s"},
    {"opset",                  Integer, B, "",      nullptr,             1, "opset export-pytorch exported at"},
    {"exporter_fixes",         TextList, B, "",     nullptr,             2, "turnkey's own symbolic functions the exported graph used"},
    {"optimize_level",         Text,    B, "",      nullptr,             2, "optimize-ort's level"},
    {"optimize_nodes_before",  Integer, B, "",      nullptr,             2, "nodes before optimize-ort"},
    {"optimize_nodes_after",   Integer, B, "",      nullptr,             2, "nodes after optimize-ort"},
    {"optimized_model_portable", Boolean, B, "",    nullptr,             2, "the optimized model uses no ONNX Runtime contrib ops"},
    {"ort_preoptimized",       Boolean, B, "",      nullptr,             2, "the model was optimized at extended or above: the ort benchmark loads it with optimizations off"},
    {"fp16_ties",              Text,    B, "",      nullptr,             3, "rows ordered by a score that tie in the fp16 comparison"},
    {"fp16_worst_rel_error",   Number,  B, "",      nullptr,             2, "convert-fp16: worst relative error against the fp32 model"},
    {"fp16_worst_cosine",      Number,  B, "",      nullptr,             2, "convert-fp16: worst cosine similarity to the fp32 model"},
    {"fp16_keep_io_types",     Boolean, B, "",      nullptr,             2, "convert-fp16 kept float32 inputs and outputs"},
    {"check_onnx",             Text,    B, "",      nullptr,             2, "check-onnx's verdict: passed, or failed at <stage>: <reason>"},
    {"compile_s",              Number,  B, "s",     nullptr,             3, "torch-compiled: the first call, which compiles, s"},
    {"compile_backend",        Text,    B, "",      nullptr,             3, "torch-compiled: torch.compile's backend"},
    {"compile_mode",           Text,    B, "",      nullptr,             3, "torch-compiled: torch.compile's mode"},
    {"compile_fullgraph",      Boolean, B, "",      nullptr,             3, "torch-compiled: fullgraph"},
    {"compile_dynamic",        Text,    B, "",      nullptr,             3, "torch-compiled: dynamic (true, false or auto)"},
    {"compiled_graphs",        Integer, B, "",      nullptr,             3, "torch-compiled: graphs compiled"},
    {"graph_breaks",           Integer, B, "",      nullptr,             3, "torch-compiled: graph breaks"},
    {"graph_break_reasons",    TextList, B, "",     nullptr,             3, "torch-compiled: one line per graph break reason, with its count"},
    {"threads",                Integer, R, "",      "threads",           4, "threads the runtime used (a result setting)"},
    {"pinned_cpus",            Text,    R, "",      "pinned_cpus",       4, "CPUs the benchmark was pinned to, e.g. 0-1 (empty: not pinned; a result setting)"},
    {"runs",                   Integer, P, "",      "runs",              4, "how many runs this result has seen (its history plus the latest)"},
    {"median_history_ms",      Text,    P, "",      "median_history_ms", 4, "the result's median latency over its runs, oldest first, space-separated, ms"},
    // Issue 18: memory that belongs to the model, repetitions, the machine-speed probe.
    {"model_memory_bytes",     Integer, R, "bytes", "model_memory_bytes", 5, "memory the model added to the holding process: the larger of model_memory_load_bytes and model_memory_run_bytes, bytes", "Model memory", 5},
    {"model_memory_load_bytes", Integer, R, "bytes", nullptr,            5, "peak resident memory while loading minus the resident memory just before, bytes"},
    {"model_memory_run_bytes", Integer, R, "bytes", nullptr,             5, "peak resident memory while running minus the resident memory just before loading, bytes"},
    {"repetitions",            Integer, R, "",      "repetitions",       5, "separate sessions the timed phase ran in (--repetitions)"},
    {"repetition_medians_ms",  Object,  R, "ms",    nullptr,             5, "each repetition's median latency, ms, in order"},
    {"repetition_spread_pct",  Number,  R, "",      "repetition_spread_pct", 5, "(largest - smallest repetition median) / median, in %"},
    {"median_interval_low_ms", Number,  R, "ms",    "median_interval_low_ms", 5, "lower end of the interval for the next run's median: the prediction interval from the block medians (from four blocks on, the one farthest from their median left out of the spread), widened to hold every 95% CI of the median, joined with the prediction interval from the medians of this and earlier runs on this host when there are any (median_interval_method), ms"},
    {"median_interval_high_ms", Number, R, "ms",    "median_interval_high_ms", 5, "upper end of that interval, ms"},
    {"speed_probe_ms",         Number,  R, "ms",    "speed_probe_ms",    5, "the slowest machine-speed probe of the run (before and after each timed phase), ms"},
    {"speed_probes_ms",        Object,  R, "ms",    nullptr,             5, "every probe of the run, before and after each repetition's timed phase, ms"},
    {"speed_probe_best_ms",    Number,  R, "ms",    "speed_probe_best_ms", 5, "the fastest probe this machine had shown for the same threads and CPUs, this run's included, ms"},
    {"speed_slowdown",         Number,  R, "",      "speed_slowdown",    5, "speed_probe_ms / speed_probe_best_ms - 1: how much slower the machine ran than its best"},
    {"cpu_throttled_ms",       Number,  R, "ms",    "cpu_throttled_ms",  5, "time the process's cgroups waited for CPU quota during the timed phases, ms (empty: no cgroup cpu.stat readable)"},
    // Issue 20: the runtime's own per-operator profile (benchmark --profile).
    {"profile",                Object,  R, "",      "profile_top_ops",   5, "benchmark --profile: the runtime's profiler over 10 calls in a separate session after the timed phase (docs/measurement.md): profiler, calls, node_time_ms, run_time_ms, by_op_type and by_node (top 10: total_ms and share of node_time_ms), raw_file; the column: the top op types with their shares", "Profile", 7, "summary", true},
    // Issue 20: load time, requests in flight, sweeps.
    {"load_s",                 Number,  R, "s",     "load_s",            6, "loading the model on the runtime (Runtime::load / load_live: ort session creation; torchscript trace + torch::jit::load; torch-compiled torch.compile and its compiling call), s", "Load time", 3},
    {"jit_load_s",             Number,  R, "s",     nullptr,             6, "torchscript: torch::jit::load (and freeze/optimize) alone, s; load_s adds the trace"},
    {"concurrency",            Integer, R, "",      "concurrency",       6, "requests in flight (--concurrency; 1 = one call at a time; a result setting)"},
    {"sessions",               Integer, R, "",      "sessions",          6, "sessions loaded for the requests in flight: 1 (shared by the callers) or one per request"},
    {"batch_size",             Integer, R, "",      "batch_size",        6, "first dim of the first input when it has rank >= 2, else 1; the script's parsed batch_size where another input's first dim says it and the first input's does not (since 12)"},
    // Issue 34: the nvidia device (docs/gpu.md): torch runtimes only; no column until a schema
    // adds one.
    {"device_memory_allocated_bytes", Integer, R, "bytes", nullptr,      7, "nvidia: peak bytes torch's CUDA allocator handed out from loading to the end of the timing (weights, inputs, activations, workspaces; not the CUDA context), bytes"},
    {"device_memory_reserved_bytes", Integer, R, "bytes", nullptr,       7, "nvidia: peak bytes torch's CUDA allocator held from the driver over the same span, bytes"},
    {"tf32_matmul",            Boolean, R, "",      nullptr,             7, "nvidia: float32 matmuls could use TF32 (torch.get_float32_matmul_precision() not 'highest')"},
    {"tf32_cudnn",             Boolean, R, "",      nullptr,             7, "nvidia: cuDNN float32 convolutions could use TF32 (torch.backends.cudnn.allow_tf32)"},
    {"exporter",               Text,    R, "",      "exporter",          7, "the exporter that wrote the ONNX file: torchscript or dynamo (--exporter auto tries torch's default first; the field since 1, its column since 7; a result setting since 7); tf2onnx for a Keras model"},
    {"exporter_version",       Text,    B, "",      "exporter_version",  7, "what the exporter was: torch's version, and onnxscript's for the dynamo exporter (ending in '; the graph not optimized: ...' where onnxscript's optimizer was stopped at its budget or not run); tf2onnx's, TensorFlow's and Keras's for a Keras model"},
    {"exporter_fallback",      Text,    B, "",      "exporter_fallback", 7, "why the exporters tried before the last failed (--exporter auto), whether the last wrote the file or failed too; empty when the first succeeded"},
    {"float64_left_out",       Text,    B, "",      nullptr,             11, "why PyTorch's float64 outputs (the reference for a model that amplifies float32 rounding, docs/measurement.md) were not made when they were asked for: '2.3 GB of float weights', 'over its 300 s budget (TURNKEY_FLOAT64_BUDGET_S)', the run's error; empty when made or not asked for; a mismatch's line names it"},
    {"exporter_warning",       Text,    B, "",      nullptr,             9, "the exporter's own warning that its graph computes other values than PyTorch for some inputs (torch.onnx: advanced indexing with negative indices), when it gave one; a numeric mismatch's line names it"},
    {"flag_codes",             TextList, R, "",     "flag_codes",        8, "the codes of measurement_flags, in order (docs/measurement.md: threads_exceed_cores, machine_busy, noisy, machine_slowed, ...)"},
    // Issue 30: the openvino runtime's compiled model (docs/measurement.md); no column.
    {"openvino_hint",          Text,    R, "",      nullptr,             8, "openvino: the performance hint it compiled with: LATENCY (one request) or THROUGHPUT (--concurrency > 1, or --rt-args hint=)"},
    {"openvino_streams",       Integer, R, "",      nullptr,             8, "openvino: the streams (parallel executors) the compiled model has"},
    {"openvino_inference_threads", Integer, R, "", nullptr,             8, "openvino: the threads the compiled model's streams share"},
    {"openvino_optimal_requests", Integer, R, "",  nullptr,             8, "openvino: the infer requests OpenVINO says keep its streams busy (benchmark_app's default -nireq)"},
    {"openvino_precision",     Text,    R, "",      nullptr,             8, "openvino: the inference precision (f32 unless --rt-args precision=; OpenVINO's own default is bf16 on CPUs with AVX-512 BF16 or AMX)"},
    {"openvino_pinning",       Boolean, R, "",      nullptr,             8, "openvino: whether its threads are pinned to cores (ENABLE_CPU_PINNING)"},
    {"openvino_read_s",        Number,  R, "s",     nullptr,             8, "openvino: reading the ONNX file (and fixing dynamic dims), s; load_s adds the compile"},
    {"openvino_compile_s",     Number,  R, "s",     nullptr,             8, "openvino: compile_model for CPU, s"},
    {"openvino_reshaped",      Boolean, R, "",      nullptr,             8, "openvino: dynamic input dims were fixed to the benchmarked shapes before compiling"},
    // Issue 32: the interval for the next run's median, from the timed phase's blocks
    // (docs/measurement.md "The interval"); no column.
    {"blocks",                 Integer, R, "",      nullptr,             8, "consecutive blocks the timed calls were cut into, over all repetitions (--blocks, default 5 per repetition; 1 for --adaptive and requests in flight)"},
    {"block_medians_ms",       Object,  R, "ms",    nullptr,             8, "each block's median latency, in call order, ms"},
    {"median_interval_method", Text,    R, "",      nullptr,             8, "how median_interval_low_ms/_high_ms were made, in words"},
    // Issue 32: what varies between runs, from the result's earlier runs on the same host.
    {"earlier_medians_ms",     Object,  R, "ms",    nullptr,             8, "the medians of this result's earlier runs on this host (environment.host), most recent last, at most 10, ms: carried forward by each run of the result in the build"},
    {"median_interval_runs",   Integer, R, "",      nullptr,             8, "run medians the interval for the next run's median was made from: this run's and earlier_medians_ms (1: this run alone, which cannot see what varies between runs)"},
    {"within_run_interval_low_ms", Number, R, "ms", nullptr,             8, "lower end of the interval for the next run's median from this run alone (its blocks and CIs), ms: what the noisy flag reads"},
    {"within_run_interval_high_ms", Number, R, "ms", nullptr,            8, "upper end of that within-run interval, ms"},
  };
  // clang-format on
  return kFields;
}

const StatsField* find_field(std::string_view key) {
  for (const StatsField& f : field_table()) {
    if (key == f.key) return &f;
  }
  return nullptr;
}

namespace {

// The tools of a sequence a label names (those that change or check the model beyond the first
// tool and the export: the catalog's rows): "discover export-pytorch optimize-ort convert-fp16
// benchmark" -> "optimize-ort+convert-fp16".
std::string labelled_tools(const std::string& sequence, const LabelledTool& labelled) {
  std::string out, tool;
  std::istringstream in(sequence);
  while (in >> tool) {
    if (!labelled(tool)) continue;
    if (!out.empty()) out += '+';
    out += tool;
  }
  return out;
}

}  // namespace

const std::vector<ResultSetting>& result_setting_table() {
  static const std::vector<ResultSetting> kSettings = {
      {"runtime", nullptr, nullptr, "", true},
      {"device", nullptr, nullptr, "", true},
      {"threads", "threads", "threads", "", true},
      {"pinned_cpus", "pin", "pin", "", true},
      {"input_shapes", "shapes", "shapes", "", true},
      {"sequence", "sequence", "seq", "", true, labelled_tools},
      {"concurrency", "concurrency", "concurrency", "1", false},
      {"exporter", "exporter", "exporter", "", false, nullptr, true},
  };
  return kSettings;
}

const std::vector<std::string>& result_settings() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const ResultSetting& s : result_setting_table()) names.push_back(s.field);
    return names;
  }();
  return kNames;
}

bool setting_is_set(const ResultSetting& setting, const std::string& value) {
  return !value.empty() && value != setting.unset;
}

std::string settings_key(const std::function<std::string(const char* field)>& value_of) {
  std::string key;
  for (const ResultSetting& s : result_setting_table()) {
    const std::string v = value_of(s.field);
    if (!s.always_in_key && !setting_is_set(s, v)) continue;
    if (!key.empty()) key += ' ';
    key += s.key_name ? std::string(s.key_name) + "=" + v : v;
  }
  return key;
}

std::string settings_label(const std::function<std::string(const char* field)>& value_of,
                           const LabelledTool& labelled) {
  std::string label;
  for (const ResultSetting& s : result_setting_table()) {
    if (!s.label) continue;
    const std::string raw = value_of(s.field);
    if (!setting_is_set(s, raw)) continue;
    const std::string v = s.label_value ? s.label_value(raw, labelled) : raw;
    if (v.empty()) continue;
    if (!label.empty()) label += ' ';
    label.append(s.label).append("=").append(v);
  }
  return label;
}

}  // namespace turnkey
