// The export-pytorch tool: the Python side exports the live model with each exporter in turn
// until one writes a file the ONNX checker passes; the opset and the versions that key its cache.
#include <algorithm>
#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "stages/build.h"

#include "catalog/tool_checks.h"
#include "turnkey/catalog/status.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/text.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The TorchScript exporter's default here (libonnx 1.12's newest opset until newer ones are
// known), and the dynamo exporter's base opset: it writes 18 and converts to any other.
constexpr int kDefaultOpset = 17;
constexpr int kDynamoBaseOpset = 18;

// Above this many bytes of parameters, the export makes PyTorch's float64 outputs itself: asking
// for them later keeps the script's process alive while a runtime loads and times its own copy
// of the model (float64_deferrable), which costs the weights and what the export left in it
// (resnet50's 100 MB: 665 MB of anonymous memory after a dynamo export, PyPI torch 2.15).
constexpr int64_t kFloat64OnDemandMaxBytes = int64_t{256} << 20;

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

}  // namespace

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
  constexpr int kExporterFixesRevision = 13;
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
  build.stats.set("float64_left_out", r.float64_left_out);
  try {
    for (const fs::path& p : r.float64_outputs) {
      build.float64_pbs.push_back(outbox.take(p, ErrorKind::Export));
    }
  } catch (const Error& e) {
    build.float64_pbs.clear();
    build.stats.set("float64_left_out", one_line(e.what()));
    log += fmt::format("float64 reference outputs left out: {}\n", e.what());
  }
}

// One export request to the Python side, `exporters` tried in order there. The Python side
// gone with a signal (its wait status) makes the failure a crash.
ExportResult request_export(Build& build, Outbox& outbox, const fs::path& target, int opset,
                            const fs::path& io_dir, const std::vector<std::string>& exporters,
                            const json& options) {
  try {
    return build.session->export_model(
        build.model->id, outbox.file(target), opset, outbox.folder(io_dir), exporters,
        !options.value("no_float64_reference", false) && !float64_deferrable(build));
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

bool float64_deferrable(const Build& build) {
  // A build benchmarked later (load-build) has only what its export made.
  const std::vector<std::string>& tools = build.state.sequence;
  return build.session && build.session->alive() && build.model &&
         build.model->model_type.rfind("Keras", 0) != 0 &&
         build.model->parameter_bytes <= kFloat64OnDemandMaxBytes &&
         std::find(tools.begin(), tools.end(), "benchmark") != tools.end();
}

bool float64_on_demand(const Build& build) {
  if (!float64_deferrable(build) || !build.float64_pbs.empty() || !build.intermediates.empty() ||
      build.output_pbs.empty() || !build.input_data.empty()) {
    return false;
  }
  for (const ToolStep& step : build.state.tools) {
    if (step.name == "export-pytorch" && step.options.is_object()) {
      return !step.options.value("no_float64_reference", false);
    }
  }
  return false;
}

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
  const fs::path io_dir = build.dir->io_dir();
  fs::create_directories(onnx_dir);
  fs::create_directories(io_dir);
  const fs::path target =
      onnx_dir / fmt::format("{}-op{}-base.onnx", build.build_name, opset);
  log += fmt::format("opset {}, exporters to try: {}\n", opset, fmt::join(exporters, ", "));
  if (!options.value("no_float64_reference", false) && float64_deferrable(build)) {
    log += "float64 reference: made on demand, where a runtime's outputs are outside the "
           "tolerance of PyTorch's float32 ones\n";
  }
  std::vector<std::string> failed;  // "<exporter> exporter failed: <reason>", in order
  for (;;) {
    // Sandboxed, the Python side writes to a staging folder and the files are taken from there,
    // each once: one outbox per request.
    Outbox outbox = build.session->outbox();
    build.step = "exporting (the Python side)";
    ExportResult r = request_export(build, outbox, target, opset, io_dir, exporters, options);
    if (!r.log.empty()) log += r.log + "\n";
    if (!r.exporter_fallback.empty()) failed.push_back(r.exporter_fallback);
    r.exporter_fallback = fmt::format("{}", fmt::join(failed, "; "));
    if (!r.ok) throw_export_failure(build, r, exporters.back(), log);
    build.step = "taking the exported files";
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

}  // namespace turnkey::engine_internal
