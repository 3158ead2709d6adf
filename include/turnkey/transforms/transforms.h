// Build stages: file-to-file transforms of ONNX models, run between export and benchmark.
//   optimize_ort   ONNX Runtime's offline graph optimization, saved as a new ONNX file
//   convert_fp16   float32 -> float16 on the ONNX protobuf (libonnx), with a block list of ops
//                  kept in float32 behind Cast nodes
//   check_onnx     ONNX checker + strict shape inference + ONNX Runtime session: a verdict
//   compare_models how far a candidate's ORT outputs are from a reference's (the fp16 tolerance)
// See docs/build_stages.md for what each stage does, the block list and measured numbers.
//
// Pure functions on files: no global state besides ONNX Runtime's process-wide environment; safe
// to call from several threads on different files. Outputs are written atomically (temp file +
// rename), so a failed stage never leaves a half-written model behind its name.
//
// Errors: Error(InvalidInput) for a bad input model or option ("input: not found"), Error(Export)
// when the stage cannot produce its output ("output directory '/x' is not writable"),
// Error(Runtime) when ONNX Runtime fails on a model libonnx accepted. Messages are one line and do
// not repeat the input path (the caller names the input); output paths are named.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "turnkey/onnx/model_facts.h"

namespace turnkey::transforms {

// ---------------------------------------------------------------------------------------------
// optimize-ort

// ONNX Runtime graph optimization levels (each includes the ones before it):
//   basic     constant folding, redundant node elimination (Identity, Dropout, Slice, ...),
//             semantics-preserving fusions into standard ops (Conv+BatchNorm, Conv+Add,
//             Conv+Mul, Reshape). Output uses only standard ONNX ops: PORTABLE to any runtime.
//   extended  fusions into ONNX Runtime contrib ops of domain com.microsoft (FusedConv,
//             FusedMatMul, Gelu, LayerNorm/SkipLayerNorm, Attention, ...): runs on ONNX
//             Runtime only (any machine).
//   layout    NCHWc layout transforms (com.microsoft.nchwc ReorderInput/Conv/...), whose block
//             size follows this CPU's vector width (8 floats for AVX2, 16 for AVX-512): runs on
//             ONNX Runtime on a CPU with the same ISA only.
//   all       every level ONNX Runtime has (in 1.29 the same as layout): not portable.
enum class OrtOptLevel { Basic, Extended, Layout, All };

// "basic" | "extended" | "layout" | "all"; throws Error(InvalidInput) naming the valid ones.
OrtOptLevel parse_ort_opt_level(const std::string& name);
const char* ort_opt_level_name(OrtOptLevel level);

struct OptimizeResult {
  // All nodes, subgraphs (If/Loop/Scan bodies) and model-local function bodies (once per call)
  // included.
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
  // Ops of the output outside the standard domains (ai.onnx, ai.onnx.ml), "domain::Op" -> count.
  std::map<std::string, int64_t> runtime_specific_ops;
  bool portable = true;           // runtime_specific_ops is empty
  std::string external_data;      // file name of the output's external data beside it, or ""
  int64_t output_size_bytes = 0;  // model file + external data
  double duration_ms = 0;         // load + optimize + save + reload check
};

// Loads `input` in ONNX Runtime (CPU) at `level`, saves the optimized graph to `output` and checks
// that ONNX Runtime loads the saved file. Models whose input keeps weights as external data are
// saved with external data too ("<output file name>.data" beside it). Run the output with ORT
// graph optimizations disabled: it needs no more, and ONNX Runtime 1.29 fails to re-optimize some
// optimized models at extended and above ("Attempt to replace the existing tensor"). Throws
// InvalidInput for a missing/corrupt input or output == input, Export when the output directory
// is missing or not writable, Runtime when ONNX Runtime rejects the model or its own output.
OptimizeResult optimize_ort(const std::filesystem::path& input, const std::filesystem::path& output,
                            OrtOptLevel level);

// ---------------------------------------------------------------------------------------------
// convert-fp16

// Op types (default domain) kept in float32 by default, with the reason for each; see
// docs/build_stages.md. Ops whose schema does not allow float16, ops whose float output type
// comes from an attribute (RandomNormal, EyeLike, window functions, ...) other than
// Cast/Constant/ConstantOfShape, ops of other domains, and ops with subgraphs (If, Loop, Scan)
// stay float32 whatever this list says.
const std::vector<std::string>& default_fp16_op_block_list();

struct Fp16Options {
  // Graph inputs and outputs keep type float32, with Cast nodes at the boundary; false makes
  // them float16 (callers must then feed float16).
  bool keep_io_types = true;
  std::vector<std::string> op_block_list = default_fp16_op_block_list();  // op types
  std::vector<std::string> node_block_list;                               // node names
};

struct Fp16Result {
  // Model-local functions (torch's dynamo exporter writes them) inlined before the conversion,
  // so their bodies are converted like the rest of the graph.
  int64_t local_functions_inlined = 0;
  int64_t nodes_before = 0;  // main graph, local functions inlined
  int64_t nodes_after = 0;   // main graph, Casts included
  // Nodes of the input whose float tensors are float16 now (ONNX Runtime's CPU provider still
  // computes most ops in float32 behind Casts of its own; see docs/build_stages.md).
  int64_t nodes_fp16 = 0;
  // Nodes with float inputs or outputs that stay float32, by op type ("Resize" -> 2): the block
  // list, ops without float16 in their schema, control flow, other domains.
  std::map<std::string, int64_t> kept_fp32_ops;
  int64_t casts_added = 0;
  int64_t initializers_fp16 = 0;        // float initializers converted to float16
  int64_t initializers_kept_fp32 = 0;   // float initializers only float32 nodes read
  int64_t initializers_duplicated = 0;  // read by both: kept float32 plus a float16 copy
  // Elements of converted initializers and Constant values: finite values beyond float16's
  // range (|x| > 65504) clamped to +-65504; nonzero values below its smallest subnormal
  // (|x| < 2^-24, e.g. an epsilon of 1e-12) raised to +-2^-24 so they stay nonzero.
  int64_t values_clamped = 0;
  int64_t values_raised = 0;
  std::string external_data;      // file name of the output's external data beside it, or ""
  int64_t input_size_bytes = 0;   // model file + external data
  int64_t output_size_bytes = 0;  // model file + external data
  double duration_ms = 0;
};

// Converts float32 tensors of `input` to float16 and writes `output`; the input's external data
// is loaded first (only files inside the model's folder). The input must pass the ONNX checker
// and strict shape inference and have a default opset of 7..what libonnx knows; the output passes
// both before it is written. Subgraphs (If/Loop/Scan bodies) stay float32 as a
// whole: outer float16 values they read get a Cast to float32. Output weights are external data
// ("<output file name>.data") when the input's were or the model would exceed protobuf's 2 GB.
// Throws InvalidInput for a missing/corrupt input, one that fails the ONNX checker, or output ==
// input; Export when the output cannot be written or (a converter bug) fails the checker.
Fp16Result convert_fp16(const std::filesystem::path& input, const std::filesystem::path& output,
                        const Fp16Options& options = {});

// ---------------------------------------------------------------------------------------------
// check-onnx

struct CheckVerdict {
  bool passed = false;
  // Where it failed: "parse", "checker", "shape inference", "onnxruntime"; "" when passed.
  std::string stage;
  // One line: why it failed, or what passed ("ONNX checker, strict shape inference, ONNX
  // Runtime 1.29.0 session"), with the checker's note for models newer than libonnx.
  std::string reason;
  double duration_ms = 0;
};

// Never throws for what the file contains (that is the verdict); throws Error(InvalidInput) when
// there is no file to judge (not found, a directory, not a regular file) and Error(Io) when it
// cannot be read. The ORT session uses all graph optimizations, as the ort runtime does.
CheckVerdict check_onnx(const std::filesystem::path& path);

// ---------------------------------------------------------------------------------------------
// Output comparison (the fp16 tolerance; optimize_ort's equivalence)

// A candidate passes when, for every float output (float32/16/64, bfloat16),
// max|cand - ref| / max|ref| <= max_rel_error and cosine(cand, ref) >= min_cosine (both over the
// whole output tensor, in double), and every other output is equal element for element.
struct Tolerance {
  double max_rel_error = 1e-2;
  double min_cosine = 0.999;
};

struct OutputDiff {
  std::string name;
  std::string dtype;             // of the candidate's output ("float16")
  double max_abs_error = 0;      // max |cand - ref|; inf when a NaN/Inf appears on one side only
  double max_abs_reference = 0;  // max |ref|
  double rel_error = 0;          // max_abs_error / max_abs_reference (max_abs_error if ref is 0)
  double cosine = 1;             // 1 when both are all zeros
  int64_t mismatches = 0;        // non-float outputs: elements that differ
  bool within = true;
  // Shapes that differ only in dims of size 1 (OpenCV 4.6 has no 1-D tensors: (5,) comes back
  // as (5, 1)) hold the same elements in the same order and are compared so; any other shape
  // difference is a mismatch. Either way `shape_note` says what differed ("" when nothing).
  bool shape_mismatch = false;
  std::string shape_note;
  // Rows ordered by a score (detections after NMS, top-k): the errors above are over rows
  // matched up to their order among tied scores (see Comparison). 0 and 0 when no row moved.
  int64_t reordered_rows = 0;    // same row as the reference's, at another tied position
  int64_t substituted_rows = 0;  // a different row whose score ties with the reference's
};

// Outputs ordered by a score (a rank-1 float output whose reference values are sorted, and the
// outputs of the same result with the same leading dimension: boxes, labels, masks of one
// image) leave the order, and the choice, among rows whose scores tie within the tolerance to
// the implementation. When elementwise comparison fails there, rows are matched again:
//  - a candidate row equal (within tolerance) to a reference row whose position holds a score
//    tied with its own is the same row, reordered: that is still within tolerance;
//  - rows left unmatched are paired in order; a pair whose scores tie, where the reference's
//    score also ties with a neighbouring row's (so several rows had that score to choose
//    from), is a substitution, which cannot tell tie-breaking from a wrong output that kept the
//    scores right: `inconclusive`.
// Any other unmatched pair leaves the outputs outside the tolerance.
struct Comparison {
  std::vector<OutputDiff> outputs;  // in the reference's output order
  bool within = true;               // every output within the tolerance (up to reordered ties)
  bool inconclusive = false;        // within only up to substitutions among tied scores
  int64_t ordered_rows = 0;         // rows of the groups matched again (failed elementwise)
  int64_t reordered_rows = 0;       // of those
  int64_t substituted_rows = 0;     // of those
  double worst_rel_error = 0;
  double worst_cosine = 1;
};

struct CompareOptions {
  onnx_model::InputShapes shapes;  // whole-shape overrides; needed for symbolic dims
  Tolerance tolerance;
  uint64_t seed = 0x7475726e6b6579ULL;  // for onnx_model::generate_inputs
  // ONNX Runtime graph optimizations per model: all (the ort runtime's default, so the
  // comparison sees what the benchmark runs) or none. Use none for a model optimize_ort already
  // optimized: ONNX Runtime 1.29 fails to optimize some of those again ("Attempt to replace the
  // existing tensor"), and they need no more.
  bool optimize_reference = true;
  bool optimize_candidate = true;
};

// Runs both models in ONNX Runtime (CPU, 1 thread) on the same inputs: generated for the
// reference's inputs, cast to float16 where the candidate takes float16. Both must have the same
// input and output names. Throws InvalidInput for models or shapes it cannot feed (symbolic dims
// without `shapes`, string outputs), Runtime when ORT fails.
Comparison compare_models(const std::filesystem::path& reference,
                          const std::filesystem::path& candidate,
                          const CompareOptions& options = {});

// The same comparison on outputs already in hand, matched by position (a runtime's outputs
// against the PyTorch outputs saved at export, in graph-output order). Names are the
// reference's. Throws Error(NumericMismatch) when the counts differ.
Comparison compare_outputs(const std::vector<HostTensor>& reference,
                           const std::vector<HostTensor>& candidate, const Tolerance& tolerance);

// "" when no row moved, else what the ties did, for a log or a status line: "2 of 100 rows in
// another order among tied scores; 3 of 100 rows other than the reference's, with tied scores"
// (the second part makes the comparison inconclusive).
std::string describe_ties(const Comparison& comparison);

// ---------------------------------------------------------------------------------------------
// Outputs that carry no signal (docs/measurement.md): a comparison of an empty, all-zero or
// constant reference checks nothing, however close the runtime's numbers are.

// "" when some tensor of `reference` has elements that differ (comparing it checks something),
// else why not, for a verdict line: "every output is empty", "every output is all zeros",
// "every output is zero or subnormal, ...", "every output is empty or constant". Non-finite and
// subnormal values (float32, bfloat16, float64) are not signal.
std::string no_signal_reason(const std::vector<HostTensor>& reference);

// Writes to `output` a copy of the ONNX model at `model` whose main graph also outputs the
// values `names` (after its own outputs, in that order), for a check of intermediate tensors;
// never benchmarked. Types come from the graph (value_info or shape inference), else from
// `fallback_types` (same order, DType::Unknown for none). Throws Error(InvalidInput) naming a
// value the main graph does not have, Error(Export) when it cannot write.
void add_graph_outputs(const std::filesystem::path& model, const std::filesystem::path& output,
                       const std::vector<std::string>& names,
                       const std::vector<DType>& fallback_types);

}  // namespace turnkey::transforms
