#include "support/onnx_opset_models.h"

#include <string>
#include <vector>

#include "support/onnx_factory.h"

namespace turnkey::test {

namespace fs = std::filesystem;

namespace {

void import_opset(onnx::ModelProto* model, const std::string& domain, int version) {
  auto* op = model->add_opset_import();
  op->set_domain(domain);
  op->set_version(version);
}

// A FunctionProto of domain "pkg.turnkey" whose nodes the caller adds.
onnx::FunctionProto* add_function(onnx::ModelProto* model, const std::string& name, int opset,
                                  const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& outputs) {
  auto* f = model->add_functions();
  f->set_domain("pkg.turnkey");
  f->set_name(name);
  for (const auto& i : inputs) f->add_input(i);
  for (const auto& o : outputs) f->add_output(o);
  auto* op = f->add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  op = f->add_opset_import();
  op->set_domain("pkg.turnkey");
  op->set_version(1);
  return f;
}

onnx::NodeProto* add_function_node(onnx::FunctionProto* f, const std::string& op_type,
                                   const std::vector<std::string>& inputs,
                                   const std::vector<std::string>& outputs,
                                   const std::string& domain = "") {
  auto* node = f->add_node();
  node->set_op_type(op_type);
  node->set_domain(domain);
  for (const auto& i : inputs) node->add_input(i);
  for (const auto& o : outputs) node->add_output(o);
  return node;
}

}  // namespace

void opset_net(const fs::path& path, int opset, int ir_version) {
  onnx::ModelProto model = new_model(opset);
  model.set_ir_version(ir_version);
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {1, 4, 8, 8});
  add_output(g, "y", onnx::TensorProto::FLOAT, {1, 4});
  add_float_initializer(g, "W", {8, 4, 3, 3}, 1);
  add_float_initializer(g, "B", {8}, 2);
  add_int64_values(g, "pads", {4}, {1, 1, 1, 1});
  add_float_values(g, "pad_value", {}, {0.5f});
  add_int64_values(g, "pad_axes", {2}, {2, 3});
  add_float_values(g, "scales", {4}, {1.0f, 1.0f, 0.8f, 0.8f});
  add_int64_values(g, "spatial_axes", {2}, {2, 3});

  add_ints(add_node(g, "Conv", {"x", "W", "B"}, {"c"}), "pads", {1, 1, 1, 1});
  auto* split = add_node(g, "Split", {"c"}, {"s0", "s1"});
  add_int(split, "axis", 1);
  add_int(split, "num_outputs", 2);  // new in 18
  add_node(g, "Add", {"s0", "s1"}, {"a"});
  add_node(g, "Pad", {"a", "pads", "pad_value", "pad_axes"}, {"p"});  // 18: axes input
  add_string_attr(add_node(g, "Resize", {"p", "", "scales"}, {"r"}), "mode", "linear");
  add_node(g, "ReduceMean", {"r", "spatial_axes"}, {"mean"});  // 18: axes input
  add_node(g, "Sub", {"r", "mean"}, {"centered"});
  const std::string reduced = opset >= 23 ? "peak" : "y";
  add_int(add_node(g, "ReduceMax", {"centered", "spatial_axes"}, {reduced}), "keepdims", 0);
  if (opset >= 23) {
    add_float_initializer(g, "rms_scale", {4}, 3);
    add_node(g, "RMSNormalization", {"peak", "rms_scale"}, {"y"});  // new in 23
  }
  check_model_or_throw(model);
  save_model(model, path);
}

void local_function_net(const fs::path& path, int opset, int ir_version) {
  onnx::ModelProto model = new_model(opset);
  model.set_ir_version(ir_version);
  import_opset(&model, "pkg.turnkey", 1);

  onnx::FunctionProto* linear = add_function(&model, "LinearTanh", opset, {"x", "w", "b"}, {"y"});
  add_function_node(linear, "MatMul", {"x", "w"}, {"mm"});
  add_function_node(linear, "Add", {"mm", "b"}, {"s"});
  add_function_node(linear, "Tanh", {"s"}, {"y"});
  onnx::FunctionProto* block = add_function(&model, "Block", opset, {"x", "w", "b"}, {"y"});
  add_function_node(block, "LinearTanh", {"x", "w", "b"}, {"t"}, "pkg.turnkey");
  add_function_node(block, "Add", {"t", "x"}, {"y"});

  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {1, 16});
  add_output(g, "y", onnx::TensorProto::FLOAT, {1, 4});
  add_float_initializer(g, "W1", {16, 16}, 1);
  add_float_initializer(g, "B1", {16}, 2);
  add_float_initializer(g, "W2", {16, 16}, 3);
  add_float_initializer(g, "B2", {16}, 4);
  add_float_initializer(g, "W3", {16, 4}, 5);
  add_node(g, "Block", {"x", "W1", "B1"}, {"h1"})->set_domain("pkg.turnkey");
  add_node(g, "Block", {"h1", "W2", "B2"}, {"h2"})->set_domain("pkg.turnkey");
  add_node(g, "MatMul", {"h2", "W3"}, {"logits"});
  add_node(g, "Relu", {"logits"}, {"y"});
  check_model_or_throw(model);
  save_model(model, path);
}

}  // namespace turnkey::test
