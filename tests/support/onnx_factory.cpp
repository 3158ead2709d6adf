#include "support/onnx_factory.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace turnkey::test {

namespace fs = std::filesystem;

namespace {

// Deterministic, spread-out values in [-0.1, 0.1]; integer arithmetic so every platform agrees.
float weight_value(int salt, int64_t i) {
  int64_t k = (i * 7919 + static_cast<int64_t>(salt) * 104729) % 201;
  return static_cast<float>(k - 100) / 1000.0f;
}

std::vector<float> weights(int64_t n, int salt) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = weight_value(salt, i);
  return v;
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

void add_float_attr(onnx::NodeProto* node, const std::string& name, float value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

// A Constant node holding a float scalar, as a tensor `value` or (value_float) as a float.
void add_scalar_constant(onnx::GraphProto* g, const std::string& output, float value,
                         bool as_value_float = false) {
  auto* node = add_node(g, "Constant", {}, {output});
  if (as_value_float) {
    add_float_attr(node, "value_float", value);
    return;
  }
  auto* a = node->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_float_data(value);
}

// 1 + w: a layer norm scale near one, as trained models have.
std::vector<float> near_one(int64_t n, int salt) {
  std::vector<float> v = weights(n, salt);
  for (float& x : v) x += 1.0f;
  return v;
}

void save_checked(const onnx::ModelProto& model, const fs::path& path) {
  check_model_or_throw(model);
  save_model(model, path);
}

// The graph of linear_relu / symbolic_dim: batch is a DimSpec so both share it.
onnx::ModelProto linear_relu_model(int in, int out, const DimSpec& batch, const char* input,
                                   const char* output) {
  onnx::ModelProto model = new_model();
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, input, onnx::TensorProto::FLOAT, {batch, in});
  add_output(g, output, onnx::TensorProto::FLOAT, {batch, out});
  add_float_initializer(g, "W", {in, out}, 1);
  add_float_initializer(g, "B", {out}, 2);
  add_node(g, "MatMul", {input, "W"}, {"mm"});
  add_node(g, "Add", {"mm", "B"}, {"biased"});
  add_node(g, "Relu", {"biased"}, {output});
  return model;
}

}  // namespace

onnx::AttributeProto* add_ints(onnx::NodeProto* node, const std::string& name,
                               const std::vector<int64_t>& values) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
  return a;
}

void add_int(onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void add_string_attr(onnx::NodeProto* node, const std::string& name, const std::string& value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

onnx::ModelProto new_model(int opset) {
  onnx::ModelProto model;
  model.set_ir_version(kFactoryIrVersion);
  model.set_producer_name("turnkey-tests");
  model.set_producer_version("1");
  auto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  model.mutable_graph()->set_name("g");
  return model;
}

void set_value_info(onnx::ValueInfoProto* v, const std::string& name, int elem_type,
                    const std::vector<DimSpec>& dims) {
  v->set_name(name);
  auto* tensor = v->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  auto* shape = tensor->mutable_shape();
  for (const DimSpec& d : dims) {
    auto* dim = shape->add_dim();
    if (!d.param.empty()) {
      dim->set_dim_param(d.param);
    } else if (d.value >= 0) {
      dim->set_dim_value(d.value);
    }
  }
}

onnx::ValueInfoProto* add_input(onnx::GraphProto* g, const std::string& name, int elem_type,
                                const std::vector<DimSpec>& dims) {
  auto* v = g->add_input();
  set_value_info(v, name, elem_type, dims);
  return v;
}

onnx::ValueInfoProto* add_output(onnx::GraphProto* g, const std::string& name, int elem_type,
                                 const std::vector<DimSpec>& dims) {
  auto* v = g->add_output();
  set_value_info(v, name, elem_type, dims);
  return v;
}

onnx::TensorProto* add_float_initializer(onnx::GraphProto* g, const std::string& name,
                                         const std::vector<int64_t>& dims, int salt) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  std::vector<float> values = weights(product(dims), salt);
  t->set_raw_data(values.data(), values.size() * sizeof(float));
  return t;
}

onnx::TensorProto* add_float_values(onnx::GraphProto* g, const std::string& name,
                                    const std::vector<int64_t>& dims,
                                    const std::vector<float>& values) {
  if (static_cast<int64_t>(values.size()) != product(dims)) {
    throw std::runtime_error("add_float_values: " + name + ": values do not match dims");
  }
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(values.data(), values.size() * sizeof(float));
  return t;
}

onnx::TensorProto* add_int64_values(onnx::GraphProto* g, const std::string& name,
                                    const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& values) {
  if (static_cast<int64_t>(values.size()) != product(dims)) {
    throw std::runtime_error("add_int64_values: " + name + ": values do not match dims");
  }
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(values.data(), values.size() * sizeof(int64_t));
  return t;
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op_type,
                          const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
  auto* node = g->add_node();
  node->set_op_type(op_type);
  node->set_name(op_type + "_" + std::to_string(g->node_size()));
  for (const auto& i : inputs) node->add_input(i);
  for (const auto& o : outputs) node->add_output(o);
  return node;
}

void check_model_or_throw(const onnx::ModelProto& model) {
  try {
    onnx::checker::check_model(model);
    onnx::ModelProto copy = model;
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("factory model fails the ONNX checker: ") + e.what());
  }
}

void save_model(const onnx::ModelProto& model, const fs::path& path) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw std::runtime_error("cannot serialize model");
  write_bytes(path, bytes);
}

void linear_relu(const fs::path& path, int in, int out) {
  save_checked(linear_relu_model(in, out, DimSpec(1), "input", "output"), path);
}

void symbolic_dim(const fs::path& path) {
  save_checked(linear_relu_model(16, 4, DimSpec("batch"), "x", "y"), path);
}

void complex_input(const fs::path& path) {
  onnx::ModelProto model = new_model();
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "s", onnx::TensorProto::COMPLEX64, {1});
  add_output(g, "t", onnx::TensorProto::COMPLEX64, {1});
  add_node(g, "Identity", {"s"}, {"t"});
  save_checked(model, path);
}

void small_conv_net(const fs::path& path) {
  onnx::ModelProto model = new_model();
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "input", onnx::TensorProto::FLOAT, {1, 3, 32, 32});
  add_output(g, "output", onnx::TensorProto::FLOAT, {1, 10});
  add_float_initializer(g, "conv.weight", {8, 3, 3, 3}, 1);
  add_float_initializer(g, "conv.bias", {8}, 2);
  add_float_initializer(g, "fc.weight", {8, 10}, 3);
  add_float_initializer(g, "fc.bias", {10}, 4);
  auto* conv = add_node(g, "Conv", {"input", "conv.weight", "conv.bias"}, {"conv"});
  add_ints(conv, "kernel_shape", {3, 3});
  add_ints(conv, "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"conv"}, {"relu"});
  add_node(g, "GlobalAveragePool", {"relu"}, {"pool"});
  auto* flatten = add_node(g, "Flatten", {"pool"}, {"flat"});
  add_int(flatten, "axis", 1);
  add_node(g, "Gemm", {"flat", "fc.weight", "fc.bias"}, {"output"});
  save_checked(model, path);
}

void int64_gather(const fs::path& path) {
  onnx::ModelProto model = new_model();
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "input_ids", onnx::TensorProto::INT64, {1, 8});
  add_output(g, "output", onnx::TensorProto::FLOAT, {1, 8, 16});
  add_float_initializer(g, "embedding", {100, 16}, 5);
  auto* gather = add_node(g, "Gather", {"embedding", "input_ids"}, {"output"});
  add_int(gather, "axis", 0);
  save_checked(model, path);
}

void huge_expand(const fs::path& path) {
  onnx::ModelProto model = new_model();
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {1});
  add_output(g, "y", onnx::TensorProto::FLOAT, {1 << 20, 1 << 20});
  add_int64_values(g, "shape", {2}, {1 << 20, 1 << 20});
  add_node(g, "Expand", {"x", "shape"}, {"y"});
  save_checked(model, path);
}

void big_output(const fs::path& path, int64_t elements) {
  onnx::ModelProto model = new_model();
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {1});
  add_output(g, "y", onnx::TensorProto::FLOAT, {elements});
  add_int64_values(g, "shape", {1}, {elements});
  add_node(g, "Expand", {"x", "shape"}, {"y"});
  save_checked(model, path);
}

void external_data_linear(const fs::path& path) {
  onnx::ModelProto model = linear_relu_model(16, 4, DimSpec(1), "input", "output");
  const std::string data_name = path.filename().string() + ".weights";
  std::string blob;
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    const std::string raw = t.raw_data();
    auto add_entry = [&](const std::string& key, const std::string& value) {
      auto* e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add_entry("location", data_name);
    add_entry("offset", std::to_string(blob.size()));
    add_entry("length", std::to_string(raw.size()));
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    t.clear_raw_data();
    blob += raw;
  }
  write_bytes(path.parent_path() / data_name, blob);
  // The in-memory checker cannot see the data file beside the model: check through the path.
  save_model(model, path);
  try {
    onnx::checker::check_model(path.string());
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("factory model fails the ONNX checker: ") + e.what());
  }
}

void tiny_transformer(const fs::path& path) {
  constexpr int64_t kSeq = 8, kHidden = 32, kHeads = 2, kHeadDim = 16, kFfn = 64;
  onnx::ModelProto model = new_model();
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "input_ids", onnx::TensorProto::INT64, {1, kSeq});
  add_input(g, "attention_mask", onnx::TensorProto::INT64, {1, kSeq});
  add_output(g, "output", onnx::TensorProto::FLOAT, {1, kSeq, kHidden});

  add_float_initializer(g, "embedding", {100, kHidden}, 11);
  add_float_initializer(g, "position", {kSeq, kHidden}, 12);
  add_float_values(g, "ln1.scale", {kHidden}, near_one(kHidden, 13));
  add_float_initializer(g, "ln1.bias", {kHidden}, 14);
  add_float_values(g, "ln2.scale", {kHidden}, near_one(kHidden, 15));
  add_float_initializer(g, "ln2.bias", {kHidden}, 16);
  add_int64_values(g, "heads_shape", {4}, {1, kSeq, kHeads, kHeadDim});
  add_int64_values(g, "hidden_shape", {3}, {1, kSeq, kHidden});
  add_int64_values(g, "mask_axes", {2}, {1, 2});

  auto* gather = add_node(g, "Gather", {"embedding", "input_ids"}, {"embedded"});
  add_int(gather, "axis", 0);
  add_node(g, "Add", {"embedded", "position"}, {"x0"});
  auto* ln1 = add_node(g, "LayerNormalization", {"x0", "ln1.scale", "ln1.bias"}, {"x1"});
  add_int(ln1, "axis", -1);
  add_float_attr(ln1, "epsilon", 1e-5f);

  int salt = 20;
  auto linear = [&](const std::string& in, const std::string& name, int64_t n_in, int64_t n_out) {
    add_float_initializer(g, name + ".weight", {n_in, n_out}, salt++);
    add_float_initializer(g, name + ".bias", {n_out}, salt++);
    add_node(g, "MatMul", {in, name + ".weight"}, {name + ".mm"});
    add_node(g, "Add", {name + ".mm", name + ".bias"}, {name});
  };
  // Heads: [1,8,32] -> [1,8,2,16] -> [1,2,8,16] (keys: [1,2,16,8]).
  auto heads = [&](const std::string& name, const std::vector<int64_t>& perm) {
    linear("x1", name, kHidden, kHidden);
    add_node(g, "Reshape", {name, "heads_shape"}, {name + ".split"});
    auto* t = add_node(g, "Transpose", {name + ".split"}, {name + ".heads"});
    add_ints(t, "perm", perm);
  };
  heads("q", {0, 2, 1, 3});
  heads("k", {0, 2, 3, 1});
  heads("v", {0, 2, 1, 3});
  add_node(g, "MatMul", {"q.heads", "k.heads"}, {"scores"});
  add_scalar_constant(g, "scale", 0.25f);
  add_node(g, "Mul", {"scores", "scale"}, {"scaled"});

  // Mask values are whatever the caller feeds (turnkey generates 0..99): scaled into [0, 1).
  auto* cast = add_node(g, "Cast", {"attention_mask"}, {"mask_float"});
  add_int(cast, "to", onnx::TensorProto::FLOAT);
  add_scalar_constant(g, "mask_unit", 0.01f);
  add_node(g, "Mul", {"mask_float", "mask_unit"}, {"mask_scaled"});
  add_scalar_constant(g, "one", 1.0f);
  add_node(g, "Sub", {"one", "mask_scaled"}, {"mask_inverted"});
  add_scalar_constant(g, "mask_penalty", -100.0f);
  add_node(g, "Mul", {"mask_inverted", "mask_penalty"}, {"mask_add"});
  add_node(g, "Unsqueeze", {"mask_add", "mask_axes"}, {"mask_4d"});
  add_node(g, "Add", {"scaled", "mask_4d"}, {"masked"});
  auto* softmax = add_node(g, "Softmax", {"masked"}, {"probs"});
  add_int(softmax, "axis", -1);
  add_node(g, "MatMul", {"probs", "v.heads"}, {"context.heads"});
  auto* merge = add_node(g, "Transpose", {"context.heads"}, {"context.split"});
  add_ints(merge, "perm", {0, 2, 1, 3});
  add_node(g, "Reshape", {"context.split", "hidden_shape"}, {"context"});
  linear("context", "attn_out", kHidden, kHidden);
  add_node(g, "Add", {"attn_out", "x1"}, {"residual1"});
  auto* ln2 = add_node(g, "LayerNormalization", {"residual1", "ln2.scale", "ln2.bias"}, {"x2"});
  add_int(ln2, "axis", -1);
  add_float_attr(ln2, "epsilon", 1e-5f);

  linear("x2", "ffn_in", kHidden, kFfn);
  add_scalar_constant(g, "inv_sqrt2", 0.70710678f);
  add_node(g, "Mul", {"ffn_in", "inv_sqrt2"}, {"gelu.scaled"});
  add_node(g, "Erf", {"gelu.scaled"}, {"gelu.erf"});
  add_node(g, "Add", {"gelu.erf", "one"}, {"gelu.erf1"});
  add_node(g, "Mul", {"ffn_in", "gelu.erf1"}, {"gelu.prod"});
  add_scalar_constant(g, "half", 0.5f, /*as_value_float=*/true);
  add_node(g, "Mul", {"gelu.prod", "half"}, {"gelu"});
  linear("gelu", "ffn_out", kFfn, kHidden);
  add_node(g, "Add", {"ffn_out", "x2"}, {"output"});
  save_checked(model, path);
}

void conv_bn_resize_net(const fs::path& path) {
  onnx::ModelProto model = new_model();
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "input", onnx::TensorProto::FLOAT, {1, 3, 16, 16});
  add_output(g, "output", onnx::TensorProto::FLOAT, {1, 10});
  add_float_initializer(g, "conv1.weight", {8, 3, 3, 3}, 31);
  add_float_initializer(g, "conv1.bias", {8}, 32);
  add_float_values(g, "bn.scale", {8}, near_one(8, 33));
  add_float_initializer(g, "bn.bias", {8}, 34);
  add_float_initializer(g, "bn.mean", {8}, 35);
  add_float_values(g, "bn.var", {8}, near_one(8, 36));
  add_float_values(g, "resize.scales", {4}, {1.0f, 1.0f, 2.0f, 2.0f});
  add_float_initializer(g, "conv2.weight", {4, 8, 3, 3}, 37);
  add_float_initializer(g, "conv2.bias", {4}, 38);
  add_float_initializer(g, "fc.weight", {4, 10}, 39);
  add_float_initializer(g, "fc.bias", {10}, 40);
  auto* conv1 = add_node(g, "Conv", {"input", "conv1.weight", "conv1.bias"}, {"conv1"});
  add_ints(conv1, "kernel_shape", {3, 3});
  add_ints(conv1, "pads", {1, 1, 1, 1});
  auto* bn = add_node(g, "BatchNormalization",
                      {"conv1", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, {"bn"});
  add_float_attr(bn, "epsilon", 1e-5f);
  add_node(g, "Relu", {"bn"}, {"relu1"});
  auto* resize = add_node(g, "Resize", {"relu1", "", "resize.scales"}, {"resized"});
  add_string_attr(resize, "mode", "nearest");
  auto* conv2 = add_node(g, "Conv", {"resized", "conv2.weight", "conv2.bias"}, {"conv2"});
  add_ints(conv2, "kernel_shape", {3, 3});
  add_ints(conv2, "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"conv2"}, {"relu2"});
  add_node(g, "GlobalAveragePool", {"relu2"}, {"pool"});
  auto* flatten = add_node(g, "Flatten", {"pool"}, {"flat"});
  add_int(flatten, "axis", 1);
  add_node(g, "Gemm", {"flat", "fc.weight", "fc.bias"}, {"output"});
  save_checked(model, path);
}

void if_subgraph_net(const fs::path& path) {
  onnx::ModelProto model = new_model();
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {1, 4});
  add_output(g, "y", onnx::TensorProto::FLOAT, {1, 4});
  add_float_initializer(g, "W", {4, 4}, 41);
  add_node(g, "MatMul", {"x", "W"}, {"mm"});
  auto* sum = add_node(g, "ReduceSum", {"x"}, {"sum"});
  add_int(sum, "keepdims", 0);
  add_scalar_constant(g, "zero", 0.0f);
  add_node(g, "Greater", {"sum", "zero"}, {"cond"});

  auto branch = [&](const char* name, const char* op, const char* constant, int salt) {
    onnx::GraphProto b;
    b.set_name(name);
    add_float_values(&b, constant, {4}, near_one(4, salt));
    // Both near one after Relu: then mm + c1, else c2 - mm.
    const std::vector<std::string> in = std::string(op) == "Sub"
                                            ? std::vector<std::string>{constant, "mm"}
                                            : std::vector<std::string>{"mm", constant};
    add_node(&b, op, in, {std::string(name) + "_out"});
    add_output(&b, std::string(name) + "_out", onnx::TensorProto::FLOAT, {1, 4});
    return b;
  };
  auto* node = add_node(g, "If", {"cond"}, {"selected"});
  auto* then_attr = node->add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  *then_attr->mutable_g() = branch("then", "Add", "c1", 42);
  auto* else_attr = node->add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(onnx::AttributeProto::GRAPH);
  *else_attr->mutable_g() = branch("else", "Sub", "c2", 43);
  add_node(g, "Relu", {"selected"}, {"y"});
  save_checked(model, path);
}

void write_bytes(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void truncated_copy(const fs::path& src, const fs::path& dst, double fraction) {
  std::ifstream in(src, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + src.string());
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  auto keep = static_cast<size_t>(std::floor(static_cast<double>(bytes.size()) * fraction));
  write_bytes(dst, std::string_view(bytes).substr(0, std::min(keep, bytes.size())));
}

}  // namespace turnkey::test
