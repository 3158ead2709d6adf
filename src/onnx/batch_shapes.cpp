// --batch-sizes on an ONNX model: which inputs carry the batch, and their shapes at a batch.
// No libonnx here: only ModelFacts.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "turnkey/common/error.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey::onnx_model {

bool has_batch_dim(const ValueInfo& input) {
  if (!input.is_tensor() || !input.has_shape || input.dims.empty()) return false;
  // A fixed vector (10,) is one sample of 10 features; a symbolic one is a batch of scalars.
  return input.dims.size() >= 2 || !input.dims.front().known();
}

BatchShapes batch_input_shapes(const ModelFacts& facts, const InputShapes& given, int64_t batch) {
  if (batch < 1) {
    throw Error(ErrorKind::InvalidInput, fmt::format("batch size {}: must be at least 1", batch));
  }
  BatchShapes out;
  out.shapes = given;
  OnesNote ones;
  for (const ValueInfo& input : facts.inputs) {
    if (!has_batch_dim(input)) continue;
    out.batched.push_back(input.name);
    std::vector<int64_t> shape;
    auto it = given.find(input.name);
    if (it != given.end()) {
      shape = it->second;
    } else {
      // Dim 0 becomes the batch: only the others are named.
      OnesShape at_one = symbolic_dims_at_one(input, 1);
      ones.add(input.name, at_one);
      shape = std::move(at_one.shape);
    }
    if (shape.empty())
      continue;  // a rank the user's shape gives wrong: resolve_input_shapes says so
    shape.front() = batch;
    const Dim& first = input.dims.front();
    if (first.known() && first.value != batch) out.fixed.push_back(input.name);
    out.shapes[input.name] = shape;
  }
  if (out.batched.empty()) {
    throw Error(ErrorKind::InvalidInput,
                "no input has a batch dim (rank >= 2, or a symbolic first dim)");
  }
  out.ones_note = ones.text();
  return out;
}

std::string input_shapes_text(const InputShapes& shapes) {
  std::vector<std::string> parts;
  for (const auto& [name, dims] : shapes) {
    parts.push_back(fmt::format("{}:{}", name, fmt::join(dims, "x")));
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

}  // namespace turnkey::onnx_model
