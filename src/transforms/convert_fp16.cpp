// convert-fp16 on the ONNX protobuf.
//
// Every float32 tensor value of the main graph gets a precision where it is produced (its
// "home"): float16 for outputs of nodes that compute in float16, float32 for graph inputs kept
// float32, outputs of nodes kept float32, and initializers only float32 nodes read. A node that
// reads a value in the other precision reads it through a Cast, one per (value, precision),
// placed before the first such reader. Which nodes compute in float16 follows each op's schema:
// per type parameter (T, T1, ...), float16 when the parameter is bound to float, allows
// tensor(float16) and is bound by an input (a parameter only outputs have takes its type from an
// attribute: RandomNormal's dtype, window functions' output_datatype; only Cast, Constant and
// ConstantOfShape get their attribute rewritten). So LayerNormalization's Mean output (type U,
// float/bfloat16 only) stays float32 while its Y becomes float16, and literal types
// (Resize's scales: tensor(float)) stay float32 without a block-list entry.
#include <fmt/format.h>

#include <chrono>

#include "fp16_converter.h"
#include "model_io.h"
#include "turnkey/transforms/transforms.h"
#include "turnkey/common/error.h"

namespace turnkey::transforms {

namespace fs = std::filesystem;
using fp16::invalid;

namespace {

struct BlockEntry {
  const char* op;
  const char* reason;  // docs/build_stages.md repeats these
};

// Kept float32 by default. Numerics first: float16 has 11 significant bits and a largest finite
// value of 65504.
constexpr BlockEntry kDefaultBlockList[] = {
    // Coordinate and index arithmetic: float16 cannot represent pixel coordinates above 2048
    // exactly, so sampling positions shift (onnxconverter-common blocks these too).
    {"Resize", "coordinate arithmetic"},
    {"Upsample", "coordinate arithmetic"},
    {"RoiAlign", "coordinate arithmetic"},
    {"GridSample", "coordinate arithmetic"},
    {"NonMaxSuppression", "box overlap thresholds, index outputs"},
    {"TopK", "near-ties reorder: different indices"},
    {"Range", "start + i*delta drifts; ends off by one element"},
    {"CumSum", "running sums lose the small terms and overflow"},
    // Outputs that grow with the reduced size overflow 65504 or lose every small term.
    {"ReduceSum", "sum overflows float16"},
    {"ReduceSumSquare", "sum of squares overflows float16"},
    {"ReduceProd", "product overflows float16"},
    {"ReduceL1", "sum overflows float16"},
    {"ReduceL2", "sum of squares overflows float16"},
    {"ReduceLogSum", "sum overflows float16"},
    {"ReduceLogSumExp", "exp overflows float16 above 11.1"},
    // Recurrences accumulate rounding error over the sequence.
    {"LSTM", "error accumulates over time steps"},
    {"GRU", "error accumulates over time steps"},
    {"RNN", "error accumulates over time steps"},
    // Its ONNX function body (still in ONNX 1.23) adds a float32 epsilon: as float16 it fails
    // type inference, and runtimes that expand the function fail the same way.
    {"MeanVarianceNormalization", "function body is float32-only"},
    // Random draws in float16 are a different distribution (and their type is an attribute).
    {"RandomNormal", "dtype attribute; distribution"},
    {"RandomUniform", "dtype attribute; distribution"},
    {"RandomNormalLike", "dtype attribute; distribution"},
    {"RandomUniformLike", "dtype attribute; distribution"},
    {"Multinomial", "dtype attribute; probabilities"},
    {"Bernoulli", "dtype attribute; probabilities"},
    // Subgraphs stay float32 as a whole (listed for the record; always kept).
    {"If", "subgraph kept float32"},
    {"Loop", "subgraph kept float32"},
    {"Scan", "subgraph kept float32"},
    {"SequenceMap", "subgraph kept float32"},
};

constexpr int64_t kMinOpset = 7;  // Cast with an integer `to` since 6; 7 is the oldest ORT runs

}  // namespace

const std::vector<std::string>& default_fp16_op_block_list() {
  static const std::vector<std::string> list = [] {
    std::vector<std::string> ops;
    for (const auto& e : kDefaultBlockList) ops.emplace_back(e.op);
    return ops;
  }();
  return list;
}

Fp16Result convert_fp16(const fs::path& input, const fs::path& output, const Fp16Options& options) {
  const auto start = std::chrono::steady_clock::now();
  Fp16Result result;
  detail::LoadedModel loaded;
  try {
    loaded = detail::load_model(input, /*load_external_data=*/true);
    detail::check_not_newer_than_libonnx(loaded.model);
    const int64_t opset = detail::default_opset(loaded.model);
    if (opset == 0) throw invalid("the model imports no ai.onnx opset (the Casts need one)");
    if (opset < kMinOpset) {
      // Cast-1 takes its type as a string, which neither libonnx's type inference nor ONNX
      // Runtime's own inserted Casts handle.
      throw invalid(
          fmt::format("opset {} is below {}, the oldest convert-fp16 handles (upgrade "
                      "the model with the ONNX version converter first)",
                      opset, kMinOpset));
    }
    // The converter trusts shape inference for value types: only checked models come in.
    detail::check_model_strict(loaded.model);
    // Function bodies are converted with the rest of the graph, in place of their calls.
    result.local_functions_inlined = detail::inline_local_functions(loaded.model);
  } catch (const Error& e) {
    throw e.with_context("input");
  }
  detail::check_output_location(input, output);
  result.input_size_bytes = loaded.size_bytes;

  fp16::Converter(&loaded.model, options, &result).run();
  try {
    detail::check_model_strict(loaded.model);
  } catch (const Error& e) {
    throw Error(ErrorKind::Export, fmt::format("the float16 model fails the check: {}", e.what()));
  }
  // Above ~1.8 GB the serialized model would not fit protobuf's 2 GB with its graph.
  const bool external =
      loaded.had_external_data || loaded.model.ByteSizeLong() > (size_t{1800} << 20);
  result.output_size_bytes =
      detail::save_model(loaded.model, output, external, &result.external_data);
  result.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace turnkey::transforms
