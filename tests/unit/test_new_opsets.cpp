// Every C++ tool that reads or rewrites a model, on what ONNX Runtime 1.29 runs and Debian's
// libonnx 1.12 did not know (issue 27): IR 10/11, opsets 18-23, model-local functions; and a
// model newer than turnkey's ONNX library, which each tool turns into one line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "build_stages_support.h"
#include "ort_run_support.h"
#include "support/onnx_factory.h"
#include "support/onnx_opset_models.h"
#include "support/temp_dir.h"
#include "turnkey/transforms/batch_variant.h"
#include "turnkey/transforms/transforms.h"
#include "turnkey/common/error.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey {
namespace {

namespace fs = std::filesystem;
using build_test::expect_error;
using build_test::read_model;
using onnx_model::ModelFacts;
using test::run_ort;
using test::TempDir;

struct Version {
  int opset;
  int ir;
};
// What torch's dynamo exporter writes (18), what ONNX files people download declare (21), and
// the newest opset ONNX Runtime 1.29 runs (23, IR 11).
constexpr Version kVersions[] = {{18, 10}, {21, 10}, {23, 11}};

std::string name_of(const Version& v) {
  return "opset" + std::to_string(v.opset) + "_ir" + std::to_string(v.ir);
}

// linear_relu declared as IR 15 / opset 30: beyond ONNX 1.23 (IR 14, opset 28) and ORT 1.29.
fs::path too_new_model(const TempDir& dir) {
  test::linear_relu(dir / "l.onnx");
  onnx::ModelProto m = read_model(dir / "l.onnx");
  m.set_ir_version(15);
  m.mutable_opset_import(0)->set_version(30);
  test::save_model(m, dir / "too_new.onnx");
  return dir / "too_new.onnx";
}

TEST(NewOpsets, TheOnnxLibraryKnowsWhatOnnxRuntimeRuns) {
  // scripts/setup-onnx's library, not Debian's 1.12 (IR 8, opset 17).
  EXPECT_STRNE(onnx_model::libonnx_version(), "1.12.0");
  EXPECT_GE(onnx::IR_VERSION, 11);
}

TEST(NewOpsets, FactsCheckerAndOpHistogram) {
  TempDir dir;
  for (const Version& v : kVersions) {
    const fs::path path = dir / (name_of(v) + ".onnx");
    test::opset_net(path, v.opset, v.ir);
    const ModelFacts f = onnx_model::load_facts(path);  // checker + strict shape inference
    EXPECT_EQ(f.opset, v.opset);
    EXPECT_EQ(f.ir_version, v.ir);
    EXPECT_EQ(f.checker_note, "") << name_of(v);
    for (const char* op : {"Split", "Pad", "Resize", "ReduceMean", "ReduceMax"}) {
      EXPECT_EQ(f.op_histogram.count(op), 1u) << op;
    }
    EXPECT_EQ(f.op_histogram.count("RMSNormalization"), v.opset >= 23 ? 1u : 0u);
    EXPECT_EQ(f.node_count, v.opset >= 23 ? 9 : 8);
    EXPECT_EQ(f.local_functions, 0);
  }
}

TEST(NewOpsets, FactsCountFunctionBodiesOncePerCall) {
  TempDir dir;
  test::local_function_net(dir / "f.onnx");
  const ModelFacts f = onnx_model::load_facts(dir / "f.onnx");
  EXPECT_EQ(f.checker_note, "");
  EXPECT_EQ(f.local_functions, 2);
  EXPECT_EQ(f.op_histogram,
            (std::map<std::string, int64_t>{{"MatMul", 3}, {"Add", 4}, {"Tanh", 2}, {"Relu", 1}}));
  EXPECT_EQ(f.node_count, 10);
  EXPECT_EQ(f.parameters, 16 * 16 * 2 + 16 * 2 + 16 * 4);

  // A function that calls itself (ONNX forbids it): one line, no endless walk.
  onnx::ModelProto m = read_model(dir / "f.onnx");
  auto* body = m.mutable_functions(0)->mutable_node(0);  // LinearTanh's MatMul
  body->set_op_type("Block");
  body->set_domain("pkg.turnkey");
  test::save_model(m, dir / "cycle.onnx");
  expect_error([&] { onnx_model::load_facts(dir / "cycle.onnx"); }, ErrorKind::InvalidInput,
               "calls itself");
  // The tools that inline functions refuse it before the inliner could recurse without end.
  expect_error(
      [&] { transforms::optimize_ort(dir / "cycle.onnx", dir / "o.onnx", transforms::OrtOptLevel::Basic); },
      ErrorKind::InvalidInput, "input: inlining model-local functions:");
  expect_error([&] { transforms::convert_fp16(dir / "cycle.onnx", dir / "o.onnx"); },
               ErrorKind::InvalidInput, "input: ONNX checker");
}

TEST(NewOpsets, CheckOnnxPassesEveryVersionAndFunctions) {
  TempDir dir;
  for (const Version& v : kVersions) {
    test::opset_net(dir / "m.onnx", v.opset, v.ir);
    const transforms::CheckVerdict verdict = transforms::check_onnx(dir / "m.onnx");
    EXPECT_TRUE(verdict.passed) << name_of(v) << ": " << verdict.stage << ": " << verdict.reason;
    EXPECT_NE(verdict.reason.find("strict shape inference"), std::string::npos) << verdict.reason;
  }
  test::local_function_net(dir / "f.onnx", 21, 10);
  const transforms::CheckVerdict verdict = transforms::check_onnx(dir / "f.onnx");
  EXPECT_TRUE(verdict.passed) << verdict.stage << ": " << verdict.reason;
}

TEST(NewOpsets, OptimizeOrtKeepsOutputs) {
  TempDir dir;
  for (const Version& v : kVersions) {
    test::opset_net(dir / "m.onnx", v.opset, v.ir);
    const auto r = transforms::optimize_ort(dir / "m.onnx", dir / "opt.onnx", transforms::OrtOptLevel::Basic);
    EXPECT_TRUE(r.portable) << name_of(v);
    EXPECT_EQ(run_ort(dir / "opt.onnx").at(0).data, run_ort(dir / "m.onnx").at(0).data);
  }
  // ONNX Runtime inlines the functions; nodes_before counts their bodies as the facts do.
  test::local_function_net(dir / "f.onnx");
  const auto r = transforms::optimize_ort(dir / "f.onnx", dir / "f_opt.onnx", transforms::OrtOptLevel::Basic);
  EXPECT_EQ(r.nodes_before, 10);
  EXPECT_TRUE(r.portable);
  EXPECT_EQ(read_model(dir / "f_opt.onnx").functions_size(), 0);
  EXPECT_EQ(run_ort(dir / "f_opt.onnx").at(0).data, run_ort(dir / "f.onnx").at(0).data);
}

TEST(NewOpsets, ConvertFp16StaysWithinToleranceOnOpset18To23) {
  TempDir dir;
  for (const Version& v : kVersions) {
    test::opset_net(dir / "m.onnx", v.opset, v.ir);
    const auto r = transforms::convert_fp16(dir / "m.onnx", dir / "fp16.onnx");
    EXPECT_EQ(onnx_model::load_facts(dir / "fp16.onnx").checker_note, "");
    const transforms::Comparison c = transforms::compare_models(dir / "m.onnx", dir / "fp16.onnx");
    EXPECT_TRUE(c.within) << name_of(v) << ": rel " << c.worst_rel_error << " cos "
                          << c.worst_cosine;
    EXPECT_GT(c.outputs.at(0).max_abs_error, 0.0) << "nothing converted?";
    // Resize is on the block list; the reductions whose axes became inputs compute in float16.
    EXPECT_EQ(r.kept_fp32_ops, (std::map<std::string, int64_t>{{"Resize", 1}})) << name_of(v);
    const onnx::ModelProto m = read_model(dir / "fp16.onnx");
    for (const auto& t : m.graph().initializer()) {
      if (t.name() == "scales") {
        EXPECT_EQ(t.data_type(), onnx::TensorProto::FLOAT);  // Resize's: literal tensor(float)
      } else if (t.name() == "pads" || t.name() == "pad_axes" || t.name() == "spatial_axes") {
        EXPECT_EQ(t.data_type(), onnx::TensorProto::INT64) << t.name();
      } else {
        EXPECT_EQ(t.data_type(), onnx::TensorProto::FLOAT16) << t.name();  // pad_value too
      }
    }
  }
}

TEST(NewOpsets, ConvertFp16ConvertsInsideModelLocalFunctions) {
  TempDir dir;
  test::local_function_net(dir / "f.onnx", 21, 10);
  const auto r = transforms::convert_fp16(dir / "f.onnx", dir / "fp16.onnx");
  EXPECT_EQ(r.local_functions_inlined, 2);
  EXPECT_EQ(r.nodes_before, 10);
  EXPECT_EQ(r.nodes_fp16, 10);
  EXPECT_TRUE(r.kept_fp32_ops.empty());
  const onnx::ModelProto m = read_model(dir / "fp16.onnx");
  EXPECT_EQ(m.functions_size(), 0);
  for (const auto& t : m.graph().initializer()) {
    EXPECT_EQ(t.data_type(), onnx::TensorProto::FLOAT16) << t.name();
  }
  const transforms::Comparison c = transforms::compare_models(dir / "f.onnx", dir / "fp16.onnx");
  EXPECT_TRUE(c.within) << "rel " << c.worst_rel_error << " cos " << c.worst_cosine;
  EXPECT_GT(c.outputs.at(0).max_abs_error, 0.0);
}

TEST(NewOpsets, IntermediateOutputsAndBatchVariant) {
  TempDir dir;
  test::opset_net(dir / "m.onnx", 21, 10);
  transforms::add_graph_outputs(dir / "m.onnx", dir / "inter.onnx", {"mean", "p"}, {});
  const ModelFacts f = onnx_model::load_facts(dir / "inter.onnx");
  ASSERT_EQ(f.outputs.size(), 3u);
  EXPECT_EQ(f.outputs[1].name, "mean");
  EXPECT_EQ(f.outputs[1].dtype, DType::Float32);
  const auto out = run_ort(dir / "inter.onnx");
  EXPECT_EQ(out.at(2).shape, (std::vector<int64_t>{1, 4, 10, 10}));  // Pad's axes input applied

  // A function call's output is a main-graph value too; its type comes through the body.
  test::local_function_net(dir / "f.onnx", 23, 11);
  transforms::add_graph_outputs(dir / "f.onnx", dir / "f_inter.onnx", {"h1"}, {});
  EXPECT_EQ(onnx_model::load_facts(dir / "f_inter.onnx").outputs.at(1).dtype, DType::Float32);
  EXPECT_EQ(run_ort(dir / "f_inter.onnx").at(1).shape, (std::vector<int64_t>{1, 16}));

  for (const Version& v : kVersions) {
    test::opset_net(dir / "b.onnx", v.opset, v.ir);
    transforms::write_batch_variant(dir / "b.onnx", dir / "b4.onnx", {"x"});
    const ModelFacts b = onnx_model::load_facts(dir / "b4.onnx");
    EXPECT_EQ(b.opset, v.opset);
    EXPECT_EQ(b.inputs.at(0).dims.at(0).param, transforms::kBatchDimName);
    EXPECT_EQ(run_ort(dir / "b4.onnx", {{"x", {4, 4, 8, 8}}}).at(0).shape,
              (std::vector<int64_t>{4, 4}))
        << name_of(v);
  }
}

TEST(NewOpsets, AModelTooNewGetsOneLineFromEveryTool) {
  TempDir dir;
  const fs::path m = too_new_model(dir);
  const ModelFacts f = onnx_model::load_facts(m);  // facts still, with a note
  EXPECT_EQ(f.opset, 30);
  EXPECT_NE(f.checker_note.find("model has IR 15 opset 30, libonnx"), std::string::npos)
      << f.checker_note;
  expect_error([&] { transforms::convert_fp16(m, dir / "fp16.onnx"); }, ErrorKind::InvalidInput,
               "input: model has IR 15 opset 30, libonnx");
  EXPECT_FALSE(fs::exists(dir / "fp16.onnx"));
  const transforms::CheckVerdict verdict = transforms::check_onnx(m);  // ONNX Runtime 1.29 refuses it
  EXPECT_FALSE(verdict.passed);
  EXPECT_EQ(verdict.stage, "onnxruntime");
  EXPECT_EQ(verdict.reason.find('\n'), std::string::npos) << verdict.reason;
  expect_error([&] { transforms::optimize_ort(m, dir / "opt.onnx", transforms::OrtOptLevel::Basic); },
               ErrorKind::Runtime, "");
}

}  // namespace
}  // namespace turnkey
