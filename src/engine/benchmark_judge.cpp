// The correctness judgement: a runtime's outputs against the PyTorch outputs saved at export,
// with the verdict decided in one place (docs/measurement.md).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "benchmark.h"
#include "turnkey/common/error.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<HostTensor> read_outputs(const std::vector<fs::path>& files) {
  std::vector<HostTensor> out;
  for (const fs::path& f : files) out.push_back(onnx_model::read_tensor_pb(f));
  return out;
}

}  // namespace

Judgement judge_outputs(Build& build, const std::vector<HostTensor>& outputs,
                        const build::Tolerance& tol) {
  BuildStats& s = build.stats;
  if (build.output_pbs.empty()) {
    s.set("correctness",
          {{"reference", "none (no PyTorch outputs: an ONNX input)"}, {"verdict", "not_checked"}});
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
    if (!d.shape_note.empty()) per_output.back()["shape_note"] = d.shape_note;
    worst_abs = std::max(worst_abs, d.max_abs_error);
    if (!d.within && d.mismatches > 0) {
      int_mismatches += fmt::format("; '{}': {} elements differ", d.name, d.mismatches);
    }
    if (!d.shape_note.empty()) int_mismatches += "; " + d.shape_note;
  }
  const bool within = compare_error.empty() && c.within;
  const std::string ties = build::describe_ties(c);
  const char* verdict = !within          ? "outside_tolerance"
                        : c.inconclusive ? "inconclusive"
                        : ties.empty()   ? "within_tolerance"
                                         : "within_tolerance_up_to_ties";
  json correctness = {{"reference", "PyTorch outputs saved at export"},
                      {"tolerance_max_rel_error", tol.max_rel_error},
                      {"tolerance_min_cosine", tol.min_cosine},
                      {"outputs", per_output},
                      {"within", within},
                      {"verdict", verdict}};
  if (!compare_error.empty()) correctness["error"] = compare_error;
  if (!ties.empty()) correctness["ties"] = ties;
  s.set("correctness", std::move(correctness));
  s.set("max_abs_error", worst_abs);
  s.set("max_rel_error", c.worst_rel_error);
  s.set("min_cosine", c.worst_cosine);

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
  // The verdict word first (the README and docs/measurement.md name it), then the numbers.
  if (!within) return {"outside tolerance: " + errors, true};
  return {ties.empty() ? "within tolerance: " + errors
                       : "within tolerance up to ties: " + errors + "; " + ties,
          false};
}

}  // namespace turnkey::engine_internal
