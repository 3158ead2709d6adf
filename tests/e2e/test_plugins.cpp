// Runtime plugins (docs/plugins.md): the example opencv-dnn plugin in system-info and in
// benchmarks, results against ONNX Runtime, and every way a plugin is refused or fails while the
// run goes on. Test plugins come from tests/plugins/test_plugin.c.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "e2e_util.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/error.h"
#include "turnkey/onnx/model_facts.h"
#include "turnkey/runtime/plugin_host.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kTestPlugins = TURNKEY_TEST_PLUGIN_DIR;
const fs::path kBuildPlugins = TURNKEY_BUILD_PLUGIN_DIR;

// small_conv_net with its Gemm as PyTorch exports nn.Linear (weight [out, in], transB=1) and
// an explicit kernel_shape: OpenCV 4.6 cannot import a Gemm with transB=0 and a bias, nor a Conv
// without kernel_shape. input [1,3,32,32] -> Conv -> Relu
// -> GlobalAveragePool -> Flatten -> Gemm -> output [1,10].
void conv_gemm_net(const fs::path& path) {
  onnx::ModelProto model = new_model();
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "input", onnx::TensorProto::FLOAT, {1, 3, 32, 32});
  add_output(g, "output", onnx::TensorProto::FLOAT, {1, 10});
  add_float_initializer(g, "conv.weight", {8, 3, 3, 3}, 1);
  add_float_initializer(g, "conv.bias", {8}, 2);
  add_float_initializer(g, "fc.weight", {10, 8}, 3);
  add_float_initializer(g, "fc.bias", {10}, 4);
  onnx::NodeProto* conv = add_node(g, "Conv", {"input", "conv.weight", "conv.bias"}, {"conv"});
  onnx::AttributeProto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  onnx::AttributeProto* kernel = conv->add_attribute();  // OpenCV does not infer it
  kernel->set_name("kernel_shape");
  kernel->set_type(onnx::AttributeProto::INTS);
  kernel->add_ints(3);
  kernel->add_ints(3);
  add_node(g, "Relu", {"conv"}, {"relu"});
  add_node(g, "GlobalAveragePool", {"relu"}, {"pool"});
  add_node(g, "Flatten", {"pool"}, {"flat"});
  onnx::NodeProto* gemm = add_node(g, "Gemm", {"flat", "fc.weight", "fc.bias"}, {"output"});
  onnx::AttributeProto* trans_b = gemm->add_attribute();
  trans_b->set_name("transB");
  trans_b->set_type(onnx::AttributeProto::INT);
  trans_b->set_i(1);
  check_model_or_throw(model);
  save_model(model, path);
}

class Plugins : public ::testing::Test {
 protected:
  TempDir dir{"tk-e2e-plugins"};
  fs::path cache() const { return dir.path() / "cache"; }

  fs::path model(const std::string& name) {
    fs::path p = dir / (name + ".onnx");
    if (!fs::exists(p)) {
      if (name == "conv")
        conv_gemm_net(p);
      else if (name == "linear")
        linear_relu(p);
      else if (name == "gather")
        int64_gather(p);
    }
    return p;
  }

  json stats_of(const std::string& stem) const {
    for (const auto& e : fs::directory_iterator(cache())) {
      if (e.path().filename().string().rfind(stem + "_", 0) == 0) {
        return json_from_yaml(slurp(e.path() / "turnkey_stats.yaml"));
      }
    }
    return nullptr;
  }
};

// ---- the example plugin through the binary ------------------------------------------------------

TEST_F(Plugins, SystemInfoListsTheExamplePluginAsAvailable) {
  RunResult r = run_turnkey({"system-info"}, cache(), {{"TURNKEY_PLUGIN_PATH", ""}});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(\n  opencv-dnn\s+OpenCV DNN 4\.\d+\.\d+ on x86: available\n)")))
      << r.out;
  // Found in <build>/plugins, next to the binary, without any configuration.
  EXPECT_NE(
      r.out.find((kBuildPlugins / "libturnkey_opencv_dnn.so").string() + ": runtime opencv-dnn"),
      std::string::npos)
      << r.out;
  EXPECT_EQ(r.err.find("refused"), std::string::npos) << r.err;
}

TEST_F(Plugins, ExamplePluginBenchmarksAnOnnxFile) {
  RunResult r = run_turnkey(
      {model("conv").string(), "--runtime", "opencv-dnn", "--iterations", "20"}, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(Successfully benchmarked on .+ \(opencv-dnn v4\.\d+\.\d+\))")))
      << r.out;
  json s = stats_of("conv");
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["runtime"], "opencv-dnn");
  EXPECT_EQ(s["runtime_name"], "OpenCV DNN");
  EXPECT_EQ(s["iterations"], 20);
  EXPECT_GT(s["mean_latency_ms"].get<double>(), 0);
  EXPECT_GT(s["throughput_ips"].get<double>(), 0);
}

// hello_world's model takes and returns 1-D tensors, which OpenCV 4.6 holds as Nx1 Mats: the
// outputs are compared element by element and the shape difference is said, not an error of inf.
TEST_F(Plugins, ExamplePluginRunsAModelWithOneDimensionalTensors) {
  RunResult r =
      run_turnkey({(fs::path(TURNKEY_SOURCE_DIR) / "examples/cli/scripts/hello_world.py").string(),
                   "--runtime", "opencv-dnn", "--iterations", "5"},
                  cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("Correctness:    within tolerance:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("output 'output' has shape 5x1 where the reference has 5: the same "
                       "elements, compared in order"),
            std::string::npos)
      << r.out;
  json s = stats_of("hello_world");
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["correctness"]["verdict"], "within_tolerance");
  EXPECT_LT(s["max_abs_error"].get<double>(), 1e-5);
}

TEST_F(Plugins, WhatTheExamplePluginCannotRunFailsThatInputOnly) {
  // OpenCV 4.6 Mats have no int64: the gather model's input_ids cannot be fed.
  RunResult r = run_turnkey({model("gather").string(), model("linear").string(), "--runtime",
                             "opencv-dnn", "--iterations", "5"},
                            cache());
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_FALSE(looks_like_crash(r)) << r.all();
  EXPECT_NE(r.out.find("Failed at benchmark: opencv-dnn: input 'input_ids' is int64, which "
                       "OpenCV DNN"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(stats_of("gather").value("build_status", ""), "failed");
  EXPECT_EQ(stats_of("linear").value("build_status", ""), "successful");
}

// ---- refusals: one line on stderr, and the run goes on
// --------------------------------------------

TEST_F(Plugins, PluginBuiltForAnotherAbiIsRefusedAndTheRunGoesOn) {
  const fs::path lib = kTestPlugins / "wrong_abi" / "libtk_test_plugin_wrong_abi.so";
  // A run on a built-in runtime loads no plugin at all (each may pull in a heavy library).
  RunResult r = run_turnkey({model("linear").string(), "--iterations", "5"}, cache(),
                            {{"TURNKEY_PLUGIN_PATH", lib.parent_path().string()}});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(r.err.find("refused"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("Successfully benchmarked"), std::string::npos) << r.out;
  // A runtime name that is not built in loads the plugins: the refusal is said, once.
  RunResult other = run_turnkey({model("linear").string(), "--runtime", "no-such-runtime"},
                                cache(), {{"TURNKEY_PLUGIN_PATH", lib.parent_path().string()}});
  EXPECT_EQ(other.exit_code, 2) << other.all();
  EXPECT_NE(other.err.find("turnkey: plugin " + lib.string() +
                           " refused: built for turnkey plugin ABI version 99, this turnkey "
                           "speaks version 1"),
            std::string::npos)
      << other.err;
  EXPECT_EQ(count_occurrences(other.err, "refused"), 1) << other.err;  // once per process

  RunResult info = run_turnkey({"system-info"}, cache(), {{"TURNKEY_PLUGIN_PATH", lib.string()}});
  ASSERT_EQ(info.exit_code, 0) << info.all();
  EXPECT_NE(info.out.find(lib.string() + ": refused: built for turnkey plugin ABI version 99"),
            std::string::npos)
      << info.out;
  EXPECT_TRUE(std::regex_search(info.out, std::regex(R"(\n  opencv-dnn\s+.*: available\n)")))
      << info.out;
}

TEST_F(Plugins, BrokenLibrariesAndBadPathEntriesAreRefusedWithTheirReason) {
  fs::path junk_dir = dir / "junk";
  fs::create_directories(junk_dir);
  write_bytes(junk_dir / "libbroken.so", "this is not an ELF file\n");
  const std::string path = junk_dir.string() + ":" + std::string(TURNKEY_ORT_LIBRARY) + ":" +
                           (dir / "no_such_folder").string() + ":" +
                           (kTestPlugins / "clash").string();
  RunResult r = run_turnkey({"system-info"}, cache(), {{"TURNKEY_PLUGIN_PATH", path}});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("turnkey: plugin " + (junk_dir / "libbroken.so").string() +
                        R"( refused: cannot be loaded: .*(invalid ELF header|too short)[^\n]*\n)")))
      << r.err;
  EXPECT_NE(r.err.find(std::string(TURNKEY_ORT_LIBRARY) +
                       " refused: not a turnkey plugin: it exports no turnkey_plugin_entry()"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find((dir / "no_such_folder").string() +
                       " refused: TURNKEY_PLUGIN_PATH entry does not exist"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("libtk_test_plugin_clash.so refused: runtime name 'ort' is already taken"),
            std::string::npos)
      << r.err;
  // The built-in runtime keeps its name; the example plugin still loads.
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  ort\s+ONNX Runtime 1\.)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  opencv-dnn\s+.*: available\n)"))) << r.out;
}

// ---- a plugin that fails: that benchmark fails with its message ------------------------------

TEST_F(Plugins, PluginErrorsFailTheBenchmarkWithThePluginsMessage) {
  const std::vector<std::pair<std::string, std::string>> env = {
      {"TURNKEY_PLUGIN_PATH", (kTestPlugins / "good").string()}};
  RunResult load = run_turnkey({model("linear").string(), model("conv").string(), "--runtime",
                                "test-plugin", "--rt-args", "fail_at=load", "--iterations", "3"},
                               cache(), env);
  EXPECT_EQ(load.exit_code, 1) << load.all();
  EXPECT_FALSE(looks_like_crash(load)) << load.all();
  // Both inputs were tried: the first failure did not stop the run.
  EXPECT_NE(load.out.find("Failed at benchmark: test-plugin: test-plugin refuses to load " +
                          model("linear").string()),
            std::string::npos)
      << load.out;
  EXPECT_NE(load.out.find("Failed at benchmark: test-plugin: test-plugin refuses to load " +
                          model("conv").string()),
            std::string::npos)
      << load.out;

  RunResult run = run_turnkey({model("linear").string(), "--runtime", "test-plugin", "--rt-args",
                               "fail_at=run", "--iterations", "3"},
                              cache(), env);
  EXPECT_EQ(run.exit_code, 1) << run.all();
  EXPECT_NE(run.out.find("Failed at benchmark: test-plugin: test-plugin refuses to run"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(stats_of("linear").value("error", ""), "test-plugin: test-plugin refuses to run");

  RunResult ok = run_turnkey(
      {model("linear").string(), "--runtime", "test-plugin", "--iterations", "3"}, cache(), env);
  EXPECT_EQ(ok.exit_code, 0) << ok.all();
  EXPECT_NE(ok.out.find("(test-plugin v1.0-test)"), std::string::npos) << ok.out;
}

// A runtime whose outputs change from call to call (a race between its threads) is a mismatch
// that says so: one more call in a fresh session, after the timed ones, gave other outputs.
TEST_F(Plugins, ARuntimeWhoseOutputsChangeFromCallToCallIsNamedNondeterministic) {
  const std::vector<std::pair<std::string, std::string>> env = {
      {"TURNKEY_PLUGIN_PATH", (kTestPlugins / "good").string()}};
  const std::string script =
      (fs::path(TURNKEY_SOURCE_DIR) / "tests" / "data" / "scripts" / "passthrough.py").string();
  RunResult r = run_turnkey(
      {script, "--runtime", "test-plugin", "--rt-args", "drift=1", "--iterations", "3"}, cache(),
      env);
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_NE(r.out.find("Numeric mismatch (benchmark): test-plugin outputs differ from PyTorch's: "
                       "outside tolerance (nondeterministic: another call on the same inputs "
                       "gave other outputs, max abs error "),
            std::string::npos)
      << r.out;
  json s = stats_of("passthrough");
  EXPECT_EQ(s["correctness"]["verdict"], "outside_tolerance") << s.dump();
  EXPECT_FALSE(s["correctness"]["repeat"]["within"].get<bool>()) << s.dump();
  const fs::path build = cache() / s.value("build_name", std::string());
  EXPECT_NE(slurp(build / "log_benchmark.txt")
                .find("one more call in a fresh session, against the judged outputs: "),
            std::string::npos);

  // The same runtime computing the same outputs at every call: within tolerance, nothing asked.
  RunResult ok =
      run_turnkey({script, "--runtime", "test-plugin", "--iterations", "3"}, cache(), env);
  EXPECT_EQ(ok.exit_code, 0) << ok.all();
  s = stats_of("passthrough");
  EXPECT_EQ(s["correctness"]["verdict"], "within_tolerance") << s.dump();
  EXPECT_FALSE(s["correctness"].contains("repeat")) << s.dump();
}

TEST_F(Plugins, UnavailablePluginSaysWhy) {
  const std::vector<std::pair<std::string, std::string>> env = {
      {"TURNKEY_PLUGIN_PATH", (kTestPlugins / "good").string()}, {"TEST_PLUGIN_UNAVAILABLE", "1"}};
  RunResult info = run_turnkey({"system-info"}, cache(), env);
  EXPECT_TRUE(std::regex_search(
      info.out, std::regex(R"(\n  test-plugin\s+.*unavailable: TEST_PLUGIN_UNAVAILABLE is set\n)")))
      << info.out;
  RunResult r = run_turnkey({model("linear").string(), "--runtime", "test-plugin"}, cache(), env);
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_NE(r.out.find("test-plugin: unavailable: TEST_PLUGIN_UNAVAILABLE is set"),
            std::string::npos)
      << r.out;
}

// ---- in-process: what crosses the ABI
// ------------------------------------------------------------

std::vector<HostTensor> inputs_for(const fs::path& model) {
  onnx_model::ModelFacts facts = onnx_model::load_facts(model);
  return onnx_model::generate_inputs(facts, onnx_model::resolve_input_shapes(facts, {}));
}

TEST_F(Plugins, TestPluginReceivesExactlyTheInputsTurnkeyPrepared) {
  const Runtime* plugin = find_runtime("test-plugin");
  ASSERT_NE(plugin, nullptr);
  std::vector<HostTensor> inputs = inputs_for(model("gather"));  // int64
  std::unique_ptr<Session> s = plugin->load(model("gather"), inputs, {});
  s->run();
  std::vector<HostTensor> out = s->outputs();
  ASSERT_EQ(out.size(), inputs.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].name, inputs[i].name);
    EXPECT_EQ(out[i].dtype, inputs[i].dtype);
    EXPECT_EQ(out[i].shape, inputs[i].shape);
    EXPECT_EQ(out[i].data, inputs[i].data);
  }
  RuntimeOptions bad;
  bad.device = "nvidia";
  try {
    plugin->load(model("gather"), inputs, bad);
    FAIL() << "loaded on a device the plugin does not list";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "test-plugin: device 'nvidia' is not supported (devices: x86)");
  }
}

TEST_F(Plugins, OpenCvOutputsMatchOnnxRuntime) {
  const Runtime* cv = find_runtime("opencv-dnn");
  const Runtime* ort = find_runtime("ort");
  ASSERT_NE(cv, nullptr);
  ASSERT_NE(ort, nullptr);
  for (const char* name : {"conv", "linear"}) {
    std::vector<HostTensor> inputs = inputs_for(model(name));
    auto a = cv->load(model(name), inputs, {});
    auto b = ort->load(model(name), inputs, {});
    a->run();
    b->run();
    std::vector<HostTensor> x = a->outputs(), y = b->outputs();
    ASSERT_EQ(x.size(), 1u) << name;
    ASSERT_EQ(y.size(), 1u) << name;
    ASSERT_EQ(x[0].dtype, DType::Float32) << name;
    ASSERT_EQ(x[0].data.size(), y[0].data.size()) << name;
    const float* p = reinterpret_cast<const float*>(x[0].data.data());
    const float* q = reinterpret_cast<const float*>(y[0].data.data());
    double worst = 0, largest = 0;
    for (size_t i = 0; i < x[0].data.size() / sizeof(float); ++i) {
      worst = std::max(worst, static_cast<double>(std::fabs(p[i] - q[i])));
      largest = std::max(largest, static_cast<double>(std::fabs(q[i])));
    }
    EXPECT_GT(largest, 0) << name;  // a test on all-zero outputs could not fail
    EXPECT_LT(worst, 1e-4 * std::max(1.0, largest)) << name;
  }
}

}  // namespace
}  // namespace turnkey::test

int main(int argc, char** argv) {
  // The in-process tests see the example plugin and the good test plugin (the registry loads
  // once per process, so before any test runs).
  const std::string path =
      turnkey::test::kBuildPlugins.string() + ":" + (turnkey::test::kTestPlugins / "good").string();
  setenv("TURNKEY_PLUGIN_PATH", path.c_str(), 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
