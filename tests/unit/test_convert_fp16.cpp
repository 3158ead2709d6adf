// convert-fp16 (src/transforms/) on models the factory builds, plus the hostile inputs it must
// turn into one-line errors. optimize-ort and check-onnx are in test_optimize_check.cpp, the
// output comparison in test_compare_outputs.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "build_stages_support.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/transforms/transforms.h"
#include "turnkey/common/error.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey {
namespace {

namespace fs = std::filesystem;
using transforms::Fp16Options;
using build_test::expect_error;
using build_test::large_external_linear;
using build_test::nodes_of;
using build_test::read_model;
using test::TempDir;

const onnx::TensorProto* initializer(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

const onnx::NodeProto* producer(const onnx::GraphProto& g, const std::string& value) {
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) {
      if (o == value) return &n;
    }
  }
  return nullptr;
}

int64_t int_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.i();
  }
  return -1;
}

int elem_type(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values,
              const std::string& name) {
  for (const auto& v : values) {
    if (v.name() == name) return v.type().tensor_type().elem_type();
  }
  return -1;
}

// The Cast feeding input `index` of `node`, or nullptr when the input is not a Cast's output.
const onnx::NodeProto* cast_into(const onnx::GraphProto& g, const onnx::NodeProto& node,
                                 int index) {
  const onnx::NodeProto* p = producer(g, node.input(index));
  return p && p->op_type() == "Cast" ? p : nullptr;
}


// ---- convert-fp16 -------------------------------------------------------------------------------

TEST(ConvertFp16, TinyTransformerPassesCheckerRunsAndStaysWithinTolerance) {
  TempDir dir;
  test::tiny_transformer(dir / "m.onnx");
  auto r = transforms::convert_fp16(dir / "m.onnx", dir / "fp16.onnx");

  onnx_model::ModelFacts facts = onnx_model::load_facts(dir / "fp16.onnx");  // checker + strict
  EXPECT_EQ(facts.checker_note, "");
  EXPECT_TRUE(transforms::check_onnx(dir / "fp16.onnx").passed);

  transforms::Comparison c = transforms::compare_models(dir / "m.onnx", dir / "fp16.onnx");
  ASSERT_EQ(c.outputs.size(), 1u);
  EXPECT_TRUE(c.within) << "rel " << c.worst_rel_error << " cos " << c.worst_cosine;
  EXPECT_LE(c.worst_rel_error, 1e-2);
  EXPECT_GE(c.worst_cosine, 0.999);
  EXPECT_GT(c.outputs[0].max_abs_error, 0.0) << "no float16 rounding at all: nothing converted?";
  EXPECT_EQ(c.outputs[0].dtype, "float32");

  const onnx::ModelProto m = read_model(dir / "fp16.onnx");
  const onnx::GraphProto& g = m.graph();
  // io types kept
  EXPECT_EQ(elem_type(g.input(), "input_ids"), onnx::TensorProto::INT64);
  EXPECT_EQ(elem_type(g.input(), "attention_mask"), onnx::TensorProto::INT64);
  EXPECT_EQ(elem_type(g.output(), "output"), onnx::TensorProto::FLOAT);
  const onnx::NodeProto* out = producer(g, "output");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->op_type(), "Cast");
  EXPECT_EQ(int_attr(*out, "to"), onnx::TensorProto::FLOAT);
  // every float initializer is float16 now; the int64 shapes are untouched
  for (const auto& t : g.initializer()) {
    if (t.name().find("shape") != std::string::npos || t.name() == "mask_axes") {
      EXPECT_EQ(t.data_type(), onnx::TensorProto::INT64) << t.name();
    } else {
      EXPECT_EQ(t.data_type(), onnx::TensorProto::FLOAT16) << t.name();
      EXPECT_EQ(t.raw_data().size() % 2, 0u);
    }
  }
  EXPECT_EQ(r.initializers_fp16, 18);  // embedding, position, 2 layer norms x 2, 6 linears x 2
  EXPECT_EQ(r.initializers_kept_fp32, 0);
  // the model's own Cast(to FLOAT) now casts to float16, Constants hold float16
  const onnx::NodeProto* mask_cast = producer(g, "mask_float");
  ASSERT_NE(mask_cast, nullptr);
  EXPECT_EQ(int_attr(*mask_cast, "to"), onnx::TensorProto::FLOAT16);
  for (const auto* n : nodes_of(g, "Constant")) {
    ASSERT_EQ(n->attribute_size(), 1);
    EXPECT_EQ(n->attribute(0).name(), "value") << n->output(0);  // value_float rewritten
    EXPECT_EQ(n->attribute(0).t().data_type(), onnx::TensorProto::FLOAT16) << n->output(0);
  }
  EXPECT_TRUE(r.kept_fp32_ops.empty());
  EXPECT_EQ(r.casts_added, 1);  // the output's
  EXPECT_EQ(r.nodes_after, r.nodes_before + 1);
  EXPECT_LT(r.output_size_bytes, r.input_size_bytes * 6 / 10);
}

TEST(ConvertFp16, KeepIoTypesFalseMakesGraphIoFloat16) {
  TempDir dir;
  test::linear_relu(dir / "m.onnx");
  Fp16Options options;
  options.keep_io_types = false;
  auto r = transforms::convert_fp16(dir / "m.onnx", dir / "fp16.onnx", options);
  EXPECT_EQ(r.casts_added, 0);
  const onnx::ModelProto m = read_model(dir / "fp16.onnx");
  EXPECT_EQ(elem_type(m.graph().input(), "input"), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(elem_type(m.graph().output(), "output"), onnx::TensorProto::FLOAT16);
  EXPECT_TRUE(nodes_of(m.graph(), "Cast").empty());
  transforms::Comparison c = transforms::compare_models(dir / "m.onnx", dir / "fp16.onnx");
  EXPECT_TRUE(c.within) << c.worst_rel_error;
  EXPECT_EQ(c.outputs[0].dtype, "float16");
}

TEST(ConvertFp16, KeepIoTypesCastsFloatInputsOnce) {
  TempDir dir;
  test::linear_relu(dir / "m.onnx");
  auto r = transforms::convert_fp16(dir / "m.onnx", dir / "fp16.onnx");
  EXPECT_EQ(r.casts_added, 2);  // input -> float16, float16 -> output
  const onnx::ModelProto m = read_model(dir / "fp16.onnx");
  EXPECT_EQ(elem_type(m.graph().input(), "input"), onnx::TensorProto::FLOAT);
  const auto matmul = nodes_of(m.graph(), "MatMul");
  ASSERT_EQ(matmul.size(), 1u);
  const onnx::NodeProto* cast = cast_into(m.graph(), *matmul[0], 0);
  ASSERT_NE(cast, nullptr);
  EXPECT_EQ(cast->input(0), "input");
  EXPECT_EQ(int_attr(*cast, "to"), onnx::TensorProto::FLOAT16);
}

TEST(ConvertFp16, BlockedResizeStaysFloat32BehindCasts) {
  TempDir dir;
  test::conv_bn_resize_net(dir / "m.onnx");
  auto r = transforms::convert_fp16(dir / "m.onnx", dir / "fp16.onnx");
  EXPECT_EQ(r.kept_fp32_ops, (std::map<std::string, int64_t>{{"Resize", 1}}));
  const onnx::ModelProto m = read_model(dir / "fp16.onnx");
  const onnx::GraphProto& g = m.graph();
  const auto resize = nodes_of(g, "Resize");
  ASSERT_EQ(resize.size(), 1u);
  const onnx::NodeProto* in_cast = cast_into(g, *resize[0], 0);
  ASSERT_NE(in_cast, nullptr);
  EXPECT_EQ(int_attr(*in_cast, "to"), onnx::TensorProto::FLOAT);
  EXPECT_EQ(resize[0]->input(2), "resize.scales");
  EXPECT_EQ(initializer(g, "resize.scales")->data_type(), onnx::TensorProto::FLOAT);
  // its output reaches the next Conv through a Cast to float16
  const auto conv = nodes_of(g, "Conv");
  ASSERT_EQ(conv.size(), 2u);
  const onnx::NodeProto* out_cast = cast_into(g, *conv[1], 0);
  ASSERT_NE(out_cast, nullptr);
  EXPECT_EQ(out_cast->input(0), resize[0]->output(0));
  EXPECT_EQ(int_attr(*out_cast, "to"), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(initializer(g, "bn.var")->data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(initializer(g, "conv2.weight")->data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(r.initializers_kept_fp32, 1);  // the scales
  EXPECT_EQ(r.casts_added, 4);             // input, Resize in/out, output

  EXPECT_TRUE(transforms::check_onnx(dir / "fp16.onnx").passed);
  transforms::Comparison c = transforms::compare_models(dir / "m.onnx", dir / "fp16.onnx");
  EXPECT_TRUE(c.within) << c.worst_rel_error << " " << c.worst_cosine;
}

TEST(ConvertFp16, OpAndNodeBlockListsKeepThoseNodesFloat32) {
  TempDir dir;
  test::tiny_transformer(dir / "m.onnx");
  Fp16Options options;
  options.op_block_list.push_back("Softmax");
  options.node_block_list.push_back("Erf_");  // no such node: ignored
  const onnx::ModelProto original = read_model(dir / "m.onnx");
  std::string erf_name = nodes_of(original.graph(), "Erf")[0]->name();
  options.node_block_list.push_back(erf_name);
  auto r = transforms::convert_fp16(dir / "m.onnx", dir / "fp16.onnx", options);
  EXPECT_EQ(r.kept_fp32_ops, (std::map<std::string, int64_t>{{"Erf", 1}, {"Softmax", 1}}));

  const onnx::ModelProto m = read_model(dir / "fp16.onnx");
  for (const char* op : {"Softmax", "Erf"}) {
    const auto n = nodes_of(m.graph(), op);
    ASSERT_EQ(n.size(), 1u);
    const onnx::NodeProto* cast = cast_into(m.graph(), *n[0], 0);
    ASSERT_NE(cast, nullptr) << op;
    EXPECT_EQ(int_attr(*cast, "to"), onnx::TensorProto::FLOAT) << op;
  }
  EXPECT_TRUE(transforms::check_onnx(dir / "fp16.onnx").passed);
  EXPECT_TRUE(transforms::compare_models(dir / "m.onnx", dir / "fp16.onnx").within);
}

TEST(ConvertFp16, SubgraphsStayFloat32AndReadOuterValuesThroughACast) {
  TempDir dir;
  test::if_subgraph_net(dir / "m.onnx");
  auto r = transforms::convert_fp16(dir / "m.onnx", dir / "fp16.onnx");
  EXPECT_EQ(r.kept_fp32_ops.count("If"), 1u);
  EXPECT_EQ(r.kept_fp32_ops.count("ReduceSum"), 1u);  // default block list

  const onnx::ModelProto m = read_model(dir / "fp16.onnx");
  const onnx::GraphProto& g = m.graph();
  EXPECT_EQ(initializer(g, "W")->data_type(), onnx::TensorProto::FLOAT16);
  const auto ifs = nodes_of(g, "If");
  ASSERT_EQ(ifs.size(), 1u);
  for (const auto& attr : ifs[0]->attribute()) {
    const onnx::GraphProto& branch = attr.g();
    EXPECT_EQ(branch.initializer(0).data_type(), onnx::TensorProto::FLOAT) << branch.name();
    EXPECT_EQ(branch.output(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
    // mm is float16 in the outer graph; the branch reads a float32 Cast of it
    const auto& in = branch.node(0).input();
    const std::string outer = in[0].rfind("mm", 0) == 0 ? in[0] : in[1];
    EXPECT_NE(outer, "mm");
    const onnx::NodeProto* cast = producer(g, outer);
    ASSERT_NE(cast, nullptr);
    EXPECT_EQ(cast->op_type(), "Cast");
    EXPECT_EQ(cast->input(0), "mm");
    EXPECT_EQ(int_attr(*cast, "to"), onnx::TensorProto::FLOAT);
  }
  EXPECT_TRUE(transforms::check_onnx(dir / "fp16.onnx").passed);
  transforms::Comparison c = transforms::compare_models(dir / "m.onnx", dir / "fp16.onnx");
  EXPECT_TRUE(c.within) << c.worst_rel_error;
  EXPECT_GT(c.outputs[0].max_abs_reference, 0.5);  // a branch ran, not an all-zero output
}

TEST(ConvertFp16, ExternalDataIsLoadedAndWrittenAsExternalData) {
  TempDir dir;
  test::external_data_linear(dir / "m.onnx");
  auto r = transforms::convert_fp16(dir / "m.onnx", dir / "fp16.onnx");
  EXPECT_EQ(r.initializers_fp16, 2);
  // W (128 bytes as float16) is below the 1 KiB threshold: no data file needed
  EXPECT_EQ(r.external_data, "");
  const onnx::ModelProto m = read_model(dir / "fp16.onnx");
  const onnx::TensorProto* w = initializer(m.graph(), "W");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(w->raw_data().size(), 16u * 4u * 2u);
  EXPECT_TRUE(transforms::compare_models(dir / "m.onnx", dir / "fp16.onnx").within);
}

TEST(ConvertFp16, LargeExternalWeightsGoToADataFileBesideTheOutput) {
  TempDir dir;
  large_external_linear(dir);
  auto r = transforms::convert_fp16(dir / "m.onnx", dir / "fp16.onnx");
  EXPECT_EQ(r.external_data, "fp16.onnx.data");
  EXPECT_EQ(fs::file_size(dir / "fp16.onnx.data"), 256u * 16u * 2u);
  const onnx::ModelProto m = read_model(dir / "fp16.onnx");
  const onnx::TensorProto* w16 = initializer(m.graph(), "W");
  EXPECT_EQ(w16->data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(w16->data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_TRUE(transforms::check_onnx(dir / "fp16.onnx").passed);
  EXPECT_TRUE(transforms::compare_models(dir / "m.onnx", dir / "fp16.onnx").within);
}

TEST(ConvertFp16, ExternalDataOutsideTheModelFolderIsRefused) {
  TempDir dir;
  fs::create_directories(dir / "sub");
  test::linear_relu(dir / "inline.onnx");
  onnx::ModelProto model = read_model(dir / "inline.onnx");
  auto* w = model.mutable_graph()->mutable_initializer(0);
  test::write_bytes(dir / "w.bin", w->raw_data());
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("../w.bin");
  test::save_model(model, dir / "sub" / "m.onnx");
  expect_error([&] { transforms::convert_fp16(dir / "sub" / "m.onnx", dir / "out.onnx"); },
               ErrorKind::InvalidInput, "input:");
  EXPECT_FALSE(fs::exists(dir / "out.onnx"));
}

TEST(ConvertFp16, ClampsOutOfRangeValuesAndKeepsTinyOnesNonzero) {
  TempDir dir;
  onnx::ModelProto model = test::new_model();
  auto* g = model.mutable_graph();
  test::add_input(g, "x", onnx::TensorProto::FLOAT, {1, 4});
  test::add_output(g, "y", onnx::TensorProto::FLOAT, {1, 4});
  test::add_float_values(g, "b", {4}, {1e6f, -1e6f, 1e-12f, 0.5f});
  test::add_node(g, "Add", {"x", "b"}, {"y"});
  test::save_model(model, dir / "m.onnx");
  auto r = transforms::convert_fp16(dir / "m.onnx", dir / "fp16.onnx");
  EXPECT_EQ(r.values_clamped, 2);
  EXPECT_EQ(r.values_raised, 1);
  const onnx::ModelProto m = read_model(dir / "fp16.onnx");
  const onnx::TensorProto* b = initializer(m.graph(), "b");
  ASSERT_EQ(b->raw_data().size(), 8u);
  uint16_t h[4];
  std::memcpy(h, b->raw_data().data(), 8);
  EXPECT_EQ(h[0], 0x7BFF);  // 65504
  EXPECT_EQ(h[1], 0xFBFF);  // -65504
  EXPECT_EQ(h[2], 0x0001);  // 2^-24, the smallest subnormal
  EXPECT_EQ(h[3], 0x3800);  // 0.5
}

TEST(ConvertFp16, VectorConversionRoundsLikeTheScalarOne) {
  // The converter uses F16C where the CPU has it: its bits must match float_to_half (round to
  // nearest even) on ties, subnormals, signed zero, infinities and NaN, at every vector lane.
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               1.0f + 0x1p-11f,
                               1.0f + 0x1p-10f + 0x1p-11f,
                               0x1p-14f,
                               0x1.8p-24f,
                               0x1p-23f + 0x1p-24f,
                               0x1p-20f,
                               65504.0f,
                               -65504.0f,
                               2048.5f,
                               3.14159265f,
                               -2.71828f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity()};
  for (int i = 0; i < 1000; ++i) values.push_back(static_cast<float>(i - 500) * 0.0137f);
  const size_t n = values.size();  // not a multiple of 8: the scalar tail runs too
  TempDir dir;
  onnx::ModelProto model = test::new_model();
  auto* g = model.mutable_graph();
  const int64_t size = static_cast<int64_t>(n);
  test::add_input(g, "x", onnx::TensorProto::FLOAT, {size});
  test::add_output(g, "y", onnx::TensorProto::FLOAT, {size});
  test::add_float_values(g, "b", {size}, values);
  test::add_node(g, "Add", {"x", "b"}, {"y"});
  test::save_model(model, dir / "m.onnx");
  transforms::convert_fp16(dir / "m.onnx", dir / "fp16.onnx");
  const onnx::ModelProto m = read_model(dir / "fp16.onnx");
  const std::string& raw = initializer(m.graph(), "b")->raw_data();
  ASSERT_EQ(raw.size(), n * 2);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, raw.data() + i * 2, 2);
    EXPECT_EQ(h, onnx_model::float_to_half(values[i])) << i << ": " << values[i];
  }
}

TEST(ConvertFp16, InitializerReadInBothPrecisionsIsDuplicated) {
  TempDir dir;
  onnx::ModelProto model = test::new_model();
  auto* g = model.mutable_graph();
  test::add_input(g, "x", onnx::TensorProto::FLOAT, {1, 4});
  test::add_output(g, "y", onnx::TensorProto::FLOAT, {1, 4});
  test::add_float_initializer(g, "b", {4}, 7);
  test::add_node(g, "Add", {"x", "b"}, {"s"})->set_name("kept");
  test::add_node(g, "Mul", {"s", "b"}, {"y"})->set_name("converted");
  test::save_model(model, dir / "m.onnx");
  Fp16Options options;
  options.node_block_list = {"kept"};
  auto r = transforms::convert_fp16(dir / "m.onnx", dir / "fp16.onnx", options);
  EXPECT_EQ(r.initializers_duplicated, 1);
  const onnx::GraphProto g16 = read_model(dir / "fp16.onnx").graph();
  EXPECT_EQ(initializer(g16, "b")->data_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(initializer(g16, "b_fp16")->data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(nodes_of(g16, "Mul")[0]->input(1), "b_fp16");
  EXPECT_EQ(nodes_of(g16, "Add")[0]->input(1), "b");
  EXPECT_TRUE(transforms::compare_models(dir / "m.onnx", dir / "fp16.onnx").within);
}

TEST(ConvertFp16, DefaultBlockListNamesTheFragileOps) {
  const auto& list = transforms::default_fp16_op_block_list();
  std::set<std::string> ops(list.begin(), list.end());
  for (const char* op : {"Resize", "Range", "NonMaxSuppression", "TopK", "RandomUniform", "CumSum",
                         "ReduceSum", "Loop", "If"}) {
    EXPECT_TRUE(ops.count(op)) << op;
  }
  EXPECT_FALSE(ops.count("MatMul"));
}

TEST(ConvertFp16, HostileInputsAndOutputsGiveOneLineErrors) {
  TempDir dir;
  test::linear_relu(dir / "m.onnx");
  expect_error([&] { transforms::convert_fp16(dir / "missing.onnx", dir / "o.onnx"); },
               ErrorKind::InvalidInput, "input: not found");
  test::write_bytes(dir / "corrupt.onnx", "\x08\x07garbage\xff\xff\xff\xff\x0f not protobuf");
  expect_error([&] { transforms::convert_fp16(dir / "corrupt.onnx", dir / "o.onnx"); },
               ErrorKind::InvalidInput, "input: not an ONNX model");
  test::truncated_copy(dir / "m.onnx", dir / "truncated.onnx", 0.5);
  expect_error([&] { transforms::convert_fp16(dir / "truncated.onnx", dir / "o.onnx"); },
               ErrorKind::InvalidInput, "input:");
  expect_error([&] { transforms::convert_fp16(dir.path(), dir / "o.onnx"); }, ErrorKind::InvalidInput,
               "input: is a directory");
  expect_error([&] { transforms::convert_fp16(dir / "m.onnx", dir / "no" / "such" / "o.onnx"); },
               ErrorKind::Export, "does not exist");
  expect_error([&] { transforms::convert_fp16(dir / "m.onnx", dir / "m.onnx" / "o.onnx"); },
               ErrorKind::Export, "is not a directory");
  expect_error([&] { transforms::convert_fp16(dir / "m.onnx", dir.path()); }, ErrorKind::Export,
               "is a directory");
  expect_error([&] { transforms::convert_fp16(dir / "m.onnx", dir / "m.onnx"); },
               ErrorKind::InvalidInput, "is the input");
  EXPECT_FALSE(fs::exists(dir / "o.onnx"));

  // A model the checker rejects: a node reads a value nothing produces.
  onnx::ModelProto broken = test::new_model();
  test::add_input(broken.mutable_graph(), "x", onnx::TensorProto::FLOAT, {1});
  test::add_output(broken.mutable_graph(), "y", onnx::TensorProto::FLOAT, {1});
  test::add_node(broken.mutable_graph(), "Add", {"x", "nowhere"}, {"y"});
  test::save_model(broken, dir / "broken.onnx");
  expect_error([&] { transforms::convert_fp16(dir / "broken.onnx", dir / "o.onnx"); },
               ErrorKind::InvalidInput, "input: ONNX checker");

  onnx::ModelProto old = test::new_model(6);
  test::add_input(old.mutable_graph(), "x", onnx::TensorProto::FLOAT, {1});
  test::add_output(old.mutable_graph(), "y", onnx::TensorProto::FLOAT, {1});
  test::add_node(old.mutable_graph(), "Relu", {"x"}, {"y"});
  test::save_model(old, dir / "old.onnx");
  expect_error([&] { transforms::convert_fp16(dir / "old.onnx", dir / "o.onnx"); },
               ErrorKind::InvalidInput, "input: opset 6 is below 7");
  EXPECT_FALSE(fs::exists(dir / "o.onnx"));
}

TEST(ConvertFp16, OutputThatCannotBeCreatedIsAnExportError) {
  // procfs refuses new files even to root.
  TempDir dir;
  test::linear_relu(dir / "m.onnx");
  expect_error([&] { transforms::convert_fp16(dir / "m.onnx", "/proc/self/turnkey-test.onnx"); },
               ErrorKind::Export, "/proc/self");
  expect_error(
      [&] {
        transforms::optimize_ort(dir / "m.onnx", "/proc/self/turnkey-test.onnx",
                            transforms::OrtOptLevel::Basic);
      },
      ErrorKind::Export, "/proc/self");
}

TEST(ConvertFp16, UnwritableOutputDirectoryIsAnExportError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories";
  TempDir dir;
  test::linear_relu(dir / "m.onnx");
  fs::create_directories(dir / "ro");
  ::chmod((dir / "ro").c_str(), 0555);
  expect_error([&] { transforms::convert_fp16(dir / "m.onnx", dir / "ro" / "o.onnx"); },
               ErrorKind::Export, "not writable");
  ::chmod((dir / "ro").c_str(), 0755);
}

// ---- optimize-ort -------------------------------------------------------------------------------

}  // namespace
}  // namespace turnkey
