// The bodies of the sequence tools but benchmark (benchmark.cpp). The engine (engine.cpp) runs
// them in order, times them, writes their logs and state, and decides when a cached result can be
// reused.
#include <algorithm>
#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "stages/build.h"

#include "catalog/tool_checks.h"
#include "turnkey/transforms/transforms.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/catalog/status.h"
#include "turnkey/catalog/tools.h"
#include "turnkey/onnx/input_data.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The TorchScript exporter's default here (libonnx 1.12's newest opset until newer ones are
// known), and the dynamo exporter's base opset: it writes 18 and converts to any other.
constexpr int kDefaultOpset = 17;
constexpr int kDynamoBaseOpset = 18;

int resolve_opset(const json& options, const std::string& first_exporter) {
  if (options.contains("opset") && options["opset"].is_number_integer()) {
    int opset = options["opset"].get<int>();
    if (opset < 7 || opset > 30) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("--opset {}: expected an ONNX opset from 7 to 30", opset));
    }
    return opset;
  }
  const int fallback = first_exporter == "dynamo" ? kDynamoBaseOpset : kDefaultOpset;
  return static_cast<int>(env_int("TURNKEY_ONNX_OPSET", 7, 30).value_or(fallback));
}

void record_facts(BuildStats& s, const onnx_model::ModelFacts& facts) {
  s.set("onnx_file", facts.path.string());
  s.set("onnx_file_size_bytes", facts.file_size_bytes);
  s.set("onnx_opset", facts.opset);
  s.set("onnx_ir_version", facts.ir_version);
  s.set("onnx_producer", facts.producer);
  // What the file holds: the exporter stores identical weights once (untrained models, or a
  // TransformerEncoder's deep-copied layers), so this can be far below the model's count.
  s.set("onnx_parameters", facts.parameters);
  s.set("onnx_parameter_bytes", facts.parameter_bytes);
  // The model's own count (PyTorch's, from discovery) stays; an ONNX input has only the file's.
  if (!s.has("parameters")) {
    s.set("parameters", facts.parameters);
    s.set("parameter_bytes", facts.parameter_bytes);
  }
  s.set("onnx_node_count", facts.node_count);
  s.set("onnx_ops", facts.op_histogram);
  if (!facts.checker_note.empty()) s.set("onnx_checker_note", facts.checker_note);
  auto describe = [](const std::vector<onnx_model::ValueInfo>& values) {
    json out = json::array();
    for (const auto& v : values) {
      json dims = json::array();
      for (const auto& d : v.dims) {
        if (d.known())
          dims.push_back(d.value);
        else
          dims.push_back(d.param.empty() ? "?" : d.param);
      }
      out.push_back({{"name", v.name}, {"dtype", v.onnx_type}, {"shape", dims}});
    }
    return out;
  };
  s.set("onnx_inputs", describe(facts.inputs));
  s.set("onnx_outputs", describe(facts.outputs));
}

// Inputs shipped with an ONNX file in the ONNX test-data layout (the model zoo's and the
// backend tests'): test_data_set_0/input_N.pb beside the model.
std::vector<HostTensor> shipped_inputs(const fs::path& model, const onnx_model::ModelFacts& facts) {
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

void use_facts(Build& build, const onnx_model::ModelFacts& facts) {
  build.facts = facts;
  record_facts(build.stats, facts);
}

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
      const auto& want = facts.inputs[i];
      HostTensor t = onnx_model::read_value_pb(files[i], want);
      if (!onnx_model::value_fits(t, want)) return {};
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
  if (!build.input_data.empty()) {
    onnx_model::InputData data;
    try {
      data = onnx_model::read_input_data(build.input_data, facts, overrides);
    } catch (const Error& e) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("--input-data {}: {}", build.input_data, e.what()));
    }
    build.inputs = std::move(data.inputs);
    build.expected_outputs = std::move(data.expected_outputs);
    build.output_pbs.clear();  // PyTorch's outputs were for the captured inputs, not these
    build.float64_pbs.clear();
    build.ones_note.clear();
    build.stats.set("input_source", "--input-data: " + data.description);
    return;
  }
  if (overrides.empty()) {
    // An fp16 model with kept io types, or an optimized one, has the same inputs as the export.
    build.inputs = matching_inputs(build.input_pbs, facts);
    if (!build.inputs.empty() || (facts.inputs.empty() && !build.input_pbs.empty())) {
      build.stats.set("input_source", "captured from the script");
      return;
    }
    build.inputs = shipped_inputs(build.source_input, facts);
    if (!build.inputs.empty()) {
      build.stats.set("input_source", "test_data_set_0 beside the model");
      return;
    }
  }
  // A symbolic dim the user gave no shape for runs with 1, and says so (ones_note).
  auto shapes = onnx_model::resolve_input_shapes(facts, overrides, &build.ones_note);
  build.inputs = onnx_model::generate_inputs(facts, shapes);
  build.stats.set("input_source", "generated (seeded)");
}

void show_fed_shapes(Build& build) {
  if (build.inputs.empty()) return;
  std::vector<std::string> parts;
  for (const HostTensor& t : build.inputs) {
    std::string dims = fmt::format("{}", fmt::join(t.shape, ", "));
    if (t.shape.size() == 1) dims += ",";
    parts.push_back(t.is_tensor() ? fmt::format("'{}': ({})", t.name, dims)
                                  : fmt::format("'{}': {}", t.name, describe_value(t)));
  }
  for (Field& f : build.block.fields) {
    if (f.first == "Input Shape") f.second = fmt::format("{}", fmt::join(parts, ", "));
  }
}

// Values were checked against the tool table (tool_options.cpp) when the command was read; this
// only resolves what depends on the environment and keeps default values out of cache keys.
json resolve_export_options(json options, const Build& build) {
  const std::string requested = options.value("exporter", "auto");
  const std::vector<std::string> order =
      tool_checks::exporter_order(requested, build.stats.text("torch_version", ""));
  options["opset"] = resolve_opset(options, order.front());
  // The tool table checked the value; the default leaves the cache key as it was (the torch
  // version, in the key's versions, decides what auto does).
  if (requested == "auto") options.erase("exporter");
  return options;
}

std::string export_versions(const Build& build, const json& options) {
  if (!build.stats.text("keras_versions", "").empty()) {
    // A Keras model: tf2onnx converts what TensorFlow traces (docs/keras.md).
    return fmt::format("{}, onnx {}", build.stats.text("keras_versions", ""),
                       build.stats.text("onnx_python_version", "?"));
  }
  // The revision of python/turnkeyml/discovery/exporter_fixes.py: a new fix changes the ONNX
  // files exports write, so exports made before it are rebuilt.
  constexpr int kExporterFixesRevision = 5;
  std::string versions = fmt::format("torch {}, onnx {}, exporter fixes {}",
                                     build.stats.text("torch_version", "?"),
                                     build.stats.text("onnx_python_version", "?"),
                                     kExporterFixesRevision);
  // The dynamo exporter's translation to ONNX is onnxscript's.
  const std::vector<std::string> order =
      tool_checks::exporter_order(options.value("exporter", "auto"), build.stats.text("torch_version", ""));
  if (std::find(order.begin(), order.end(), "dynamo") != order.end()) {
    versions += ", onnxscript " + build.stats.text("onnxscript_version", "none");
  }
  return versions;
}

namespace {

std::string ort_version() {
  const Runtime* ort = find_runtime("ort");
  return ort ? ort->version() : "?";
}

}  // namespace

std::string ort_versions(const Build&, const json&) { return "onnxruntime " + ort_version(); }

std::string onnx_and_ort_versions(const Build&, const json&) {
  return fmt::format("libonnx {}, onnxruntime {}", onnx_model::libonnx_version(), ort_version());
}

std::string onnx_versions(const Build&, const json&) {
  return fmt::format("libonnx {}", onnx_model::libonnx_version());
}

// ---- export-pytorch ---------------------------------------------------------------------------

fs::path take_onnx(Outbox& outbox, const std::string& replied, ErrorKind kind) {
  const fs::path onnx = outbox.take(replied, kind);
  // Only a model that left more than itself is read for the external data files it names.
  if (outbox.left_beside(onnx).empty()) return onnx;
  std::set<std::string> external;
  try {
    external = onnx_model::external_data_files(onnx);
  } catch (const Error& e) {
    throw Error(kind, fmt::format("{}: {}", onnx.filename().string(), e.what()));
  }
  for (const std::string& location : external) outbox.take_beside(onnx, location, kind);
  return onnx;
}

bool export_uses_script_process(const Build& /*build*/, const json& /*options*/) { return true; }

namespace {

// A failed export as the build's error: its traceback goes to the log, and where every exporter
// tried failed, the line names each one's reason, the last one's (`last`) first.
[[noreturn]] void throw_export_failure(Build& build, const ExportResult& r, const std::string& last,
                                       std::string& log) {
  if (!r.traceback.empty()) log += r.traceback + "\n";
  if (show_tracebacks() && !r.traceback.empty()) std::fprintf(stderr, "%s", r.traceback.c_str());
  std::string error = r.error.empty() ? "export failed" : r.error;
  if (!r.exporter_fallback.empty()) {
    error += fmt::format(" (the {} exporter; before it, {})", last, r.exporter_fallback);
    build.stats.set("exporter_fallback", r.exporter_fallback);
  }
  const Error failure(ErrorKind::Export, error);
  // A status the Python side gave the error (a MemoryError: out_of_memory) is the build's.
  if (std::optional<Status> s = python_end_status(r.error_status, 0)) {
    throw StatusError(*s, failure);
  }
  throw failure;
}

// PyTorch's float64 outputs, all or none: as a malformed reply entry, a file that cannot be
// taken is a check not made, never a failed export.
void take_float64_outputs(Build& build, const ExportResult& r, Outbox& outbox, std::string& log) {
  build.float64_pbs.clear();
  try {
    for (const fs::path& p : r.float64_outputs) {
      build.float64_pbs.push_back(outbox.take(p, ErrorKind::Export));
    }
  } catch (const Error& e) {
    build.float64_pbs.clear();
    log += fmt::format("float64 reference outputs left out: {}\n", e.what());
  }
}

// One export request to the Python side, `exporters` tried in order there. The Python side
// gone with a signal (its wait status) makes the failure a crash.
ExportResult request_export(Build& build, Outbox& outbox, const fs::path& target, int opset,
                            const fs::path& io_dir, const std::vector<std::string>& exporters,
                            const json& options) {
  try {
    return build.session->export_model(build.model->id, outbox.file(target), opset,
                                       outbox.folder(io_dir), exporters,
                                       !options.value("no_float64_reference", false));
  } catch (const Error& e) {
    if (const int signal = build.session->end_signal(); signal > 0) {
      throw StatusError(Status::Crashed, e, signal);
    }
    throw;
  }
}

// The ONNX checker's reason where it rejects the exported file (its strict shape inference runs
// here, not on the Python side); nullopt where it passes, the file's facts then recorded. Other
// failures to read the file are thrown.
std::optional<std::string> checker_rejection(Build& build) {
  build.facts.reset();
  try {
    ensure_facts(build);
    return std::nullopt;
  } catch (const Error& e) {
    std::string reason = e.what();
    if (reason.rfind("ONNX checker", 0) != 0) throw;
    return reason;
  }
}

// Removes an export the checker rejected: the model and the external data files it names.
void remove_export(const fs::path& onnx) {
  std::error_code ec;
  try {
    for (const std::string& location : onnx_model::external_data_files(onnx)) {
      fs::remove(onnx.parent_path() / location, ec);
    }
  } catch (const Error&) {
    // A file that cannot be read names no data files: the model alone goes.
  }
  fs::remove(onnx, ec);
}

// The exported file's companions (inputs, PyTorch's outputs, intermediates) taken from the
// reply, and what made the file recorded in the build's stats and block.
void take_export(Build& build, const ExportResult& r, const std::string& exporter, int opset,
                 Outbox& outbox, std::string& log) {
  log += fmt::format("exported {} in {:.3f} s\n", build.onnx_path.string(), r.export_s);
  build.input_pbs.clear();
  build.output_pbs.clear();
  for (const fs::path& p : r.inputs) build.input_pbs.push_back(outbox.take(p, ErrorKind::Export));
  for (const fs::path& p : r.outputs) build.output_pbs.push_back(outbox.take(p, ErrorKind::Export));
  take_float64_outputs(build, r, outbox, log);
  build.intermediates.clear();
  for (IntermediateTensor i : r.intermediates) {
    // As a malformed entry of the reply, a file that cannot be taken is a check not made.
    try {
      i.pb = outbox.take(i.pb, ErrorKind::Export);
      build.intermediates.push_back(std::move(i));
    } catch (const Error& e) {
      log += fmt::format("intermediate tensor '{}' left out: {}\n", i.tensor, e.what());
    }
  }
  if (!r.exporter_fixes.empty()) {
    log += fmt::format("turnkey's exporter fixes in this graph: {}\n",
                       fmt::join(r.exporter_fixes, ", "));
  }
  build.stats.set("export_s", r.export_s);
  log += fmt::format("exported by the {} exporter ({}), opset {}\n", exporter,
                     r.exporter_version.empty() ? "?" : r.exporter_version, r.opset);
  if (!r.exporter_fallback.empty()) log += "fallback: " + r.exporter_fallback + "\n";
  build.stats.set("opset", r.opset > 0 ? r.opset : opset);
  build.stats.set("exporter", exporter);
  build.stats.set("exporter_version", r.exporter_version);
  build.stats.set("exporter_fallback", r.exporter_fallback);
  build.stats.set("exporter_warning", r.exporter_warning);
  // The block says what made the ONNX file, and why not the exporter tried first.
  std::string made_by = fmt::format("{} ({}), opset {}", exporter, r.exporter_version, r.opset);
  if (!r.exporter_fallback.empty()) made_by += "; after: " + r.exporter_fallback;
  build.block.sig_fields.push_back({"Exporter", made_by});
  build.stats.set("exporter_fixes", r.exporter_fixes);
}

}  // namespace

// Each exporter in turn until one writes a file the ONNX checker passes: the Python side moves
// on where an exporter fails or its checker rejects the graph; the core asks the exporters after
// one whose graph its strict shape inference rejects (dynamo's Parakeet TDT: "Dimension of input
// 2 must be 1 instead of 8", which the TorchScript exporter's graph passes).
void tool_export_pytorch(Build& build, const json& options, std::string& log) {
  if (!build.session || !build.model) {
    throw Error(ErrorKind::Export, "no live PyTorch model (export-pytorch follows discover)");
  }
  std::vector<std::string> exporters =
      tool_checks::exporter_order(options.value("exporter", "auto"), build.stats.text("torch_version", ""));
  const int opset = resolve_opset(options, exporters.front());
  const fs::path onnx_dir = build.dir->path() / "onnx";
  const fs::path io_dir = build.dir->path() / "io";
  fs::create_directories(onnx_dir);
  fs::create_directories(io_dir);
  const fs::path target =
      onnx_dir / fmt::format("{}-op{}-base.onnx", build.build_name, opset);
  log += fmt::format("opset {}, exporters to try: {}\n", opset, fmt::join(exporters, ", "));
  std::vector<std::string> failed;  // "<exporter> exporter failed: <reason>", in order
  for (;;) {
    // Sandboxed, the Python side writes to a staging folder and the files are taken from there,
    // each once: one outbox per request.
    Outbox outbox = build.session->outbox();
    ExportResult r = request_export(build, outbox, target, opset, io_dir, exporters, options);
    if (!r.log.empty()) log += r.log + "\n";
    if (!r.exporter_fallback.empty()) failed.push_back(r.exporter_fallback);
    r.exporter_fallback = fmt::format("{}", fmt::join(failed, "; "));
    if (!r.ok) throw_export_failure(build, r, exporters.back(), log);
    build.onnx_path = take_onnx(outbox, r.onnx_path.string(), ErrorKind::Export);
    const std::string exporter = r.exporter.empty() ? exporters.front() : r.exporter;
    const auto used = std::find(exporters.begin(), exporters.end(), exporter);
    const bool last = used == exporters.end() || used + 1 == exporters.end();
    // The file of the only exporter tried is checked after the tool, as every tool's output is;
    // after others, here, so that its error names theirs.
    std::optional<std::string> rejected =
        last && failed.empty() ? std::nullopt : checker_rejection(build);
    if (!rejected) return take_export(build, r, exporter, opset, outbox, log);
    if (last) {
      r.ok = false;
      r.error = *rejected;
      throw_export_failure(build, r, exporter, log);
    }
    failed.push_back(fmt::format("{} exporter failed: {}", exporter, *rejected));
    log += fmt::format("{}; trying the {} exporter\n", failed.back(), *(used + 1));
    remove_export(build.onnx_path);
    build.onnx_path.clear();
    exporters = std::vector<std::string>(used + 1, exporters.end());
  }
}

// ---- build stages (src/transforms/) ----------------------------------------------------------------

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
  const transforms::OrtOptLevel level = transforms::parse_ort_opt_level(options.value("level", "basic"));
  const fs::path output =
      build.dir->path() / "onnx" /
      fmt::format("{}-opt-{}.onnx", build.build_name, transforms::ort_opt_level_name(level));
  fs::create_directories(output.parent_path());
  transforms::OptimizeResult r = transforms::optimize_ort(build.onnx_path, output, level);
  log += fmt::format("optimized {} at level {}\nnodes {} -> {}\nportable: {}{}\n{:.1f} ms\n",
                     build.onnx_path.string(), transforms::ort_opt_level_name(level), r.nodes_before,
                     r.nodes_after, r.portable ? "yes" : "no (ONNX Runtime contrib ops)",
                     r.external_data.empty() ? "" : ", external data " + r.external_data,
                     r.duration_ms);
  build.onnx_path = output;
  build.stats.set("optimize_level", transforms::ort_opt_level_name(level));
  build.stats.set("optimize_nodes_before", r.nodes_before);
  build.stats.set("optimize_nodes_after", r.nodes_after);
  build.stats.set("optimized_model_portable", r.portable);
  // ONNX Runtime 1.29 fails to optimize some models again that it optimized at extended and
  // above; they need no more, so the benchmark loads them with optimizations off.
  build.stats.set("ort_preoptimized", level != transforms::OrtOptLevel::Basic);
}

void tool_convert_fp16(Build& build, const json& options, std::string& log) {
  transforms::Fp16Options fp16;
  fp16.keep_io_types = !options.value("no_keep_io_types", false);
  const fs::path reference = build.onnx_path;
  const fs::path output = build.dir->path() / "onnx" / (build.build_name + "-fp16.onnx");
  fs::create_directories(output.parent_path());
  const onnx_model::InputShapes shapes = shapes_of_prepared_inputs(build);
  transforms::Fp16Result r = transforms::convert_fp16(reference, output, fp16);
  log +=
      fmt::format("converted {} to float16\nnodes {} -> {} ({} Casts added), {} in float16\n",
                  reference.string(), r.nodes_before, r.nodes_after, r.casts_added, r.nodes_fp16);
  for (const auto& [op, n] : r.kept_fp32_ops) log += fmt::format("kept float32: {} x{}\n", op, n);
  if (r.values_clamped || r.values_raised) {
    log += fmt::format("values clamped to +-65504: {}, raised to +-2^-24: {}\n", r.values_clamped,
                       r.values_raised);
  }
  // The fp16 model must still compute the same function: compared with the fp32 model on the
  // benchmark's inputs (tolerance in docs/build_stages.md).
  transforms::CompareOptions compare;
  compare.shapes = shapes;
  compare.optimize_reference = !build.stats.flag("ort_preoptimized");
  transforms::Comparison c = transforms::compare_models(reference, output, compare);
  log += fmt::format("against float32: worst relative error {:.3g}, worst cosine {:.6f}\n",
                     c.worst_rel_error, c.worst_cosine);
  const bool no_signal =
      !c.outputs.empty() && std::all_of(c.outputs.begin(), c.outputs.end(), [](const auto& o) {
        return o.max_abs_reference == 0 && o.mismatches == 0;
      });
  if (no_signal) {
    // Zeros against zeros: "worst relative error 0" above proves nothing (a zero-initialised
    // head, as torchvision's ViTs have with random weights).
    log += "no signal: every output of the float32 model is all zeros, so this comparison cannot "
           "show a difference (the benchmark's correctness check compares intermediate tensors "
           "where it can)\n";
  }
  if (const std::string ties = transforms::describe_ties(c); !ties.empty()) {
    log += "rows ordered by a score: " + ties + (c.inconclusive ? " (inconclusive)\n" : "\n");
    build.stats.set("fp16_ties", ties);
  }
  build.stats.set("fp16_worst_rel_error", c.worst_rel_error);
  build.stats.set("fp16_worst_cosine", c.worst_cosine);
  build.stats.set("fp16_keep_io_types", fp16.keep_io_types);
  if (!c.within) {
    throw Error(ErrorKind::Export,
                fmt::format("float16 outputs outside tolerance: relative error {:.3g} (max {}), "
                            "cosine {:.6f} (min {})",
                            c.worst_rel_error, compare.tolerance.max_rel_error, c.worst_cosine,
                            compare.tolerance.min_cosine));
  }
  build.onnx_path = output;
  build.stats.set("ort_preoptimized", false);
}

void tool_check_onnx(Build& build, const json&, std::string& log) {
  transforms::CheckVerdict v = transforms::check_onnx(build.onnx_path);
  log += fmt::format("{}: {} ({:.1f} ms)\n", v.passed ? "passed" : "failed at " + v.stage, v.reason,
                     v.duration_ms);
  build.stats.set("check_onnx", v.passed ? "passed" : "failed at " + v.stage + ": " + v.reason);
  if (!v.passed) throw Error(ErrorKind::InvalidInput, fmt::format("{}: {}", v.stage, v.reason));
}

}  // namespace turnkey::engine_internal
