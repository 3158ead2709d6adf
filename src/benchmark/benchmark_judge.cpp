// The correctness judgement: a runtime's outputs against the PyTorch outputs saved at export or
// the expected outputs of --input-data, with the verdict decided in one place
// (docs/measurement.md). PyTorch outputs that carry no signal (empty, all zero, constant) prove
// nothing when they match: the verdict then rests on an intermediate tensor the export captured,
// or is inconclusive. A model that draws random numbers is inconclusive whatever its outputs; a
// mismatch the runtime's own project lists as its deviation is named so, latency kept. A mismatch
// of a model that amplifies float32 rounding beyond the tolerance (PyTorch's own float32 outputs
// are that far from its float64 ones) is judged against the float64 outputs instead.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <new>
#include <optional>

#include "benchmark/benchmark.h"
#include "benchmark/runtime_deviations.h"
#include "turnkey/common/error.h"
#include "turnkey/onnx/model_facts.h"
#include "turnkey/onnx/nondeterminism.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<HostTensor> read_outputs(const std::vector<fs::path>& files) {
  std::vector<HostTensor> out;
  for (const fs::path& f : files) out.push_back(onnx_model::read_tensor_pb(f));
  return out;
}

std::string errors_text(const transforms::Comparison& c, const transforms::Tolerance& tol) {
  double worst_abs = 0;
  for (const auto& d : c.outputs) worst_abs = std::max(worst_abs, d.max_abs_error);
  return fmt::format(
      "max abs error {:.3g}, max rel error {:.3g}, cosine {:.6f} (tolerance {:g} / {:g})",
      worst_abs, c.worst_rel_error, c.worst_cosine, tol.max_rel_error, tol.min_cosine);
}

// A mismatch judged against PyTorch's float64 outputs (docs/measurement.md, "Models that amplify
// float32 rounding"): how far PyTorch's own float32 outputs are from them sets the tolerance.
struct Float64Check {
  bool made = false;
  transforms::Comparison own;       // PyTorch's float32 outputs against its float64 ones
  transforms::Comparison runtime;   // the runtime's, against the float64 ones
  transforms::Tolerance tolerance;  // for `runtime`: the given one, or wider (kFloat64ErrorFactor)
  bool amplifies = false;           // `own` is outside the given tolerance
  bool computable = false;          // ... yet still resembles them (cosine >= kMinFloat32Cosine)
  bool within = false;              // amplifies, computable, and the runtime within `tolerance`
};

// Below this cosine, PyTorch's own float32 outputs no longer resemble its float64 ones: float32
// cannot compute the model, and no runtime's outputs can be judged.
constexpr double kMinFloat32Cosine = 0.99;

// How much further from the float64 outputs than PyTorch's own float32 outputs a runtime's may be.
// Two float32 implementations of an amplifying model land at random distances from float64:
// over 200 random chaotic networks, ONNX Runtime's max rel error was 0.3 to 5.9 times PyTorch's
// (bench/float64_rule.py). Three times calls 4 of them mismatches and catches 173 of 200 export
// errors; the rule before (twice) called 43 mismatches. An error grows 1 - cosine by its square,
// so the cosine's tolerance is kFloat64ErrorFactor squared times PyTorch's 1 - cosine.
constexpr double kFloat64ErrorFactor = 3;

Float64Check check_float64(const Build& build, const std::vector<HostTensor>& reference,
                           const std::vector<HostTensor>& outputs,
                           const transforms::Tolerance& tol) {
  Float64Check f;
  if (build.float64_pbs.size() != reference.size()) return f;
  try {
    const std::vector<HostTensor> f64 = read_outputs(build.float64_pbs);
    f.own = transforms::compare_outputs(f64, reference, tol);
    f.amplifies = !f.own.within;
    f.computable = f.own.worst_cosine >= kMinFloat32Cosine;
    f.tolerance = tol;
    if (f.amplifies) {
      constexpr double k = kFloat64ErrorFactor;
      f.tolerance.max_rel_error = std::max(tol.max_rel_error, k * f.own.worst_rel_error);
      f.tolerance.min_cosine = std::min(tol.min_cosine, 1 - k * k * (1 - f.own.worst_cosine));
    }
    f.runtime = transforms::compare_outputs(f64, outputs, f.tolerance);
    f.within = f.amplifies && f.computable && f.runtime.within && !f.runtime.inconclusive;
    f.made = true;
  } catch (const Error&) {
    f = Float64Check{};  // unreadable or incomparable: a check not made, the verdict as before
  }
  return f;
}

json float64_record(const Float64Check& f) {
  auto errors = [](const transforms::Comparison& c) {
    return json{{"max_rel_error", c.worst_rel_error}, {"cosine", c.worst_cosine}};
  };
  return {{"pytorch_float32", errors(f.own)},
          {"runtime", errors(f.runtime)},
          {"amplifies_float32_rounding", f.amplifies},
          {"tolerance_max_rel_error", f.tolerance.max_rel_error},
          {"tolerance_min_cosine", f.tolerance.min_cosine}};
}

// The intermediate tensors of the export, run by the benchmark's own runtime on a copy of the
// graph that also outputs them (kept as check/<build>-intermediates.onnx), against PyTorch's.
struct IntermediateCheck {
  bool made = false;
  std::string why_not;  // when !made
  transforms::Comparison comparison;
  std::string what;  // "the input of 'heads.head' (ONNX value '/Gather_output_0')"
  json record = json::array();
};

IntermediateCheck check_intermediates(Build& build, const BenchmarkSetup& setup,
                                      size_t output_count) {
  IntermediateCheck check;
  if (!build.input_data.empty()) {
    check.why_not = "the export's intermediate tensors are PyTorch's for the captured inputs, "
                    "not for --input-data";
    return check;
  }
  if (setup.runtime->needs_live_model() || build.onnx_path.empty()) {
    check.why_not = setup.runtime_name +
                    " runs the PyTorch model, whose intermediate tensors "
                    "turnkey does not read";
    return check;
  }
  if (build.intermediates.empty()) {
    check.why_not = "the export found no intermediate tensor with signal";
    return check;
  }
  try {
    std::vector<std::string> names;
    std::vector<DType> types;
    std::vector<HostTensor> reference;
    std::vector<std::string> described;
    for (const IntermediateTensor& i : build.intermediates) {
      reference.push_back(onnx_model::read_tensor_pb(i.pb));
      names.push_back(i.tensor);
      types.push_back(reference.back().dtype);
      described.push_back(fmt::format("the input of '{}' (ONNX value '{}')", i.module, i.tensor));
    }
    const fs::path dir = build.dir->path() / "check";
    fs::create_directories(dir);
    const fs::path check_model = dir / (build.build_name + "-intermediates.onnx");
    transforms::add_graph_outputs(build.onnx_path, check_model, names, types);
    std::unique_ptr<Session> session = setup.runtime->load(check_model, build.inputs, setup.ro);
    session->run();
    std::vector<HostTensor> all = session->outputs();
    if (all.size() != output_count + names.size()) {
      check.why_not = fmt::format("{} returned {} outputs of the check model, expected {}",
                                  setup.runtime_name, all.size(), output_count + names.size());
      return check;
    }
    std::vector<HostTensor> got(all.begin() + static_cast<std::ptrdiff_t>(output_count), all.end());
    check.comparison = transforms::compare_outputs(reference, got, setup.tolerance);
    for (size_t k = 0; k < names.size(); ++k) {
      const transforms::OutputDiff& d = check.comparison.outputs[k];
      check.record.push_back({{"module", build.intermediates[k].module},
                              {"tensor", names[k]},
                              {"max_abs_error", d.max_abs_error},
                              {"max_rel_error", d.rel_error},
                              {"cosine", d.cosine},
                              {"within", d.within}});
    }
    check.what = fmt::format("{}", fmt::join(described, ", "));
    check.made = true;
  } catch (const Error& e) {
    check.why_not = fmt::format("the intermediate check failed: {}", e.what());
  }
  return check;
}

// The operators of the benchmarked ONNX model that draw random numbers ("" when none, or no ONNX
// model), joined for the verdict line.
std::string random_operators(const Build& build) {
  if (!build.facts || build.onnx_path.empty()) return "";
  try {
    return fmt::format(
        "{}", fmt::join(onnx_model::nondeterministic_operators(*build.facts, build.inputs), ", "));
  } catch (const Error&) {
    return "";  // the file was read before: a failure now changes no verdict
  }
}

}  // namespace

namespace {

// What comparing the runtime's outputs with the reference found, before it is worded.
struct Compared {
  bool data = false;  // the reference is --input-data's expected outputs
  std::string whose;  // reference_outputs_name: "PyTorch's", "Keras's", "--input-data's"
  transforms::Comparison c;
  std::string compare_error;
  std::vector<HostTensor> reference;
  json per_output = json::array();
  double worst_abs = 0;
  std::string int_mismatches;  // "; 'y': 3 elements differ", shape notes
  bool within = false;
  std::string ties, random_ops, no_signal;
  const RuntimeDeviation* deviation = nullptr;
  Float64Check f64;
  std::string float64_left_out;  // why PyTorch's float64 outputs were not made ("" = not asked)
  IntermediateCheck mid;
  bool mid_within = false;
  std::optional<transforms::Comparison> repeat;  // one more call against these outputs (a mismatch)
};

void describe_outputs(Compared& r) {
  for (const auto& d : r.c.outputs) {
    r.per_output.push_back({{"name", d.name},
                            {"max_abs_error", d.max_abs_error},
                            {"max_rel_error", d.rel_error},
                            {"cosine", d.cosine},
                            {"within", d.within}});
    json& o = r.per_output.back();
    if (d.mismatches > 0) o["mismatched_elements"] = d.mismatches;
    if (d.reordered_rows > 0) o["reordered_rows"] = d.reordered_rows;
    if (d.substituted_rows > 0) o["substituted_rows"] = d.substituted_rows;
    if (!d.shape_note.empty()) o["shape_note"] = d.shape_note;
    r.worst_abs = std::max(r.worst_abs, d.max_abs_error);
    if (!d.within && d.mismatches > 0) {
      r.int_mismatches += fmt::format("; '{}': {} elements differ", d.name, d.mismatches);
    }
    if (!d.shape_note.empty()) r.int_mismatches += "; " + d.shape_note;
  }
}

Compared compare_with_reference(Build& build, const std::vector<HostTensor>& outputs,
                                const BenchmarkSetup& setup, std::string& log) {
  Compared r;
  r.data = !build.input_data.empty();
  r.whose = reference_outputs_name(build);
  try {
    r.reference = r.data ? build.expected_outputs : read_outputs(build.output_pbs);
    r.c = transforms::compare_outputs(r.reference, outputs, setup.tolerance);
  } catch (const Error& err) {
    r.compare_error = err.what();
  }
  describe_outputs(r);
  r.within = r.compare_error.empty() && r.c.within;
  r.ties = transforms::describe_ties(r.c);
  // Random draws match no reference, and a match of them would be luck.
  r.random_ops = random_operators(build);
  // A mismatch the runtime's own project documents as its deviation from the reference.
  if (!r.within && r.compare_error.empty() && r.random_ops.empty()) {
    r.deviation = find_deviation(
        setup.runtime_name, build.source_input.empty() ? build.onnx_path : build.source_input,
        build.facts ? build.facts->op_histogram : std::map<std::string, int64_t>{});
  }
  if (!r.within && r.compare_error.empty() && r.random_ops.empty() && !r.deviation && !r.data) {
    if (float64_on_demand(build)) ask_float64_outputs(build, r.reference, log);
    r.f64 = check_float64(build, r.reference, outputs, setup.tolerance);
    r.float64_left_out = build.stats.text("float64_left_out", "");
  }
  // A match of PyTorch's outputs that carry no signal checked nothing (a mismatch still is one);
  // expected outputs the user supplied are data, whatever their values.
  if (r.within && !r.data && r.random_ops.empty()) {
    r.no_signal = transforms::no_signal_reason(r.reference);
  }
  if (!r.no_signal.empty()) r.mid = check_intermediates(build, setup, r.reference.size());
  r.mid_within = r.mid.made && r.mid.comparison.within && !r.mid.comparison.inconclusive;
  return r;
}

const char* verdict_of(const Compared& r) {
  if (!r.random_ops.empty()) return "inconclusive";
  if (r.deviation) return "known_deviation";
  if (!r.within) {
    if (r.f64.within) return "within_tolerance_of_float64";
    return r.f64.amplifies && !r.f64.computable ? "inconclusive" : "outside_tolerance";
  }
  if (!r.no_signal.empty()) {
    return r.mid_within ? "within_tolerance_on_intermediates" : "inconclusive";
  }
  if (r.c.inconclusive) return "inconclusive";
  return r.ties.empty() ? "within_tolerance" : "within_tolerance_up_to_ties";
}

json correctness_record(const Compared& r, const transforms::Tolerance& tol) {
  json correctness = {
      {"reference", r.data ? "the expected outputs of --input-data"
                           : r.whose.substr(0, r.whose.size() - 2) + " outputs saved at export"},
      {"tolerance_max_rel_error", tol.max_rel_error},
      {"tolerance_min_cosine", tol.min_cosine},
      {"outputs", r.per_output},
      {"within", (r.within || r.f64.within) && r.random_ops.empty() &&
                     (r.no_signal.empty() || r.mid_within)},
      {"signal", r.no_signal.empty()},
      {"compared", r.f64.within          ? "outputs, against float64"
                   : r.no_signal.empty() ? "outputs"
                   : r.mid.made          ? "intermediate tensors"
                                         : "nothing with signal"},
      {"verdict", verdict_of(r)}};
  if (!r.compare_error.empty()) correctness["error"] = r.compare_error;
  if (!r.random_ops.empty()) correctness["nondeterministic_operators"] = r.random_ops;
  if (r.deviation) {
    correctness["known_deviation"] = {{"of", r.deviation->whose},
                                      {"test", r.deviation->test},
                                      {"operator", r.deviation->op},
                                      {"reason", r.deviation->reason},
                                      {"source", r.deviation->source}};
  }
  if (!r.ties.empty()) correctness["ties"] = r.ties;
  if (r.f64.made) correctness["float64"] = float64_record(r.f64);
  if (r.repeat) {
    correctness["repeat"] = {{"max_rel_error", r.repeat->worst_rel_error},
                             {"cosine", r.repeat->worst_cosine},
                             {"within", r.repeat->within}};
  }
  if (!r.no_signal.empty()) {
    correctness["no_signal"] = r.no_signal;
    if (r.mid.made) correctness["intermediates"] = r.mid.record;
    if (!r.mid.made) correctness["intermediates_not_checked"] = r.mid.why_not;
  }
  return correctness;
}

// A mismatch's first words, with what one more call said where it gave other outputs.
std::string outside_head(const Compared& r, const transforms::Tolerance& tol) {
  if (!r.repeat || r.repeat->within) return "outside tolerance";
  return fmt::format("outside tolerance (nondeterministic: another call on the same inputs gave "
                     "other outputs, {}; a race between the runtime's threads? --threads 1 to "
                     "check)",
                     errors_text(*r.repeat, tol));
}

// A mismatch's line, with what PyTorch's float64 outputs say of it when they were made.
Judgement worded_mismatch(const Compared& r, const std::string& errors,
                          const transforms::Tolerance& tol) {
  const std::string head = outside_head(r, tol);
  const Float64Check& f = r.f64;
  if (!f.made) {
    // Whether the model amplifies float32 rounding was not checked: say why, where it was asked.
    const std::string& why = r.float64_left_out;
    const std::string unchecked = why.empty() ? "" : " (no float64 check: " + why + ")";
    return {head + ": " + errors + unchecked, true};
  }
  const std::string own = fmt::format("PyTorch's own float32 outputs against its float64 ones: {}",
                                      errors_text(f.own, tol));
  if (!f.amplifies) {
    return {fmt::format("{}: {} ({}: not float32 rounding)", head, errors, own), true};
  }
  if (!f.computable) {
    return {fmt::format("inconclusive: float32 arithmetic cannot compute this model's outputs "
                        "({}); the runtime's against PyTorch's: {}",
                        own, errors),
            false};
  }
  const std::string runtime = fmt::format("the runtime's: {}", errors_text(f.runtime, f.tolerance));
  if (f.within) {
    return {fmt::format("within tolerance of PyTorch's float64 outputs, the model amplifying "
                        "float32 rounding beyond the tolerance ({}); {}, the tolerance {:g} times "
                        "PyTorch's own error",
                        own, runtime, kFloat64ErrorFactor),
            false};
  }
  return {fmt::format("{}: {} (the model amplifies float32 rounding: {}; {}, "
                      "more than {:g} times PyTorch's own error)",
                      head, errors, own, runtime, kFloat64ErrorFactor),
          true};
}

// The verdict's line: its word first (the README and docs/measurement.md name it), then the
// numbers. Latency is kept for every verdict but a mismatch.
Judgement worded(const Compared& r, const transforms::Tolerance& tol) {
  const std::string errors = errors_text(r.c, tol) + r.int_mismatches;
  if (!r.random_ops.empty()) {
    return {fmt::format("inconclusive: nondeterministic operator {} (its outputs are random "
                        "draws); {}",
                        r.random_ops, r.compare_error.empty() ? errors : r.compare_error),
            false};
  }
  if (!r.compare_error.empty()) return {r.compare_error, true};
  if (r.deviation) {
    const RuntimeDeviation& d = *r.deviation;
    return {fmt::format("outside tolerance, a known deviation of {} ({} of {}: \"{}\", in {}): {}",
                        d.whose, d.op, d.test, d.reason, d.source, errors),
            false};
  }
  if (!r.no_signal.empty()) {
    // Latency kept either way: the runtime ran; only the check could not tell.
    if (r.mid_within) {
      return {fmt::format("within tolerance on intermediate tensors (the outputs carry no signal: "
                          "{}): {}: {}",
                          r.no_signal, r.mid.what, errors_text(r.mid.comparison, tol)),
              false};
    }
    if (r.mid.made) {
      return {fmt::format("inconclusive: outputs carry no signal ({}); {} differs from {} "
                          "({}), which upstream ties or data-dependent ops can explain",
                          r.no_signal, r.mid.what, r.whose, errors_text(r.mid.comparison, tol)),
              false};
    }
    return {fmt::format("inconclusive: outputs carry no signal ({}); {}", r.no_signal,
                        r.mid.why_not),
            false};
  }
  if (r.c.inconclusive) {
    // Which of several tied rows a runtime keeps is its own choice; a wrong output that kept
    // the scores right would look the same, so this is neither a pass nor a mismatch.
    return {fmt::format("inconclusive: {} (a runtime may keep any of tied rows); {}: {}", r.ties,
                        r.c.substituted_rows == r.c.ordered_rows ? "the other outputs" : "the rest",
                        errors),
            false};
  }
  if (!r.within) return worded_mismatch(r, errors, tol);
  const std::string against = r.data ? " (against --input-data's outputs)" : "";
  return {r.ties.empty() ? "within tolerance: " + errors + against
                         : "within tolerance up to ties: " + errors + "; " + r.ties + against,
          false};
}

// A mismatch may be the runtime disagreeing with itself: a race between its threads gives other
// outputs on other calls (ONNX Runtime 1.32's ScatterND with reduction 'add' and repeated indices,
// a mixture of experts' combine: docs/measurement.md, "A runtime that disagrees with itself").
// One more call, in a fresh session after the timed ones, against the judged outputs; none when
// that call failed (a check not made: the mismatch stands as judged).
std::optional<transforms::Comparison> repeat_of(
    const std::vector<HostTensor>& outputs, const std::function<std::vector<HostTensor>()>& again,
    const transforms::Tolerance& tol, std::string& log) {
  try {
    const transforms::Comparison c = transforms::compare_outputs(outputs, again(), tol);
    log += fmt::format("one more call in a fresh session, against the judged outputs: {}\n",
                       errors_text(c, tol));
    return c;
  } catch (const Error& e) {
    log += fmt::format("one more call, to check the runtime against itself, failed: {}\n",
                       e.what());
  } catch (const std::bad_alloc&) {
    log += "one more call, to check the runtime against itself, ran out of memory\n";
  }
  return std::nullopt;
}

}  // namespace

std::string reference_outputs_name(const Build& build) {
  if (!build.input_data.empty()) return "--input-data's";
  return build.stats.text("model_type", "").rfind("Keras", 0) == 0 ? "Keras's" : "PyTorch's";
}

Judgement judge_outputs(Build& build, const std::vector<HostTensor>& outputs,
                        const BenchmarkSetup& setup, std::string& log,
                        const std::function<std::vector<HostTensor>()>& again) {
  BuildStats& s = build.stats;
  // --input-data: its expected outputs, when it has them, are the reference (docs/measurement.md).
  const bool data = !build.input_data.empty();
  if (data && build.expected_outputs.empty()) {
    s.set("correctness", {{"reference", "none (--input-data has no expected outputs)"},
                          {"verdict", "not_checked"}});
    return {"not checked (--input-data has no expected outputs)", false};
  }
  if (!data && build.output_pbs.empty()) {
    s.set("correctness",
          {{"reference", "none (no PyTorch outputs: an ONNX input)"}, {"verdict", "not_checked"}});
    return {"not checked (no PyTorch outputs saved for this model)", false};
  }
  Compared r = compare_with_reference(build, outputs, setup, log);
  Judgement judged = worded(r, setup.tolerance);
  if (judged.mismatch && again) {
    r.repeat = repeat_of(outputs, again, setup.tolerance, log);
    judged = worded(r, setup.tolerance);
  }
  s.set("correctness", correctness_record(r, setup.tolerance));
  s.set("max_abs_error", r.worst_abs);
  s.set("max_rel_error", r.c.worst_rel_error);
  s.set("min_cosine", r.c.worst_cosine);
  return judged;
}

}  // namespace turnkey::engine_internal
