// optimize-ort and check-onnx (src/transforms/) on models the factory builds, plus the hostile
// inputs they must turn into one-line errors.
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
using build_test::expect_error;
using build_test::kSameOutputs;
using build_test::large_external_linear;
using build_test::nodes_of;
using build_test::read_model;
using test::TempDir;

TEST(OptimizeOrt, EveryLevelLoadsHasNoMoreNodesAndKeepsOutputs) {
  TempDir dir;
  test::tiny_transformer(dir / "t.onnx");
  test::conv_bn_resize_net(dir / "c.onnx");
  for (const char* model : {"t.onnx", "c.onnx"}) {
    for (const char* level : {"basic", "extended", "layout", "all"}) {
      SCOPED_TRACE(fmt::format("{} {}", model, level));
      const fs::path out = dir / fmt::format("{}_{}", level, model);
      auto r = transforms::optimize_ort(dir / model, out, transforms::parse_ort_opt_level(level));
      EXPECT_TRUE(fs::is_regular_file(out));
      EXPECT_GT(r.nodes_before, 0);
      EXPECT_LE(r.nodes_after, r.nodes_before);
      EXPECT_GT(r.output_size_bytes, 0);
      EXPECT_EQ(r.portable, r.runtime_specific_ops.empty());
      if (std::string(level) == "basic") {
        EXPECT_TRUE(r.portable);
      }
      transforms::Comparison c = transforms::compare_models(dir / model, out, kSameOutputs);
      EXPECT_TRUE(c.within) << c.worst_rel_error;
    }
  }
  // basic folds BatchNormalization into the Conv before it
  auto r = transforms::optimize_ort(dir / "c.onnx", dir / "c_basic2.onnx", transforms::OrtOptLevel::Basic);
  EXPECT_LT(r.nodes_after, r.nodes_before);
  EXPECT_TRUE(nodes_of(read_model(dir / "c_basic2.onnx").graph(), "BatchNormalization").empty());
  // extended fuses into ORT contrib ops: not portable
  auto e = transforms::optimize_ort(dir / "t.onnx", dir / "t_ext2.onnx", transforms::OrtOptLevel::Extended);
  EXPECT_FALSE(e.portable);
  // no temp files left behind
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

TEST(OptimizeOrt, ExternalDataModelsKeepExternalData) {
  TempDir dir;
  large_external_linear(dir);
  fs::create_directories(dir / "out");
  auto r = transforms::optimize_ort(dir / "m.onnx", dir / "out" / "o.onnx", transforms::OrtOptLevel::Basic);
  EXPECT_EQ(r.external_data, "o.onnx.data");
  EXPECT_GE(fs::file_size(dir / "out" / "o.onnx.data"), 256u * 16u * 4u);
  EXPECT_GT(r.output_size_bytes, static_cast<int64_t>(256 * 16 * 4));
  EXPECT_TRUE(transforms::check_onnx(dir / "out" / "o.onnx").passed);
  EXPECT_TRUE(transforms::compare_models(dir / "m.onnx", dir / "out" / "o.onnx", kSameOutputs).within);

  // Small external weights (below ORT's 1 KiB threshold) come back inline: no data file.
  test::external_data_linear(dir / "small.onnx");
  auto s = transforms::optimize_ort(dir / "small.onnx", dir / "small_o.onnx", transforms::OrtOptLevel::Basic);
  EXPECT_EQ(s.external_data, "");
  EXPECT_FALSE(fs::exists(dir / "small_o.onnx.data"));
  EXPECT_TRUE(transforms::compare_models(dir / "small.onnx", dir / "small_o.onnx", kSameOutputs).within);
}

TEST(OptimizeOrt, HostileInputsAndOutputsGiveOneLineErrors) {
  TempDir dir;
  test::linear_relu(dir / "m.onnx");
  expect_error([&] { transforms::parse_ort_opt_level("99"); }, ErrorKind::InvalidInput,
               "not one of basic, extended, layout, all");
  EXPECT_EQ(transforms::ort_opt_level_name(transforms::parse_ort_opt_level("extended")),
            std::string("extended"));
  expect_error(
      [&] { transforms::optimize_ort(dir / "missing.onnx", dir / "o.onnx", transforms::OrtOptLevel::All); },
      ErrorKind::InvalidInput, "input: not found");
  test::write_bytes(dir / "corrupt.onnx", "\x08\x07garbage\xff\xff\xff\xff\x0f not protobuf");
  expect_error(
      [&] { transforms::optimize_ort(dir / "corrupt.onnx", dir / "o.onnx", transforms::OrtOptLevel::All); },
      ErrorKind::InvalidInput, "input: not an ONNX model");
  expect_error(
      [&] {
        transforms::optimize_ort(dir / "m.onnx", dir / "no" / "o.onnx", transforms::OrtOptLevel::Basic);
      },
      ErrorKind::Export, "does not exist");
  expect_error(
      [&] { transforms::optimize_ort(dir / "m.onnx", dir / "m.onnx", transforms::OrtOptLevel::Basic); },
      ErrorKind::InvalidInput, "is the input");
  // parses and passes libonnx's checker, but ONNX Runtime has no such op
  onnx::ModelProto custom = test::new_model();
  auto* op = custom.add_opset_import();
  op->set_domain("turnkey.test");
  op->set_version(1);
  test::add_input(custom.mutable_graph(), "x", onnx::TensorProto::FLOAT, {1});
  test::add_output(custom.mutable_graph(), "y", onnx::TensorProto::FLOAT, {1});
  test::add_node(custom.mutable_graph(), "Nope", {"x"}, {"y"})->set_domain("turnkey.test");
  test::save_model(custom, dir / "custom.onnx");
  expect_error(
      [&] { transforms::optimize_ort(dir / "custom.onnx", dir / "o.onnx", transforms::OrtOptLevel::Basic); },
      ErrorKind::Runtime, "ONNX Runtime");
  EXPECT_FALSE(fs::exists(dir / "o.onnx"));
}

// ---- check-onnx ---------------------------------------------------------------------------------

TEST(CheckOnnx, VerdictNamesTheStageThatFailed) {
  TempDir dir;
  test::tiny_transformer(dir / "good.onnx");
  transforms::CheckVerdict good = transforms::check_onnx(dir / "good.onnx");
  EXPECT_TRUE(good.passed);
  EXPECT_EQ(good.stage, "");
  EXPECT_NE(good.reason.find("ONNX Runtime"), std::string::npos) << good.reason;

  test::write_bytes(dir / "corrupt.onnx", "\x08\x07garbage\xff\xff\xff\xff\x0f not protobuf");
  transforms::CheckVerdict corrupt = transforms::check_onnx(dir / "corrupt.onnx");
  EXPECT_FALSE(corrupt.passed);
  EXPECT_EQ(corrupt.stage, "parse");

  onnx::ModelProto dangling = test::new_model();
  test::add_input(dangling.mutable_graph(), "x", onnx::TensorProto::FLOAT, {1});
  test::add_output(dangling.mutable_graph(), "y", onnx::TensorProto::FLOAT, {1});
  test::add_node(dangling.mutable_graph(), "Add", {"x", "nowhere"}, {"y"});
  test::save_model(dangling, dir / "dangling.onnx");
  transforms::CheckVerdict checker = transforms::check_onnx(dir / "dangling.onnx");
  EXPECT_FALSE(checker.passed);
  EXPECT_EQ(checker.stage, "checker");
  EXPECT_NE(checker.reason.find("nowhere"), std::string::npos) << checker.reason;

  // MatMul [1,4] x [3,2]: inner dims disagree
  onnx::ModelProto mismatch = test::new_model();
  test::add_input(mismatch.mutable_graph(), "x", onnx::TensorProto::FLOAT, {1, 4});
  test::add_output(mismatch.mutable_graph(), "y", onnx::TensorProto::FLOAT, {1, 2});
  test::add_float_initializer(mismatch.mutable_graph(), "W", {3, 2}, 1);
  test::add_node(mismatch.mutable_graph(), "MatMul", {"x", "W"}, {"y"});
  test::save_model(mismatch, dir / "mismatch.onnx");
  transforms::CheckVerdict inference = transforms::check_onnx(dir / "mismatch.onnx");
  EXPECT_FALSE(inference.passed);
  EXPECT_EQ(inference.stage, "shape inference");

  onnx::ModelProto custom = test::new_model();
  auto* op = custom.add_opset_import();
  op->set_domain("turnkey.test");
  op->set_version(1);
  test::add_input(custom.mutable_graph(), "x", onnx::TensorProto::FLOAT, {1});
  test::add_output(custom.mutable_graph(), "y", onnx::TensorProto::FLOAT, {1});
  test::add_node(custom.mutable_graph(), "Nope", {"x"}, {"y"})->set_domain("turnkey.test");
  test::save_model(custom, dir / "custom.onnx");
  transforms::CheckVerdict ort = transforms::check_onnx(dir / "custom.onnx");
  EXPECT_FALSE(ort.passed);
  EXPECT_EQ(ort.stage, "onnxruntime");

  for (const auto* v : {&good, &corrupt, &checker, &inference, &ort}) {
    EXPECT_EQ(v->reason.find('\n'), std::string::npos) << v->reason;
    EXPECT_FALSE(v->reason.empty());
  }
}

TEST(CheckOnnx, NoFileToJudgeThrows) {
  TempDir dir;
  expect_error([&] { transforms::check_onnx(dir / "missing.onnx"); }, ErrorKind::InvalidInput,
               "not found");
  expect_error([&] { transforms::check_onnx(dir.path()); }, ErrorKind::InvalidInput, "is a directory");
}

}  // namespace
}  // namespace turnkey
