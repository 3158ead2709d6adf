// The bodies of the sequence tools. The engine (engine.cpp) runs them in order, times them,
// writes their logs and state, and decides when a cached result can be reused.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "build.h"
#include "turnkey/build/build_stages.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/engine/status.h"
#include "turnkey/engine/tools.h"
#include "turnkey/measure/loop.h"
#include "turnkey/measure/statistics.h"
#include "turnkey/measure/system_info.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kDefaultOpset = 17;

int resolve_opset(const json& options) {
  if (options.contains("opset") && options["opset"].is_number_integer()) {
    int opset = options["opset"].get<int>();
    if (opset < 7 || opset > 30) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("--opset {}: expected an ONNX opset from 7 to 30", opset));
    }
    return opset;
  }
  return static_cast<int>(env_int("TURNKEY_ONNX_OPSET", 7, 30).value_or(kDefaultOpset));
}

void record_facts(json& s, const onnx_model::ModelFacts& facts) {
  s["onnx_file"] = facts.path.string();
  s["onnx_file_size_bytes"] = facts.file_size_bytes;
  s["onnx_opset"] = facts.opset;
  s["onnx_ir_version"] = facts.ir_version;
  s["onnx_producer"] = facts.producer;
  // What the file holds: the exporter stores identical weights once (untrained models, or a
  // TransformerEncoder's deep-copied layers), so this can be far below the model's count.
  s["onnx_parameters"] = facts.parameters;
  s["onnx_parameter_bytes"] = facts.parameter_bytes;
  // The model's own count (PyTorch's, from discovery) stays; an ONNX input has only the file's.
  if (!s.contains("parameters")) {
    s["parameters"] = facts.parameters;
    s["parameter_bytes"] = facts.parameter_bytes;
  }
  s["onnx_node_count"] = facts.node_count;
  s["onnx_ops"] = facts.op_histogram;
  if (!facts.checker_note.empty()) s["onnx_checker_note"] = facts.checker_note;
  auto describe = [](const std::vector<onnx_model::ValueInfo>& values) {
    json out = json::array();
    for (const auto& v : values) {
      json dims = json::array();
      for (const auto& d : v.dims) {
        if (d.known()) dims.push_back(d.value);
        else dims.push_back(d.param.empty() ? "?" : d.param);
      }
      out.push_back({{"name", v.name}, {"dtype", v.onnx_type}, {"shape", dims}});
    }
    return out;
  };
  s["onnx_inputs"] = describe(facts.inputs);
  s["onnx_outputs"] = describe(facts.outputs);
}

// Inputs shipped with an ONNX file in the ONNX test-data layout (the model zoo's and the
// backend tests'): test_data_set_0/input_N.pb beside the model.
std::vector<HostTensor> shipped_inputs(const fs::path& model,
                                       const onnx_model::ModelFacts& facts) {
  const fs::path dir = model.parent_path() / "test_data_set_0";
  std::error_code ec;
  if (model.empty() || !fs::is_directory(dir, ec)) return {};
  std::vector<fs::path> files;
  for (size_t i = 0; i < facts.inputs.size(); ++i) {
    files.push_back(dir / fmt::format("input_{}.pb", i));
  }
  return matching_inputs(files, facts);
}

}  // namespace

const onnx_model::ModelFacts& ensure_facts(Build& build) {
  if (!build.facts || build.facts->path != build.onnx_path) {
    build.facts = onnx_model::load_facts(build.onnx_path);
    record_facts(build.stats, *build.facts);
  }
  return *build.facts;
}

std::vector<HostTensor> matching_inputs(const std::vector<fs::path>& files,
                                        const onnx_model::ModelFacts& facts) {
  std::vector<HostTensor> inputs;
  if (files.size() != facts.inputs.size()) return inputs;
  try {
    for (size_t i = 0; i < files.size(); ++i) {
      HostTensor t = onnx_model::read_tensor_pb(files[i]);
      const auto& want = facts.inputs[i];
      bool ok = t.dtype == want.dtype && (!want.has_shape || t.shape.size() == want.dims.size());
      for (size_t d = 0; ok && want.has_shape && d < want.dims.size(); ++d) {
        if (want.dims[d].known() && want.dims[d].value != t.shape[d]) ok = false;
      }
      if (!ok) return {};
      t.name = want.name;
      inputs.push_back(std::move(t));
    }
  } catch (const Error&) {
    return {};
  }
  return inputs;
}

void prepare_inputs(Build& build) {
  const onnx_model::ModelFacts& facts = ensure_facts(build);
  auto overrides = onnx_model::parse_input_shapes(build.input_shapes);
  if (overrides.empty()) {
    // An fp16 model with kept io types, or an optimized one, has the same inputs as the export.
    build.inputs = matching_inputs(build.input_pbs, facts);
    if (!build.inputs.empty() || (facts.inputs.empty() && !build.input_pbs.empty())) {
      build.stats["input_source"] = "captured from the script";
      return;
    }
    build.inputs = shipped_inputs(build.source_input, facts);
    if (!build.inputs.empty()) {
      build.stats["input_source"] = "test_data_set_0 beside the model";
      return;
    }
  }
  auto shapes = onnx_model::resolve_input_shapes(facts, overrides);
  build.inputs = onnx_model::generate_inputs(facts, shapes);
  build.stats["input_source"] = "generated (seeded)";
}

std::string describe_onnx_inputs(const onnx_model::ModelFacts& facts) {
  std::string s;
  for (const auto& in : facts.inputs) {
    if (!s.empty()) s += ", ";
    std::string dims;
    for (size_t i = 0; i < in.dims.size(); ++i) {
      if (i) dims += ", ";
      dims += in.dims[i].known() ? std::to_string(in.dims[i].value)
                                 : (in.dims[i].param.empty() ? "?" : in.dims[i].param);
    }
    if (in.dims.size() == 1) dims += ",";
    s += fmt::format("'{}': ({})", in.name, dims);
  }
  return s;
}

json resolve_options(const std::string& tool, json options) {
  if (tool == "export-pytorch") {
    options["opset"] = resolve_opset(options);
    const std::string exporter = options.value("exporter", "torchscript");
    if (exporter != "torchscript" && exporter != "dynamo") {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("--exporter {}: expected torchscript or dynamo", exporter));
    }
    if (exporter == "torchscript") options.erase("exporter");  // the default: one cache key
  }
  if (tool == "optimize-ort") build::parse_ort_opt_level(options.value("level", "basic"));
  if (tool == "discover" && !options.value("build_name", std::string()).empty() &&
      !is_safe_build_name(options.value("build_name", std::string()))) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("--build-name '{}': not a usable directory name",
                            options.value("build_name", std::string())));
  }
  if (tool == "discover" && options.value("max_depth", 0) < 0) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("--max-depth {}: must be 0 or more", options.value("max_depth", 0)));
  }
  return options;
}

std::string tool_versions(const std::string& tool, const Build& build) {
  if (tool == "export-pytorch") {
    // The revision of python/turnkeyml/discovery/exporter_fixes.py: a new fix changes the ONNX
    // files exports write, so exports made before it are rebuilt.
    constexpr int kExporterFixesRevision = 1;
    return fmt::format("torch {}, onnx {}, exporter fixes {}",
                       build.stats.value("torch_version", "?"),
                       build.stats.value("onnx_python_version", "?"), kExporterFixesRevision);
  }
  const Runtime* ort = find_runtime("ort");
  std::string ort_version = ort ? ort->version() : "?";
  if (tool == "optimize-ort") return "onnxruntime " + ort_version;
  if (tool == "check-onnx") {
    return fmt::format("libonnx {}, onnxruntime {}", onnx_model::libonnx_version(), ort_version);
  }
  return fmt::format("libonnx {}", onnx_model::libonnx_version());
}

// ---- export-pytorch ---------------------------------------------------------------------------

void tool_export_pytorch(Build& build, const json& options, std::string& log) {
  if (!build.session || !build.model) {
    throw Error(ErrorKind::Export, "no live PyTorch model (export-pytorch follows discover)");
  }
  const int opset = resolve_opset(options);
  const fs::path onnx_dir = build.dir->path() / "onnx";
  const fs::path io_dir = build.dir->path() / "io";
  fs::create_directories(onnx_dir);
  fs::create_directories(io_dir);
  const fs::path target =
      onnx_dir / fmt::format("{}-op{}-base.onnx", build.build_name, opset);
  const std::string exporter = options.value("exporter", "torchscript");
  ExportResult r = build.session->export_model(build.model->id, target, opset, io_dir, exporter);
  log += fmt::format("opset {}, exporter {}\n", opset, exporter);
  if (!r.log.empty()) log += r.log + "\n";
  if (!r.ok) {
    if (!r.traceback.empty()) log += r.traceback + "\n";
    if (env_bool("TURNKEY_TRACEBACK", false) && !r.traceback.empty()) {
      std::fprintf(stderr, "%s", r.traceback.c_str());
    }
    throw Error(ErrorKind::Export, r.error.empty() ? "export failed" : r.error);
  }
  log += fmt::format("exported {} in {:.3f} s\n", r.onnx_path.string(), r.export_s);
  build.onnx_path = r.onnx_path;
  build.input_pbs = r.inputs;
  build.output_pbs = r.outputs;
  if (!r.exporter_fixes.empty()) {
    log += fmt::format("turnkey's exporter fixes in this graph: {}\n",
                       fmt::join(r.exporter_fixes, ", "));
  }
  build.stats["export_s"] = r.export_s;
  build.stats["opset"] = opset;
  build.stats["exporter"] = exporter;
  build.stats["exporter_fixes"] = r.exporter_fixes;
}

// ---- build stages (src/build/) ----------------------------------------------------------------

namespace {

// Whole-shape overrides for comparing two models on the inputs this build benchmarks with.
onnx_model::InputShapes shapes_of_prepared_inputs(Build& build) {
  prepare_inputs(build);
  onnx_model::InputShapes shapes;
  for (const HostTensor& t : build.inputs) shapes[t.name] = t.shape;
  return shapes;
}

}  // namespace

void tool_optimize_ort(Build& build, const json& options, std::string& log) {
  const build::OrtOptLevel level = build::parse_ort_opt_level(options.value("level", "basic"));
  const fs::path output = build.dir->path() / "onnx" /
                          fmt::format("{}-opt-{}.onnx", build.build_name,
                                      build::ort_opt_level_name(level));
  fs::create_directories(output.parent_path());
  build::OptimizeResult r = build::optimize_ort(build.onnx_path, output, level);
  log += fmt::format("optimized {} at level {}\nnodes {} -> {}\nportable: {}{}\n{:.1f} ms\n",
                     build.onnx_path.string(), build::ort_opt_level_name(level), r.nodes_before,
                     r.nodes_after, r.portable ? "yes" : "no (ONNX Runtime contrib ops)",
                     r.external_data.empty() ? "" : ", external data " + r.external_data,
                     r.duration_ms);
  build.onnx_path = output;
  build.stats["optimize_level"] = build::ort_opt_level_name(level);
  build.stats["optimize_nodes_before"] = r.nodes_before;
  build.stats["optimize_nodes_after"] = r.nodes_after;
  build.stats["optimized_model_portable"] = r.portable;
  // ONNX Runtime 1.29 fails to optimize some models again that it optimized at extended and
  // above; they need no more, so the benchmark loads them with optimizations off.
  build.stats["ort_preoptimized"] = level != build::OrtOptLevel::Basic;
}

void tool_convert_fp16(Build& build, const json& options, std::string& log) {
  build::Fp16Options fp16;
  fp16.keep_io_types = !options.value("no_keep_io_types", false);
  const fs::path reference = build.onnx_path;
  const fs::path output = build.dir->path() / "onnx" / (build.build_name + "-fp16.onnx");
  fs::create_directories(output.parent_path());
  const onnx_model::InputShapes shapes = shapes_of_prepared_inputs(build);
  build::Fp16Result r = build::convert_fp16(reference, output, fp16);
  log += fmt::format("converted {} to float16\nnodes {} -> {} ({} Casts added), {} in float16\n",
                     reference.string(), r.nodes_before, r.nodes_after, r.casts_added,
                     r.nodes_fp16);
  for (const auto& [op, n] : r.kept_fp32_ops) log += fmt::format("kept float32: {} x{}\n", op, n);
  if (r.values_clamped || r.values_raised) {
    log += fmt::format("values clamped to +-65504: {}, raised to +-2^-24: {}\n", r.values_clamped,
                       r.values_raised);
  }
  // The fp16 model must still compute the same function: compared with the fp32 model on the
  // benchmark's inputs (tolerance in docs/build_stages.md).
  build::CompareOptions compare;
  compare.shapes = shapes;
  compare.optimize_reference = !build.stats.value("ort_preoptimized", false);
  build::Comparison c = build::compare_models(reference, output, compare);
  log += fmt::format("against float32: worst relative error {:.3g}, worst cosine {:.6f}\n",
                     c.worst_rel_error, c.worst_cosine);
  if (const std::string ties = build::describe_ties(c); !ties.empty()) {
    log += "rows ordered by a score: " + ties + (c.inconclusive ? " (inconclusive)\n" : "\n");
    build.stats["fp16_ties"] = ties;
  }
  build.stats["fp16_worst_rel_error"] = c.worst_rel_error;
  build.stats["fp16_worst_cosine"] = c.worst_cosine;
  build.stats["fp16_keep_io_types"] = fp16.keep_io_types;
  if (!c.within) {
    throw Error(ErrorKind::Export,
                fmt::format("float16 outputs outside tolerance: relative error {:.3g} (max {}), "
                            "cosine {:.6f} (min {})",
                            c.worst_rel_error, compare.tolerance.max_rel_error, c.worst_cosine,
                            compare.tolerance.min_cosine));
  }
  build.onnx_path = output;
  build.stats["ort_preoptimized"] = false;
}

void tool_check_onnx(Build& build, const json&, std::string& log) {
  build::CheckVerdict v = build::check_onnx(build.onnx_path);
  log += fmt::format("{}: {} ({:.1f} ms)\n", v.passed ? "passed" : "failed at " + v.stage, v.reason,
                     v.duration_ms);
  build.stats["check_onnx"] = v.passed ? "passed" : "failed at " + v.stage + ": " + v.reason;
  if (!v.passed) throw Error(ErrorKind::InvalidInput, fmt::format("{}: {}", v.stage, v.reason));
}

// ---- benchmark --------------------------------------------------------------------------------

namespace {

LoopOptions loop_options(const json& opts) {
  LoopOptions lo;
  lo.iterations = opts.value("iterations", int64_t{100});
  lo.warmup_iterations = opts.value("warmup", int64_t{10});
  // An explicit --warmup 0 means no warm-up at all (cold measurements on purpose).
  if (lo.warmup_iterations == 0) lo.min_warmup_s = 0;
  lo.max_warmup_iterations = std::max(lo.max_warmup_iterations, lo.warmup_iterations);
  const bool adaptive = opts.value("adaptive", false);
  const bool has_duration = opts.contains("duration_s") && !opts["duration_s"].is_null();
  if (adaptive && has_duration) {
    throw Error(ErrorKind::InvalidInput, "--adaptive and --duration exclude each other");
  }
  if (adaptive) {
    lo.rule = StopRule::Adaptive;
    lo.ci_target = opts.value("ci_target_pct", 2.0) / 100.0;
    lo.min_iterations = opts.value("min_iterations", int64_t{10});
    lo.max_iterations = opts.value("max_iterations", int64_t{100000});
    lo.max_duration_s = opts.value("max_duration_s", 60.0);
  } else if (has_duration) {
    lo.rule = StopRule::Duration;
    lo.duration_s = opts["duration_s"].get<double>();
  }
  validate_loop_options(lo);
  return lo;
}

// Tolerance of a runtime's outputs against PyTorch's: fp32 builds are held to 1e-3 relative error
// and cosine 0.9999; fp16 builds to the fp16 conversion's own tolerance (docs/measurement.md);
// --max-rel-error / --min-cosine replace either bound.
build::Tolerance output_tolerance(const Build& build, const json& opts) {
  build::Tolerance tol = build.stats.contains("fp16_worst_rel_error") ? build::Tolerance{}
                                                                      : build::Tolerance{1e-3, 0.9999};
  const auto given = [&](const char* key) { return opts.contains(key) && !opts[key].is_null(); };
  if (given("max_rel_error")) {
    tol.max_rel_error = opts["max_rel_error"].get<double>();
    if (!std::isfinite(tol.max_rel_error) || tol.max_rel_error < 0) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("--max-rel-error {}: expected a number >= 0", tol.max_rel_error));
    }
  }
  if (given("min_cosine")) {
    tol.min_cosine = opts["min_cosine"].get<double>();
    if (!(tol.min_cosine >= -1 && tol.min_cosine <= 1)) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("--min-cosine {}: expected a number from -1 to 1", tol.min_cosine));
    }
  }
  return tol;
}

std::vector<int> parse_cpu_list_option(const std::string& text) {
  return text.empty() ? std::vector<int>{} : parse_cpu_list(text);
}

std::vector<HostTensor> read_outputs(const std::vector<fs::path>& files) {
  std::vector<HostTensor> out;
  for (const fs::path& f : files) out.push_back(onnx_model::read_tensor_pb(f));
  return out;
}

struct Judgement {
  std::string line;  // for the block and the log
  bool mismatch = false;
};

// A runtime's outputs against the PyTorch outputs saved at export (docs/measurement.md):
// writes `correctness` (with its verdict) and the error fields into the build's stats.
Judgement judge_outputs(Build& build, const std::vector<HostTensor>& outputs,
                        const build::Tolerance& tol) {
  json& s = build.stats;
  if (build.output_pbs.empty()) {
    s["correctness"] = {{"reference", "none (no PyTorch outputs: an ONNX input)"},
                        {"verdict", "not_checked"}};
    return {"not checked (no PyTorch outputs saved for this model)", false};
  }
  build::Comparison c;
  std::string compare_error;
  try {
    c = build::compare_outputs(read_outputs(build.output_pbs), outputs, tol);
  } catch (const Error& err) {
    compare_error = err.what();
  }
  json per_output = json::array();
  double worst_abs = 0;
  std::string int_mismatches;
  for (const auto& d : c.outputs) {
    per_output.push_back({{"name", d.name},
                          {"max_abs_error", d.max_abs_error},
                          {"max_rel_error", d.rel_error},
                          {"cosine", d.cosine},
                          {"within", d.within}});
    if (d.mismatches > 0) per_output.back()["mismatched_elements"] = d.mismatches;
    if (d.reordered_rows > 0) per_output.back()["reordered_rows"] = d.reordered_rows;
    if (d.substituted_rows > 0) per_output.back()["substituted_rows"] = d.substituted_rows;
    worst_abs = std::max(worst_abs, d.max_abs_error);
    if (!d.within && d.mismatches > 0) {
      int_mismatches += fmt::format("; '{}': {} elements differ", d.name, d.mismatches);
    }
  }
  const bool within = compare_error.empty() && c.within;
  const std::string ties = build::describe_ties(c);
  const char* verdict = !within          ? "outside_tolerance"
                        : c.inconclusive ? "inconclusive"
                        : ties.empty()   ? "within_tolerance"
                                         : "within_tolerance_up_to_ties";
  s["correctness"] = {{"reference", "PyTorch outputs saved at export"},
                      {"tolerance_max_rel_error", tol.max_rel_error},
                      {"tolerance_min_cosine", tol.min_cosine},
                      {"outputs", per_output},
                      {"within", within},
                      {"verdict", verdict}};
  if (!compare_error.empty()) s["correctness"]["error"] = compare_error;
  if (!ties.empty()) s["correctness"]["ties"] = ties;
  s["max_abs_error"] = worst_abs;
  s["max_rel_error"] = c.worst_rel_error;
  s["min_cosine"] = c.worst_cosine;

  if (!compare_error.empty()) return {compare_error, true};
  const std::string errors = fmt::format(
      "max abs error {:.3g}, max rel error {:.3g}, cosine {:.6f} (tolerance {:g} / {:g}){}",
      worst_abs, c.worst_rel_error, c.worst_cosine, tol.max_rel_error, tol.min_cosine,
      int_mismatches);
  if (c.inconclusive) {
    // Which of several tied rows a runtime keeps is its own choice; a wrong output that kept
    // the scores right would look the same, so this is neither a pass nor a mismatch.
    return {fmt::format("inconclusive: {} (a runtime may keep any of tied rows); {}: {}", ties,
                        c.substituted_rows == c.ordered_rows ? "the other outputs" : "the rest",
                        errors),
            false};
  }
  return {ties.empty() ? errors : errors + "; " + ties, !within};
}

// Pins the calling thread (and so the threads a runtime creates from it) to `cpus` for its
// lifetime, then restores the previous set.
class ScopedPin {
 public:
  explicit ScopedPin(const std::vector<int>& cpus) {
    if (cpus.empty()) return;
    CPU_ZERO(&saved_);
    if (sched_getaffinity(0, sizeof(saved_), &saved_) != 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) CPU_SET(c, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      throw Error(ErrorKind::InvalidInput, "--pin: the kernel refused the CPU set");
    }
    active_ = true;
  }
  ~ScopedPin() {
    if (active_) sched_setaffinity(0, sizeof(saved_), &saved_);
  }
  ScopedPin(const ScopedPin&) = delete;
  ScopedPin& operator=(const ScopedPin&) = delete;

 private:
  cpu_set_t saved_;
  bool active_ = false;
};

}  // namespace

void tool_benchmark(Build& build, const json& opts, std::string& log) {
  const std::string runtime_name = opts.value("runtime", "ort");
  const std::string device = opts.value("device", "x86");
  // Recorded first, so a failed benchmark still says what it tried.
  build.stats["runtime"] = runtime_name;
  build.stats["device"] = device;
  const Runtime* runtime = find_runtime(runtime_name);
  if (!runtime) {
    std::string hint = closest_name(runtime_name, runtime_names());
    throw Error(ErrorKind::InvalidInput,
                fmt::format("unknown runtime '{}'{}", runtime_name,
                            hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
  }
  const Device* dev = find_device(device);
  if (!dev) {
    std::vector<std::string> names;
    for (const Device& d : device_registry()) names.push_back(d.name);
    std::string hint = closest_name(device, names);
    throw Error(ErrorKind::InvalidInput,
                fmt::format("unknown device '{}' (known: {}){}", device, fmt::join(names, ", "),
                            hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)));
  }
  if (Availability d = dev->probe(); !d.available) {
    throw Error(ErrorKind::Runtime, fmt::format("device {}: unavailable: {}", device, d.reason));
  }
  // Python-side runtimes answer for the run's own interpreter and process (PythonSide).
  const PythonSide python_side{build.session ? build.session->python() : "", build.session};
  const std::string runtime_version = runtime->version_for(python_side);
  Availability a = runtime->probe_for(python_side);
  if (!a.available) {
    throw Error(ErrorKind::Runtime, fmt::format("{}: unavailable: {}", runtime_name, a.reason));
  }
  const auto& devices = runtime->devices();
  if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("{} does not run on device '{}' (it runs on {})", runtime_name, device,
                            fmt::join(devices, ", ")));
  }
  RuntimeOptions ro;
  ro.device = device;
  ro.threads = opts.value("threads", 0);
  if (ro.threads < 0 || ro.threads > 4096) {
    throw Error(ErrorKind::InvalidInput, fmt::format("--threads {}: expected 0 to 4096", ro.threads));
  }
  ro.cpus = parse_cpu_list_option(opts.value("pin", std::string()));
  for (const auto& kv : opts.value("rt_args", json::array())) {
    std::string s = kv.get<std::string>();
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(ErrorKind::InvalidInput, fmt::format("--rt-args '{}': expected key=value", s));
    }
    ro.runtime_args[s.substr(0, eq)] = s.substr(eq + 1);
  }
  if (build.stats.value("ort_preoptimized", false) && runtime_name == "ort" &&
      !ro.runtime_args.count("graph_optimization_level") && !ro.runtime_args.count("opt_level")) {
    ro.runtime_args["graph_optimization_level"] = "disabled";
    log += "graph optimizations off: the model was optimized by optimize-ort\n";
  }
  const LoopOptions lo = loop_options(opts);
  const build::Tolerance tol = output_tolerance(build, opts);  // checked before anything runs
  const CpuFacts& cpu = cpu_facts();
  // Threads the runtime will use: the option, else the runtime's own argument, else the
  // physical cores (or the pinned CPUs).
  int threads = ro.threads;
  if (auto it = ro.runtime_args.find("threads"); it != ro.runtime_args.end()) {
    threads = std::atoi(it->second.c_str());
  }
  if (threads <= 0) {
    threads = ro.cpus.empty() ? cpu.physical_cores : static_cast<int>(ro.cpus.size());
  }
  if (ro.threads == 0) ro.threads = threads;

  // Inputs, and the PyTorch outputs the runtime's are compared with.
  const bool live = runtime->needs_live_model();
  if (live) {
    if (!build.session || !build.model) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{} needs a PyTorch model from a script (this input is not one)",
                              runtime_name));
    }
    if (build.output_pbs.empty()) {
      const fs::path io_dir = build.dir->path() / "io";
      fs::create_directories(io_dir);
      json reply = build.session->request(
          {{"type", "reference"}, {"id", build.model->id}, {"io_dir", io_dir.string()}},
          "reference_saved", ErrorKind::Runtime);
      if (!reply.value("ok", false)) {
        throw Error(ErrorKind::Runtime, "running the PyTorch model for reference outputs: " +
                                            reply.value("error", std::string("?")));
      }
      for (const auto& p : reply["outputs"]) build.output_pbs.push_back(p.get<std::string>());
    }
  } else {
    if (build.onnx_path.empty()) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{} runs ONNX models: put export-pytorch before benchmark (or use a "
                              "torch runtime)",
                              runtime_name));
    }
    prepare_inputs(build);
  }

  EnvironmentFingerprint env = start_fingerprint(threads, ro.cpus);
  LoopResult loop;
  std::vector<HostTensor> outputs;
  json session_stats;
  {
    ScopedPin pin(ro.cpus);
    const pid_t self = getpid();
    // Peak memory while loading: the process holding the model is this one for in-process
    // runtimes; the Python side's for torch-eager (whose load is only a preparation).
    const pid_t holder = live && runtime_name != "torchscript" ? build.session->python_pid() : self;
    const bool rss_ok = reset_peak_rss(holder);
    loop.rss_before_load_bytes = current_rss_bytes(holder);
    std::unique_ptr<Session> session;
    try {
      if (live) {
        LiveModel lm{build.session, build.model->id, build.dir->path(), build.build_name};
        session = runtime->load_live(lm, {}, ro);
      } else {
        session = runtime->load(build.onnx_path, build.inputs, ro);
      }
    } catch (const Error& e) {
      throw StatusError(Status::RuntimeLoadFailed, e);
    }
    const int64_t load_peak = rss_ok ? peak_rss_bytes(holder) : 0;
    const int64_t before = loop.rss_before_load_bytes;
    try {
      loop = run_loop(*session, lo);
      outputs = session->outputs();
      session_stats = session->stats();
    } catch (const Error& e) {
      throw StatusError(Status::RuntimeRunFailed, e);
    }
    loop.rss_before_load_bytes = before;
    loop.peak_rss_load_bytes = load_peak;
  }
  finish_fingerprint(env);
  LatencyStats st = compute_stats(loop.samples_ms);

  // The batch is the first dim of the first input when that input has a batch dim at all
  // (rank >= 2); a vector input of shape (10,) is one sample of 10 features.
  int64_t batch = 1;
  std::vector<int64_t> first_shape;
  if (!build.inputs.empty()) {
    first_shape = build.inputs.front().shape;
  } else if (build.model && !build.model->inputs.empty()) {
    const json& in = build.model->inputs.front();
    if (in.contains("shape") && in["shape"].is_array()) {
      for (const auto& d : in["shape"]) first_shape.push_back(d.get<int64_t>());
    }
  }
  if (first_shape.size() >= 2 && first_shape.front() > 0) batch = first_shape.front();
  const double throughput =
      st.mean_ms > 0 ? static_cast<double>(batch) * 1000.0 / st.mean_ms : 0;

  // Trust: harness overhead, noise, environment.
  std::vector<std::string> flags = env.warnings;
  const double overhead_fraction = st.median_ms > 0 ? loop.overhead_median_ms / st.median_ms : 0;
  if (overhead_fraction > 0.01) {
    flags.push_back(fmt::format("harness overhead {:.2f}% of the median (> 1%): {} ms per call",
                                overhead_fraction * 100, format_latency(loop.overhead_median_ms)));
  }
  const double ci_half_pct =
      st.median_ms > 0 ? (st.median_ci_high_ms - st.median_ci_low_ms) / 2 / st.median_ms * 100 : 0;
  if (ci_half_pct > 3.0) {
    flags.push_back(fmt::format("noisy: the median's 95% CI is +-{:.1f}% (> +-3%)", ci_half_pct));
  }
  if (!loop.warmup_steady) {
    flags.push_back(fmt::format("warm-up did not reach a steady state in {} rounds ({} calls)",
                                loop.warmup_rounds, loop.warmup_iterations));
  }

  json& s = build.stats;
  s["device"] = device;
  s["device_name"] = cpu.model;
  s["runtime"] = runtime_name;
  s["runtime_name"] = runtime->display_name();
  s["runtime_version"] = runtime_version;
  s.update(session_stats);
  s["threads"] = threads;
  s["batch_size"] = batch;
  s["iterations"] = st.iterations;
  s["stop_rule"] = lo.rule == StopRule::Iterations ? "iterations"
                   : lo.rule == StopRule::Duration ? "duration"
                                                   : "adaptive";
  s["stop_reason"] = loop.stop_reason;
  s["timed_s"] = loop.timed_s;
  s["warmup_iterations"] = loop.warmup_iterations;
  s["warmup_rounds"] = loop.warmup_rounds;
  s["warmup_steady"] = loop.warmup_steady;
  s["cold_latency_ms"] = loop.cold_ms;
  s["mean_latency_ms"] = st.mean_ms;
  s["median_latency_ms"] = st.median_ms;
  s["median_ci_low_ms"] = st.median_ci_low_ms;
  s["median_ci_high_ms"] = st.median_ci_high_ms;
  s["min_latency_ms"] = st.min_ms;
  s["max_latency_ms"] = st.max_ms;
  s["std_latency_ms"] = st.std_ms;
  s["cv"] = st.cv;
  s["p90_latency_ms"] = st.p90_ms;
  s["p95_latency_ms"] = st.p95_ms;
  s["p99_latency_ms"] = st.p99_ms;
  s["throughput_ips"] = throughput;
  s["harness_overhead_ms"] = loop.overhead_median_ms;
  s["harness_overhead_fraction"] = overhead_fraction;
  s["memory_before_load_bytes"] = loop.rss_before_load_bytes;
  s["peak_memory_load_bytes"] = loop.peak_rss_load_bytes;
  s["peak_memory_run_bytes"] = loop.peak_rss_run_bytes;
  s["peak_memory_bytes"] = std::max(loop.peak_rss_load_bytes, loop.peak_rss_run_bytes);
  s["percentile_method"] = "linear interpolation between closest ranks (type 7)";
  s["throughput_definition"] = "batch_size * 1000 / mean_latency_ms";
  s["benchmarked_model"] = live ? std::string("live PyTorch model") : build.onnx_path.string();
  json e = {{"cpu_model", env.cpu_model},
            {"physical_cores", env.physical_cores},
            {"logical_cpus", env.logical_cpus},
            {"threads", env.threads},
            {"pinned_cpus", env.cpus},
            {"governor", env.governor},
            {"cpu_mhz", env.cpu_mhz},
            {"load_average_1m", env.load_average_1m},
            {"runnable_other_threads_before", env.runnable_before},
            {"runnable_other_threads_after", env.runnable_after}};
  s["environment"] = e;
  s["measurement_flags"] = flags;
  s["noisy"] = !flags.empty();
  write_file_atomic(build.dir->path() / fmt::format("samples_{}_{}.json", runtime_name, device),
                    json({{"unit", "ms"}, {"samples", loop.samples_ms}}).dump() + "\n");

  // Correctness against the PyTorch outputs saved at export.
  const Judgement judged = judge_outputs(build, outputs, tol);
  const std::string& correctness = judged.line;

  log += fmt::format(
      "model {}\nruntime {} {} on {} ({} threads{})\ninputs: {}\ncold {} ms, warm-up {} "
      "iterations in {} rounds ({}), {} timed iterations, stop: {}\nmedian {} ms, mean {} ms, "
      "harness overhead {} ms\npeak memory: load {} B, run {} B\ncorrectness: {}\n",
      s["benchmarked_model"].get<std::string>(), runtime->display_name(), runtime_version,
      cpu.model, threads,
      ro.cpus.empty() ? "" : fmt::format(", pinned to {}", fmt::join(ro.cpus, ",")),
      build.stats.value("input_source", live ? "captured from the script" : "?"), loop.cold_ms,
      loop.warmup_iterations, loop.warmup_rounds, loop.warmup_steady ? "steady" : "not steady",
      st.iterations, loop.stop_reason, st.median_ms, st.mean_ms, loop.overhead_median_ms,
      loop.peak_rss_load_bytes, loop.peak_rss_run_bytes, correctness);
  for (const std::string& f : flags) log += "warning: " + f + "\n";
  for (const auto& [key, value] : session_stats.items()) log += key + ": " + value.dump() + "\n";

  ModelBlock& b = build.block;
  b.status = fmt::format("Successfully benchmarked on {} ({} v{})", cpu.model, runtime_name,
                         runtime_version);
  b.status_detail = {
      fmt::format("Mean Latency:   {}\tmilliseconds (ms)", format_latency(st.mean_ms)),
      fmt::format("Throughput:     {:.1f}\tinferences per second (IPS)", throughput),
      fmt::format("Latency (ms):   median {} [95% CI {}, {}], min {}, max {}, std {}, p90 {}, "
                  "p99 {} ({} iterations, cold {})",
                  format_latency(st.median_ms), format_latency(st.median_ci_low_ms),
                  format_latency(st.median_ci_high_ms), format_latency(st.min_ms),
                  format_latency(st.max_ms), format_latency(st.std_ms),
                  format_latency(st.p90_ms), format_latency(st.p99_ms), st.iterations,
                  format_latency(loop.cold_ms)),
      fmt::format("Peak memory:    {} (load), {} (run)",
                  format_bytes(static_cast<double>(loop.peak_rss_load_bytes)),
                  format_bytes(static_cast<double>(loop.peak_rss_run_bytes))),
      fmt::format("Correctness:    {}", correctness)};
  for (const std::string& f : flags) b.status_detail.push_back("Warning:        " + f);
  if (judged.mismatch) {
    throw Error(ErrorKind::NumericMismatch,
                fmt::format("{} outputs differ from PyTorch's: {}", runtime_name, correctness));
  }
}

}  // namespace turnkey::engine_internal
