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
