// End-to-end (issue 27): `--sequence optimize-fp16` on ONNX files of opsets 18-23 (IR 10/11) and
// with model-local functions, as users download or torch's dynamo exporter writes them; a file
// newer than ONNX Runtime and turnkey's ONNX library gets one line and the run goes on.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "e2e_util.h"
#include "support/onnx_factory.h"
#include "support/onnx_opset_models.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(NewOpsetsCli, OptimizeFp16RunsOnOpset18To23AndFunctionsAndATooNewFileIsOneLine) {
  TempDir dir{"tk-e2e-opsets"};
  const fs::path cache = dir / "cache";
  opset_net(dir / "opset18.onnx", 18, 10);
  opset_net(dir / "opset21.onnx", 21, 10);
  opset_net(dir / "opset23.onnx", 23, 11);
  local_function_net(dir / "functions.onnx", 18, 10);
  linear_relu(dir / "l.onnx");
  onnx::ModelProto m;
  {
    std::ifstream in(dir / "l.onnx", std::ios::binary);
    ASSERT_TRUE(m.ParseFromIstream(&in));
  }
  m.set_ir_version(15);
  m.mutable_opset_import(0)->set_version(30);
  save_model(m, dir / "too_new.onnx");

  std::vector<std::string> args;
  for (const char* name : {"opset18", "opset21", "opset23", "functions", "too_new"}) {
    args.push_back((dir / (std::string(name) + ".onnx")).string());
  }
  for (const char* a : {"--sequence", "optimize-fp16", "--iterations", "5"}) args.push_back(a);
  RunResult r = run_turnkey(args, cache);
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_FALSE(looks_like_crash(r)) << r.all();
  EXPECT_EQ(count_occurrences(r.out, "Successfully benchmarked"), 4) << r.all();

  std::vector<std::string> too_new_lines;
  std::istringstream lines(r.all());
  for (std::string line; std::getline(lines, line);) {
    if (line.find("too_new.onnx") != std::string::npos &&
        (line.find("turnkey:") != std::string::npos || line.find("Status:") != std::string::npos)) {
      too_new_lines.push_back(line);
    }
  }
  ASSERT_EQ(too_new_lines.size(), 1u) << r.all();
  // The reason names what is too new: the opset (turnkey's facts) or the IR version (ONNX
  // Runtime's refusal, when the sequence reaches it first).
  EXPECT_TRUE(too_new_lines[0].find("30") != std::string::npos ||
              too_new_lines[0].find("IR version: 15") != std::string::npos)
      << too_new_lines[0];

  int fp16_builds = 0;
  for (const auto& e : fs::directory_iterator(cache)) {
    if (!fs::exists(e.path() / "turnkey_stats.yaml")) continue;
    const json stats = json_from_yaml(slurp(e.path() / "turnkey_stats.yaml"));
    if (!stats.contains("fp16_worst_rel_error")) continue;
    ++fp16_builds;
    EXPECT_LT(stats["fp16_worst_rel_error"].get<double>(), 1e-2) << e.path();
    EXPECT_NE(stats["benchmarked_model"].get<std::string>().find("-fp16.onnx"), std::string::npos);
  }
  EXPECT_EQ(fp16_builds, 4) << r.all();
}

// A model whose outputs are all zeros (a zero-initialised head, as torchvision's ViTs have with
// random weights): convert-fp16's comparison of zeros against zeros says it shows nothing, and a
// model with signal does not get that line.
TEST(NewOpsetsCli, Fp16ComparisonOfAllZeroOutputsSaysNoSignal) {
  TempDir tmp("tk-fp16-zero");
  const fs::path dir = tmp.path();
  onnx::ModelProto model = new_model();
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {1, 8});
  add_output(g, "y", onnx::TensorProto::FLOAT, {1, 4});
  add_float_initializer(g, "w1", {8, 8}, 1);
  add_float_values(g, "head", {8, 4}, std::vector<float>(32, 0.0f));
  add_node(g, "MatMul", {"x", "w1"}, {"h"});
  add_node(g, "Relu", {"h"}, {"r"});
  add_node(g, "MatMul", {"r", "head"}, {"y"});
  save_model(model, dir / "zero_head.onnx");
  linear_relu(dir / "signal.onnx");

  RunResult r = run_turnkey({(dir / "zero_head.onnx").string(), (dir / "signal.onnx").string(),
                             "--sequence", "optimize-fp16", "--iterations", "5"},
                            dir / "cache");
  EXPECT_FALSE(looks_like_crash(r)) << r.all();
  int logs = 0;
  for (const auto& e : fs::directory_iterator(dir / "cache")) {
    const fs::path log = e.path() / "log_convert-fp16.txt";
    if (!fs::exists(log)) continue;
    ++logs;
    const bool zero = e.path().filename().string().rfind("zero_head", 0) == 0;
    EXPECT_EQ(slurp(log).find("no signal: every output of the float32 model is all zeros") !=
                  std::string::npos,
              zero)
        << log << "\n" << slurp(log);
  }
  EXPECT_EQ(logs, 2) << r.all();
}

}  // namespace
}  // namespace turnkey::test
