// Small ONNX models built with libonnx's protobuf classes, for tests that need real files. Weights
// are deterministic (same bytes on every run). The named models are checked (ONNX checker + strict
// shape inference) before they are written; save_model() writes anything, for hostile-input tests.
// Functions throw std::runtime_error on failure.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "turnkey/onnx/onnx_proto.h"

namespace turnkey::test {

inline constexpr int kFactoryOpset = 17;
inline constexpr int kFactoryIrVersion = 8;

// input [1,in] float -> MatMul(W[in,out]) -> Add(B[out]) -> Relu -> output [1,out].
// Parameters: in*out + out.
void linear_relu(const std::filesystem::path& path, int in = 16, int out = 4);

// input [1,3,32,32] -> Conv(8x3x3x3, pad 1) + bias -> Relu -> GlobalAveragePool -> Flatten
// -> Gemm(8x10) + bias -> output [1,10]. Parameters: 216 + 8 + 80 + 10 = 314.
void small_conv_net(const std::filesystem::path& path);

// input_ids [1,8] int64 -> Gather(embedding [100,16], axis 0) -> output [1,8,16] float.
// Parameters: 1600.
void int64_gather(const std::filesystem::path& path);

// x ["batch",16] -> MatMul(W[16,4]) -> Add(B[4]) -> Relu -> y ["batch",4]. Parameters: 68.
void symbolic_dim(const std::filesystem::path& path);

// s [1] complex64 -> Identity -> t [1] complex64: a valid model turnkey cannot make inputs for.
void complex_input(const std::filesystem::path& path);

// linear_relu(16, 4) with W and B stored as ONNX external data in "<file name>.weights" beside
// the model (W at offset 0, B after it). Parameters: 68.
void external_data_linear(const std::filesystem::path& path);

// A post-LayerNorm transformer encoder block (hidden 32, 2 heads of 16, FFN 64, sequence 8):
// input_ids [1,8] int64 -> Gather(embedding [100,32]) + position [8,32] -> LayerNormalization
// -> Q/K/V MatMul+Add -> Reshape [1,8,2,16] -> Transpose -> scores * Constant 0.25 + mask
// (attention_mask [1,8] int64 -> Cast(to FLOAT) * 0.01, (1 - m) * -100, Unsqueeze) -> Softmax
// -> context -> Transpose/Reshape -> output projection + residual -> LayerNormalization -> FFN
// (MatMul, GELU as x * 0.5 * (1 + Erf(x / sqrt 2)), MatMul) + residual -> output [1,8,32] float.
// Scalars are Constant nodes (one as value_float). Layer norm scales are 1 + w, variances >0.
void tiny_transformer(const std::filesystem::path& path);

// input [1,3,16,16] -> Conv(8x3x3x3, pad 1) -> BatchNormalization -> Relu -> Resize(scales
// [1,1,2,2], nearest) -> Conv(4x8x3x3, pad 1) -> Relu -> GlobalAveragePool -> Flatten
// -> Gemm(4x10) -> output [1,10].
void conv_bn_resize_net(const std::filesystem::path& path);

// x [1,4] float -> MatMul(W[4,4]) = mm; cond = ReduceSum(x) > 0; If(cond): then mm + c1, else
// c2 - mm (both branches read mm from the outer graph; c1, c2 are branch initializers near 1)
// -> Relu -> y [1,4].
void if_subgraph_net(const std::filesystem::path& path);

// A model whose one Expand asks ONNX Runtime for 4 TiB at run time (its input [1] to the shape
// [2^20, 2^20] an initializer holds): loads, then runs out of memory on any machine.
void huge_expand(const std::filesystem::path& path);
// A model whose one output is `elements` floats (its input [1] expanded; 2^28: 1 GiB).
void big_output(const std::filesystem::path& path, int64_t elements);

void write_bytes(const std::filesystem::path& path, std::string_view bytes);
// Copies the first floor(size * fraction) bytes of src to dst.
void truncated_copy(const std::filesystem::path& src, const std::filesystem::path& dst,
                    double fraction);

// Building blocks for tests that make their own (possibly broken) models.
struct DimSpec {
  DimSpec(int64_t v) : value(v) {}      // NOLINT: implicit on purpose, {1, "batch", 16}
  DimSpec(const char* p) : param(p) {}  // NOLINT
  int64_t value = -1;
  std::string param;
};
// ir_version kFactoryIrVersion, default-domain opset `opset`, graph named "g".
onnx::ModelProto new_model(int opset = kFactoryOpset);
void set_value_info(onnx::ValueInfoProto* v, const std::string& name, int elem_type,
                    const std::vector<DimSpec>& dims);
onnx::ValueInfoProto* add_input(onnx::GraphProto* g, const std::string& name, int elem_type,
                                const std::vector<DimSpec>& dims);
onnx::ValueInfoProto* add_output(onnx::GraphProto* g, const std::string& name, int elem_type,
                                 const std::vector<DimSpec>& dims);
// FLOAT initializer in raw_data; values are a fixed function of `salt` and the index, in
// [-0.1, 0.1].
onnx::TensorProto* add_float_initializer(onnx::GraphProto* g, const std::string& name,
                                         const std::vector<int64_t>& dims, int salt);
// Initializers with the given values.
onnx::TensorProto* add_float_values(onnx::GraphProto* g, const std::string& name,
                                    const std::vector<int64_t>& dims,
                                    const std::vector<float>& values);
onnx::TensorProto* add_int64_values(onnx::GraphProto* g, const std::string& name,
                                    const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& values);
onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op_type,
                          const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs);
onnx::AttributeProto* add_ints(onnx::NodeProto* node, const std::string& name,
                               const std::vector<int64_t>& values);
void add_int(onnx::NodeProto* node, const std::string& name, int64_t value);
void add_string_attr(onnx::NodeProto* node, const std::string& name, const std::string& value);
void save_model(const onnx::ModelProto& model, const std::filesystem::path& path);
// Throws std::runtime_error with libonnx's message when the checker or strict shape inference
// rejects the model.
void check_model_or_throw(const onnx::ModelProto& model);

}  // namespace turnkey::test
