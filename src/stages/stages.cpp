// The bodies of the sequence tools but export-pytorch (export_pytorch.cpp) and benchmark
// (benchmark.cpp). The engine (engine.cpp) runs them in order, times them, writes their logs and
// state, and decides when a cached result can be reused.
#include <algorithm>
#include <fmt/format.h>

#include <filesystem>

#include "stages/build.h"

#include "turnkey/transforms/transforms.h"
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
  build.step = "optimizing with ONNX Runtime";
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
  build.step = "converting to float16";
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
  build.step = "comparing the float16 model with the float32 one";
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
  build.step = "checking the model";
  transforms::CheckVerdict v = transforms::check_onnx(build.onnx_path);
  log += fmt::format("{}: {} ({:.1f} ms)\n", v.passed ? "passed" : "failed at " + v.stage, v.reason,
                     v.duration_ms);
  build.stats.set("check_onnx", v.passed ? "passed" : "failed at " + v.stage + ": " + v.reason);
  if (!v.passed) throw Error(ErrorKind::InvalidInput, fmt::format("{}: {}", v.stage, v.reason));
}

}  // namespace turnkey::engine_internal
