#include "turnkey/transforms/batch_variant.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "model_io.h"
#include "turnkey/common/error.h"

namespace turnkey::transforms {

namespace fs = std::filesystem;

namespace {

onnx::TensorShapeProto_Dimension* first_dim(onnx::ValueInfoProto& v) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape() ||
      v.type().tensor_type().shape().dim_size() == 0) {
    return nullptr;
  }
  return v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
}

}  // namespace

void write_batch_variant(const fs::path& input, const fs::path& output,
                         const std::vector<std::string>& inputs) {
  // The weights stay where they are (as in the intermediate check): only the graph is copied, its
  // external data files copied beside it by the kernel, so a large model costs no memory here.
  detail::LoadedModel loaded = detail::load_model(input, /*load_external_data=*/false);
  onnx::GraphProto* graph = loaded.model.mutable_graph();
  std::optional<int64_t> old_batch;
  for (const std::string& name : inputs) {
    onnx::ValueInfoProto* found = nullptr;
    for (auto& v : *graph->mutable_input()) {
      if (v.name() == name) found = &v;
    }
    onnx::TensorShapeProto_Dimension* dim = found ? first_dim(*found) : nullptr;
    if (!dim) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("batch variant: '{}' is not a graph input with a first dim", name));
    }
    if (dim->has_dim_value() && !old_batch) old_batch = dim->dim_value();
    dim->clear_dim_value();
    dim->set_dim_param(kBatchDimName);
  }
  if (old_batch) {
    for (auto& v : *graph->mutable_output()) {
      onnx::TensorShapeProto_Dimension* dim = first_dim(v);
      if (dim && dim->has_dim_value() && dim->dim_value() == *old_batch) {
        dim->clear_dim_value();
        dim->set_dim_param(kBatchDimName);
      }
    }
  }
  graph->clear_value_info();
  detail::check_output_location(input, output);
  if (loaded.had_external_data) {
    detail::copy_external_data(loaded.model, input.parent_path(), output.parent_path());
  }
  std::string data_name;
  detail::save_model(loaded.model, output, /*external_data=*/false, &data_name);
}

}  // namespace turnkey::transforms
