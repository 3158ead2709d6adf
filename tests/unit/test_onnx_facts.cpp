#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "onnx_test_util.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/sha256.h"
#include "turnkey/onnx/input_data.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey::onnx_model {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

using namespace onnx_test_util;

// --- facts of the factory models (expected numbers worked out by hand) ---

TEST(ModelFacts, LinearRelu) {
  TempDir dir;
  const fs::path path = dir / "linear.onnx";
  test::linear_relu(path);
  ModelFacts f = load_facts(path);
  EXPECT_EQ(f.path, path);
  EXPECT_EQ(f.parameters, 16 * 4 + 4);
  EXPECT_EQ(f.parameter_bytes, (16 * 4 + 4) * 4);
  EXPECT_EQ(f.opset, 17);
  EXPECT_EQ(f.ir_version, 8);
  EXPECT_EQ(f.producer, "turnkey-tests 1");
  EXPECT_EQ(f.node_count, 3);
  EXPECT_EQ(f.op_histogram,
            (std::map<std::string, int64_t>{{"Add", 1}, {"MatMul", 1}, {"Relu", 1}}));
  EXPECT_TRUE(f.checker_note.empty()) << f.checker_note;
  ASSERT_EQ(f.inputs.size(), 1u);
  EXPECT_EQ(f.inputs[0].name, "input");
  EXPECT_EQ(f.inputs[0].dtype, DType::Float32);
  EXPECT_EQ(f.inputs[0].onnx_type, "FLOAT");
  EXPECT_TRUE(f.inputs[0].has_shape);
  ASSERT_EQ(f.inputs[0].dims.size(), 2u);
  EXPECT_EQ(f.inputs[0].dims[0].value, 1);
  EXPECT_EQ(f.inputs[0].dims[1].value, 16);
  ASSERT_EQ(f.outputs.size(), 1u);
  EXPECT_EQ(f.outputs[0].name, "output");
  EXPECT_EQ(f.outputs[0].dims[1].value, 4);
  const std::string bytes = read_file(path);
  EXPECT_EQ(f.file_size_bytes, static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(f.sha256, sha256_hex(bytes));
}

TEST(ModelFacts, LinearReluOtherSizesCountParameters) {
  TempDir dir;
  test::linear_relu(dir / "l.onnx", 32, 8);
  EXPECT_EQ(load_facts(dir / "l.onnx").parameters, 32 * 8 + 8);
}

TEST(ModelFacts, SmallConvNet) {
  TempDir dir;
  test::small_conv_net(dir / "conv.onnx");
  ModelFacts f = load_facts(dir / "conv.onnx");
  // conv 8x3x3x3 + 8, fc 8x10 + 10
  EXPECT_EQ(f.parameters, 216 + 8 + 80 + 10);
  EXPECT_EQ(f.parameter_bytes, 314 * 4);
  EXPECT_EQ(f.op_histogram,
            (std::map<std::string, int64_t>{
                {"Conv", 1}, {"Flatten", 1}, {"Gemm", 1}, {"GlobalAveragePool", 1}, {"Relu", 1}}));
  EXPECT_EQ(f.node_count, 5);
  ASSERT_EQ(f.inputs.size(), 1u);
  EXPECT_EQ(f.inputs[0].dims.size(), 4u);
  EXPECT_EQ(resolve_input_shapes(f, {}), (std::vector<std::vector<int64_t>>{{1, 3, 32, 32}}));
}

TEST(ModelFacts, Int64Gather) {
  TempDir dir;
  test::int64_gather(dir / "gather.onnx");
  ModelFacts f = load_facts(dir / "gather.onnx");
  EXPECT_EQ(f.parameters, 100 * 16);
  EXPECT_EQ(f.op_histogram, (std::map<std::string, int64_t>{{"Gather", 1}}));
  ASSERT_EQ(f.inputs.size(), 1u);
  EXPECT_EQ(f.inputs[0].name, "input_ids");
  EXPECT_EQ(f.inputs[0].dtype, DType::Int64);
  EXPECT_EQ(f.inputs[0].onnx_type, "INT64");
  EXPECT_EQ(f.outputs[0].dims.size(), 3u);
}

// An exported BERT's embeddings: token ids into a 30522-row table, token type ids into a 2-row
// one (here through Cast, as an int32 input is), an attention mask into none.
TEST(ModelFacts, IntegerInputsKnowTheTableTheyIndex) {
  TempDir dir;
  onnx::ModelProto m = test::new_model();
  onnx::GraphProto* g = m.mutable_graph();
  test::add_input(g, "input_ids", onnx::TensorProto::INT64, {1, 4});
  test::add_input(g, "token_type_ids", onnx::TensorProto::INT32, {1, 4});
  test::add_input(g, "attention_mask", onnx::TensorProto::INT64, {1, 4});
  test::add_float_initializer(g, "words", {30522, 2}, 1);
  test::add_float_initializer(g, "types", {2, 2}, 2);
  test::add_float_initializer(g, "by_column", {3, 5}, 3);
  test::add_node(g, "Gather", {"words", "input_ids"}, {"w"});
  test::add_int(test::add_node(g, "Cast", {"token_type_ids"}, {"tt64"}), "to",
                onnx::TensorProto::INT64);
  test::add_node(g, "Gather", {"types", "tt64"}, {"t"});
  // A second table indexed by the same ids along its axis 1 (5 columns): the smaller bound wins.
  test::add_int(test::add_node(g, "Gather", {"by_column", "input_ids"}, {"c"}), "axis", 1);
  test::add_node(g, "Add", {"w", "t"}, {"wt"});
  test::add_int(test::add_node(g, "Cast", {"attention_mask"}, {"mf"}), "to",
                onnx::TensorProto::FLOAT);
  test::add_output(g, "wt", onnx::TensorProto::FLOAT, {1, 4, 2});
  test::add_output(g, "c", onnx::TensorProto::FLOAT, {3, 1, 4});
  test::add_output(g, "mf", onnx::TensorProto::FLOAT, {1, 4});
  test::save_model(m, dir / "embeddings.onnx");
  ModelFacts f = load_facts(dir / "embeddings.onnx");
  ASSERT_EQ(f.inputs.size(), 3u);
  EXPECT_EQ(f.inputs[0].index_bound, 5);
  EXPECT_EQ(f.inputs[1].index_bound, 2);
  EXPECT_EQ(f.inputs[2].index_bound, 0);
}

TEST(ModelFacts, SymbolicDimNeedsAnOverride) {
  TempDir dir;
  test::symbolic_dim(dir / "sym.onnx");
  ModelFacts f = load_facts(dir / "sym.onnx");
  EXPECT_EQ(f.parameters, 68);
  ASSERT_EQ(f.inputs.size(), 1u);
  EXPECT_FALSE(f.inputs[0].dims[0].known());
  EXPECT_EQ(f.inputs[0].dims[0].param, "batch");
  EXPECT_EQ(f.outputs[0].dims[0].param, "batch");
  std::string msg = expect_error([&] { resolve_input_shapes(f, {}); }, ErrorKind::InvalidInput,
                                 "input 'x' has symbolic dims [batch]");
  EXPECT_NE(msg.find("--input-shapes x:1x16"), std::string::npos) << msg;
  EXPECT_EQ(resolve_input_shapes(f, parse_input_shapes("x:4x16")),
            (std::vector<std::vector<int64_t>>{{4, 16}}));
  expect_error([&] { resolve_input_shapes(f, parse_input_shapes("x:4x8")); },
               ErrorKind::InvalidInput, "input 'x' has dim 1 fixed at 16");
  expect_error([&] { resolve_input_shapes(f, parse_input_shapes("x:4x16x1")); },
               ErrorKind::InvalidInput,
               "input 'x' has rank 2 [batch, 16], --input-shapes gives rank 3");
  expect_error([&] { resolve_input_shapes(f, parse_input_shapes("x:4x16,y:2")); },
               ErrorKind::InvalidInput,
               "names 'y', which is not an input of the model (inputs: x)");
}

TEST(ModelFacts, ExternalDataResolvesBesideTheModel) {
  TempDir dir;
  const fs::path path = dir / "ext.onnx";
  test::external_data_linear(path);
  ModelFacts f = load_facts(path);
  EXPECT_EQ(f.parameters, 68);
  EXPECT_EQ(f.parameter_bytes, 68 * 4);
  EXPECT_TRUE(f.checker_note.empty()) << f.checker_note;
  // The file hashed is the model file only, not its weights.
  EXPECT_EQ(f.sha256, sha256_hex(read_file(path)));

  fs::remove(dir / "ext.onnx.weights");
  expect_error([&] { load_facts(path); }, ErrorKind::InvalidInput,
               "ONNX checker: Data of TensorProto");
}

// Initializers listed as graph inputs (IR <= 3 exporters, keep_initializers_as_inputs) are still
// weights, and are not inputs turnkey must feed.
TEST(ModelFacts, InitializersListedAsInputsAreParametersNotInputs) {
  TempDir dir;
  onnx::ModelProto m = test::new_model();
  auto* g = m.mutable_graph();
  test::add_input(g, "x", onnx::TensorProto::FLOAT, {1, 4});
  test::add_input(g, "W", onnx::TensorProto::FLOAT, {4, 2});
  test::add_output(g, "y", onnx::TensorProto::FLOAT, {1, 2});
  test::add_float_initializer(g, "W", {4, 2}, 1);
  test::add_node(g, "MatMul", {"x", "W"}, {"y"});
  test::check_model_or_throw(m);
  test::save_model(m, dir / "m.onnx");
  ModelFacts f = load_facts(dir / "m.onnx");
  EXPECT_EQ(f.parameters, 8);
  ASSERT_EQ(f.inputs.size(), 1u);
  EXPECT_EQ(f.inputs[0].name, "x");
}

TEST(ModelFacts, SparseInitializersCountTheirDenseShape) {
  TempDir dir;
  onnx::ModelProto m = test::new_model();
  auto* g = m.mutable_graph();
  test::add_input(g, "x", onnx::TensorProto::FLOAT, {1, 4});
  test::add_output(g, "y", onnx::TensorProto::FLOAT, {1, 4});
  test::add_node(g, "Relu", {"x"}, {"y"});
  auto* sparse = g->add_sparse_initializer();
  sparse->add_dims(10);
  sparse->add_dims(20);
  auto* values = sparse->mutable_values();
  values->set_name("S");
  values->set_data_type(onnx::TensorProto::FLOAT);
  values->add_dims(3);
  for (float v : {1.0f, 2.0f, 3.0f}) values->add_float_data(v);
  auto* indices = sparse->mutable_indices();
  indices->set_name("S_indices");
  indices->set_data_type(onnx::TensorProto::INT64);
  indices->add_dims(3);
  for (int64_t i : {0, 7, 199}) indices->add_int64_data(i);
  test::save_model(m, dir / "m.onnx");
  ModelFacts f = load_facts(dir / "m.onnx");
  EXPECT_EQ(f.parameters, 200);
  EXPECT_EQ(f.parameter_bytes, 800);
}

TEST(ModelFacts, CustomDomainOpsAreQualifiedAndSubgraphsCounted) {
  TempDir dir;
  onnx::ModelProto m = test::new_model();
  auto* custom = m.add_opset_import();
  custom->set_domain("com.example");
  custom->set_version(1);
  auto* g = m.mutable_graph();
  test::add_input(g, "cond", onnx::TensorProto::BOOL, {});
  test::add_input(g, "x", onnx::TensorProto::FLOAT, {2});
  test::add_output(g, "y", onnx::TensorProto::FLOAT, {2});
  test::add_output(g, "z", onnx::TensorProto::FLOAT, {2});
  auto* if_node = test::add_node(g, "If", {"cond"}, {"y"});
  const char* branch_ops[] = {"Relu", "Neg"};
  const char* branch_names[] = {"then_branch", "else_branch"};
  for (int b = 0; b < 2; ++b) {
    auto* attr = if_node->add_attribute();
    attr->set_name(branch_names[b]);
    attr->set_type(onnx::AttributeProto::GRAPH);
    auto* body = attr->mutable_g();
    body->set_name(branch_names[b]);
    test::add_output(body, std::string("out_") + branch_ops[b], onnx::TensorProto::FLOAT, {2});
    test::add_node(body, branch_ops[b], {"x"}, {std::string("out_") + branch_ops[b]});
  }
  auto* node = test::add_node(g, "FusedThing", {"x"}, {"z"});
  node->set_domain("com.example");
  test::check_model_or_throw(m);
  test::save_model(m, dir / "m.onnx");
  ModelFacts f = load_facts(dir / "m.onnx");
  EXPECT_EQ(f.op_histogram,
            (std::map<std::string, int64_t>{
                {"If", 1}, {"Neg", 1}, {"Relu", 1}, {"com.example::FusedThing", 1}}));
  EXPECT_EQ(f.node_count, 4);
  EXPECT_EQ(f.parameters, 0);
}

// Protobuf refuses messages above 64 MB unless told otherwise; real models are bigger.
TEST(ModelFacts, LargerThan64MegabytesAndHashedInOnePass) {
  TempDir dir;
  onnx::ModelProto m = test::new_model();
  auto* g = m.mutable_graph();
  test::add_input(g, "x", onnx::TensorProto::FLOAT, {1, 4096});
  test::add_output(g, "y", onnx::TensorProto::FLOAT, {1, 4608});
  test::add_float_initializer(g, "W", {4096, 4608}, 1);  // 72 MiB
  test::add_node(g, "MatMul", {"x", "W"}, {"y"});
  test::save_model(m, dir / "big.onnx");
  ModelFacts f = load_facts(dir / "big.onnx");
  EXPECT_EQ(f.parameters, 4096 * 4608);
  EXPECT_GT(f.file_size_bytes, 64 << 20);
  EXPECT_EQ(f.sha256, sha256_hex(read_file(dir / "big.onnx")));
}

// Newer models than the ONNX library knows (1.23.2: IR 14, opset 28) must not be rejected for
// being new; what Debian's libonnx 1.12 did not know (opset 18's ReduceMean) is now checked.
TEST(ModelFacts, NewerThanLibonnxIsANoteNotAnError) {
  TempDir dir;
  {
    test::linear_relu(dir / "l.onnx");
    onnx::ModelProto m;
    std::string bytes = read_file(dir / "l.onnx");
    ASSERT_TRUE(m.ParseFromString(bytes));
    m.set_ir_version(15);
    test::save_model(m, dir / "ir15.onnx");
    ModelFacts f = load_facts(dir / "ir15.onnx");
    EXPECT_EQ(f.ir_version, 15);
    EXPECT_NE(f.checker_note.find("checker passed"), std::string::npos) << f.checker_note;
    EXPECT_NE(f.checker_note.find("knows up to IR 14 opset 28"), std::string::npos)
        << f.checker_note;
    // Far beyond any plausible release (random bytes produce such numbers): no leniency.
    m.set_ir_version(44);
    test::save_model(m, dir / "ir44.onnx");
    expect_error([&] { load_facts(dir / "ir44.onnx"); }, ErrorKind::InvalidInput,
                 "ONNX checker: Your model ir_version 44 is higher than the checker's");
    m.set_ir_version(15);
    m.mutable_opset_import(0)->set_version(30);
    test::save_model(m, dir / "opset30.onnx");
    f = load_facts(dir / "opset30.onnx");
    EXPECT_EQ(f.opset, 30);
    EXPECT_NE(f.checker_note.find("opset 30"), std::string::npos) << f.checker_note;
  }
  {
    // Opset 18 moved ReduceMean's axes to an input: libonnx 1.12's schema (13) rejected that.
    onnx::ModelProto m = test::new_model(18);
    m.set_ir_version(9);
    auto* g = m.mutable_graph();
    test::add_input(g, "x", onnx::TensorProto::FLOAT, {2, 3});
    test::add_output(g, "y", onnx::TensorProto::FLOAT, {2, 1});
    auto* axes = g->add_initializer();
    axes->set_name("axes");
    axes->set_data_type(onnx::TensorProto::INT64);
    axes->add_dims(1);
    axes->add_int64_data(1);
    test::add_node(g, "ReduceMean", {"x", "axes"}, {"y"});
    test::save_model(m, dir / "opset18.onnx");
    ModelFacts f = load_facts(dir / "opset18.onnx");
    EXPECT_EQ(f.opset, 18);
    EXPECT_EQ(f.parameters, 1);
    EXPECT_EQ(f.checker_note, "");
    // The same model with a wrong output rank is caught now (1.12 could only skip the check).
    g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim();
    test::save_model(m, dir / "opset18_wrong.onnx");
    expect_error([&] { load_facts(dir / "opset18_wrong.onnx"); }, ErrorKind::InvalidInput,
                 "ONNX checker: shape inference:");
  }
}

// --- hostile and broken files: a one-line reason, never a crash ---

TEST(ModelFactsErrors, MissingDirectoryEmptyFifo) {
  TempDir dir;
  // Bare reasons: the caller prints which input it was.
  auto reason = [](const fs::path& path) {
    return expect_error([&] { load_facts(path); }, ErrorKind::InvalidInput, "");
  };
  EXPECT_EQ(reason(dir / "nope.onnx"), "not found");
  EXPECT_EQ(reason(dir.path()), "is a directory");
  test::write_bytes(dir / "empty.onnx", "");
  EXPECT_EQ(reason(dir / "empty.onnx"), "empty file");
  ASSERT_EQ(::mkfifo((dir / "fifo.onnx").c_str(), 0600), 0);
  EXPECT_EQ(reason(dir / "fifo.onnx"), "not a regular file");
}

TEST(ModelFactsErrors, TextAndRandomBytes) {
  TempDir dir;
  test::write_bytes(dir / "text.onnx", "this is not a model\n");
  expect_error([&] { load_facts(dir / "text.onnx"); }, ErrorKind::InvalidInput,
               "not an ONNX model");
  // A fixed xorshift stream: the same "random" files on every run.
  uint64_t s = 0x1234567887654321ULL;
  int parse_failures = 0;
  for (int i = 0; i < 200; ++i) {
    std::string bytes(static_cast<size_t>(1 + (i * 37) % 3000), '\0');
    for (char& c : bytes) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      c = static_cast<char>(s);
    }
    const fs::path path = dir / ("random" + std::to_string(i) + ".onnx");
    test::write_bytes(path, bytes);
    std::string msg = expect_rejected([&] { load_facts(path); });
    parse_failures += msg.find("protobuf parse failed") != std::string::npos;
  }
  EXPECT_GT(parse_failures, 100);
}

TEST(ModelFactsErrors, TruncatedModels) {
  TempDir dir;
  test::small_conv_net(dir / "conv.onnx");
  for (int percent = 1; percent < 100; percent += 7) {
    const fs::path path = dir / ("cut" + std::to_string(percent) + ".onnx");
    test::truncated_copy(dir / "conv.onnx", path, percent / 100.0);
    expect_rejected([&] { load_facts(path); });
  }
}

// Bytes flipped inside valid models reach deeper than random files: into the checker and shape
// inference with almost-valid graphs. Loaded or rejected, nothing else may escape.
TEST(ModelFactsErrors, MutatedModels) {
  TempDir dir;
  test::small_conv_net(dir / "a.onnx");
  test::int64_gather(dir / "b.onnx");
  test::symbolic_dim(dir / "c.onnx");
  const std::string bases[] = {read_file(dir / "a.onnx"), read_file(dir / "b.onnx"),
                               read_file(dir / "c.onnx")};
  uint64_t s = 0x9e3779b97f4a7c15ULL;
  auto next = [&] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  int loaded = 0, rejected = 0;
  for (int i = 0; i < 300; ++i) {
    std::string bytes = bases[i % 3];
    for (uint64_t k = 0, n = 1 + next() % 4; k < n; ++k) {
      bytes[next() % bytes.size()] = static_cast<char>(next());
    }
    const fs::path path = dir / "mutated.onnx";
    test::write_bytes(path, bytes);
    try {
      ModelFacts f = load_facts(path);
      ++loaded;
      // What loads must also be safe to take further.
      generate_inputs(f, resolve_input_shapes(f, {}));
    } catch (const Error& e) {
      ++rejected;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "mutation " << i << " escaped a non-turnkey exception: " << e.what();
    }
  }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(rejected, 0);
}

TEST(ModelFactsErrors, NoGraph) {
  TempDir dir;
  onnx::ModelProto m = test::new_model();
  m.clear_graph();
  test::save_model(m, dir / "nograph.onnx");
  expect_error([&] { load_facts(dir / "nograph.onnx"); }, ErrorKind::InvalidInput,
               "ONNX checker: ");
}

TEST(ModelFactsErrors, CheckerFailureIsOneLine) {
  TempDir dir;
  onnx::ModelProto m = test::new_model();
  auto* g = m.mutable_graph();
  test::add_input(g, "x", onnx::TensorProto::FLOAT, {1, 4});
  test::add_output(g, "y", onnx::TensorProto::FLOAT, {1, 4});
  test::add_node(g, "Relu", {"not_defined_yet"}, {"y"});
  test::save_model(m, dir / "m.onnx");
  expect_error([&] { load_facts(dir / "m.onnx"); }, ErrorKind::InvalidInput,
               "ONNX checker: Nodes in a graph must be topologically sorted");
}

TEST(ModelFactsErrors, ShapeInferenceFailureIsACheckerError) {
  TempDir dir;
  onnx::ModelProto m = test::new_model();
  auto* g = m.mutable_graph();
  test::add_input(g, "a", onnx::TensorProto::FLOAT, {2, 3});
  test::add_input(g, "b", onnx::TensorProto::FLOAT, {4, 5});
  test::add_output(g, "y", onnx::TensorProto::FLOAT, {2, 5});
  test::add_node(g, "MatMul", {"a", "b"}, {"y"});
  test::save_model(m, dir / "m.onnx");
  expect_error([&] { load_facts(dir / "m.onnx"); }, ErrorKind::InvalidInput,
               "ONNX checker: shape inference: ");
}

// The checker never compares dims with stored data: a tiny file may claim a giant weight.
TEST(ModelFactsErrors, InitializerDimsMustMatchItsData) {
  TempDir dir;
  auto model_with_weight = [&](std::vector<int64_t> dims) {
    onnx::ModelProto m = test::new_model();
    auto* g = m.mutable_graph();
    test::add_input(g, "x", onnx::TensorProto::FLOAT, {1, 4});
    test::add_output(g, "y", onnx::TensorProto::FLOAT, {1, 4});
    test::add_node(g, "Relu", {"x"}, {"y"});
    auto* w = g->add_initializer();
    w->set_name("W");
    w->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) w->add_dims(d);
    w->add_float_data(1.0f);
    return m;
  };
  test::save_model(model_with_weight({1000000, 1000000}), dir / "huge.onnx");
  expect_error([&] { load_facts(dir / "huge.onnx"); }, ErrorKind::InvalidInput,
               "initializer 'W': dims 1000000x1000000 need 1000000000000 elements of FLOAT, its "
               "data holds 1");
  test::save_model(model_with_weight({int64_t{1} << 40, int64_t{1} << 40}), dir / "overflow.onnx");
  expect_error([&] { load_facts(dir / "overflow.onnx"); }, ErrorKind::InvalidInput,
               "overflow int64");
  test::save_model(model_with_weight({-1}), dir / "negative.onnx");
  expect_error([&] { load_facts(dir / "negative.onnx"); }, ErrorKind::InvalidInput, "negative dim");
  test::save_model(model_with_weight({1}), dir / "fine.onnx");
  EXPECT_EQ(load_facts(dir / "fine.onnx").parameters, 1);
}

// Negative dim_values (some converters write -1 for "dynamic") read as unknown, shown as '?'.
TEST(ModelFactsErrors, NegativeAndUnnamedInputDimsAreSymbolic) {
  TempDir dir;
  onnx::ModelProto m = test::new_model();
  auto* g = m.mutable_graph();
  auto* x = test::add_input(g, "x", onnx::TensorProto::FLOAT, {1, 4, 1});
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(-1);
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->Clear();
  test::add_output(g, "y", onnx::TensorProto::FLOAT, {"a", "b", "c"});
  test::add_node(g, "Relu", {"x"}, {"y"});
  test::save_model(m, dir / "m.onnx");
  ModelFacts f = load_facts(dir / "m.onnx");
  ASSERT_EQ(f.inputs[0].dims.size(), 3u);
  EXPECT_FALSE(f.inputs[0].dims[0].known());
  EXPECT_EQ(f.inputs[0].dims[1].value, 4);
  EXPECT_FALSE(f.inputs[0].dims[2].known());
  EXPECT_EQ(f.inputs[0].dims[2].param, "");
  expect_error([&] { resolve_input_shapes(f, {}); }, ErrorKind::InvalidInput,
               "input 'x' has symbolic dims [?, ?]: give --input-shapes x:1x4x1");
}

}  // namespace
}  // namespace turnkey::onnx_model
