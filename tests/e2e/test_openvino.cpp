// End-to-end: the openvino runtime (issue 30) through the built binary, on real OpenVINO (the
// wheel scripts/setup-openvino installs) and small models (made by the tests, the ONNX backend
// tests' node models with their expected outputs, the README's sample and hello_world script):
// results with the compiled model's facts (hint, streams, precision), the correctness verdict
// (within tolerance at f32, outside at bf16), requests in flight on OpenVINO's own streams,
// --profile from its per-layer counters, dynamic dims fixed to the benchmarked shapes, and the one
// line a user gets where OpenVINO cannot be loaded. Without OpenVINO the tests that need it skip,
// saying so; the unavailable path runs either way.
#include <gtest/gtest.h>

#include <regex>

#include "e2e_util.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr bool kBuiltWithOpenVino = TURNKEY_TEST_HAVE_OPENVINO;
const fs::path kNode = fs::path(TURNKEY_ONNX_TESTDATA) / "node";
const fs::path kSample = fs::path(TURNKEY_SOURCE_DIR) / "examples/cli/onnx";

class OpenVino : public ::testing::Test {
 protected:
  TempDir dir{"tk-e2e-openvino"};
  fs::path cache() const { return dir.path() / "cache"; }

  void SetUp() override {
    if (!kBuiltWithOpenVino) {
      GTEST_SKIP() << "OpenVINO is not installed: run scripts/setup-openvino (scripts/test does)";
    }
  }

  // The stats of the one build in the cache whose name starts with `stem`.
  json stats_of(const std::string& stem) const {
    for (const auto& e : fs::directory_iterator(cache())) {
      if (e.path().filename().string().rfind(stem + "_", 0) == 0) {
        return json_from_yaml(slurp(e.path() / "turnkey_stats.yaml"));
      }
    }
    ADD_FAILURE() << "no build for " << stem;
    return json::object();
  }
};

// An ONNX backend test's Conv with its expected outputs (--input-data) as the reference.
TEST_F(OpenVino, ConvResultHasLatencyLoadTimeMemoryHintAndCorrectness) {
  const fs::path test = kNode / "test_conv_with_strides_padding";
  RunResult r = run_turnkey(
      {(test / "model.onnx").string(), "--input-data", (test / "test_data_set_0").string(),
       "--runtime", "openvino", "--iterations", "30"},
      cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("Correctness:    within tolerance"), std::string::npos) << r.out;
  const json s = stats_of("model");
  EXPECT_EQ(s["runtime"], "openvino");
  EXPECT_EQ(s["runtime_name"], "OpenVINO");
  EXPECT_TRUE(std::regex_match(s["runtime_version"].get<std::string>(),
                               std::regex("20[0-9][0-9]\\.[0-9]+\\.[0-9]+-[0-9]+")))
      << s["runtime_version"];
  EXPECT_EQ(s["iterations"], 30);
  EXPECT_GT(s["median_latency_ms"].get<double>(), 0);
  EXPECT_LE(s["min_latency_ms"].get<double>(), s["median_latency_ms"].get<double>());
  // load_s is the read plus the compile (and the request's set-up), each recorded alone.
  const double parts = s["openvino_read_s"].get<double>() + s["openvino_compile_s"].get<double>();
  EXPECT_GT(s["openvino_compile_s"].get<double>(), 0);
  EXPECT_LE(parts, s["load_s"].get<double>());
  EXPECT_EQ(s["correctness"]["verdict"], "within_tolerance");
  EXPECT_EQ(s["openvino_hint"], "LATENCY");
  EXPECT_EQ(s["openvino_precision"], "f32");
  EXPECT_EQ(s["openvino_reshaped"], false);
  EXPECT_EQ(s["openvino_streams"], 1);
  EXPECT_TRUE(s.contains("model_memory_run_bytes")) << s.dump();
}

// A script's model: exported, run on OpenVINO, held to PyTorch's outputs.
TEST_F(OpenVino, HelloWorldScriptIsWithinToleranceOfPyTorch) {
  const fs::path script = fs::path(TURNKEY_SOURCE_DIR) / "examples/cli/scripts/hello_world.py";
  RunResult r =
      run_turnkey({script.string(), "--runtime", "openvino", "--iterations", "20"}, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("Successfully benchmarked on"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(openvino v20"), std::string::npos) << r.out;
  const json s = stats_of("hello_world");
  EXPECT_EQ(s["correctness"]["verdict"], "within_tolerance") << s["correctness"].dump();
  EXPECT_LT(s["max_abs_error"].get<double>(), 1e-4);
}

// Integer inputs (Gather's int64 indices) keep their element type and values.
TEST_F(OpenVino, Int64InputsAreFedAsTheyAre) {
  const fs::path test = kNode / "test_gather_0";
  RunResult r = run_turnkey(
      {(test / "model.onnx").string(), "--input-data", (test / "test_data_set_0").string(),
       "--runtime", "openvino", "--iterations", "10"},
      cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(stats_of("model")["correctness"]["verdict"], "within_tolerance") << r.out;
}

// The sample's batch dim is symbolic: fixed to the benchmarked shape before compiling
// (benchmark_app -shape), or kept dynamic with reshape=false; both match the sample's expected
// outputs at f32, and bf16 (OpenVINO's own default on this CPU) does not.
TEST_F(OpenVino, DynamicDimsAreFixedOrKeptAndPrecisionIsChecked) {
  const std::vector<std::string> base = {(kSample / "sample.onnx").string(),
                                         "--input-data",
                                         (kSample / "sample_inputs.npz").string(),
                                         "--runtime",
                                         "openvino",
                                         "--iterations",
                                         "10"};
  RunResult r = run_turnkey(base, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  json s = stats_of("sample");
  EXPECT_EQ(s["openvino_reshaped"], true);
  EXPECT_EQ(s["correctness"]["verdict"], "within_tolerance");

  std::vector<std::string> kept = base;
  kept.insert(kept.end(), {"--rt-args", "reshape=false"});
  r = run_turnkey(kept, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  s = stats_of("sample");
  EXPECT_EQ(s["openvino_reshaped"], false);
  EXPECT_EQ(s["correctness"]["verdict"], "within_tolerance");

  std::vector<std::string> bf16 = base;
  bf16.insert(bf16.end(), {"--rt-args", "precision=bf16"});
  r = run_turnkey(bf16, cache());
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_NE(r.out.find("openvino outputs differ from --input-data's: outside tolerance"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(stats_of("sample")["openvino_precision"], "bf16");
}

// --concurrency: OpenVINO's THROUGHPUT hint, one infer request per caller on its streams, and a
// sustained throughput; the outputs match the expected ones.
TEST_F(OpenVino, RequestsInFlightUseTheThroughputHintAndInferRequestsOfTheirOwn) {
  const fs::path test = kNode / "test_conv_with_strides_padding";
  RunResult r = run_turnkey(
      {(test / "model.onnx").string(), "--input-data", (test / "test_data_set_0").string(),
       "--runtime", "openvino", "--concurrency", "2", "--duration", "1"},
      cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const json s = stats_of("model");
  EXPECT_EQ(s["concurrency"], 2);
  EXPECT_EQ(s["sessions"], 1);  // one compiled model, the callers' requests on it
  EXPECT_EQ(s["openvino_hint"], "THROUGHPUT");
  EXPECT_GE(s["openvino_streams"].get<int>(), 1);
  EXPECT_LE(s["openvino_streams"].get<int>(), 2);  // hint::num_requests caps the streams
  EXPECT_GT(s["throughput_ips"].get<double>(), 0);
  EXPECT_EQ(s["correctness"]["verdict"], "within_tolerance");
}

TEST_F(OpenVino, ProfileComesFromItsPerLayerCounters) {
  const fs::path model = dir / "conv.onnx";
  small_conv_net(model);
  RunResult r = run_turnkey(
      {model.string(), "--runtime", "openvino", "--profile", "--iterations", "5"}, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("[0-9]+ profiled calls after a warm-up call \\(OpenVINO per-layer "
                        "counters\\): node time [0-9.]+ ms per call")))
      << r.out;
  const json s = stats_of("conv");
  const json& p = s["profile"];
  ASSERT_FALSE(p.contains("error")) << p.dump();
  EXPECT_EQ(p["profiler"], "OpenVINO per-layer counters");
  EXPECT_GE(p["calls"].get<int>(), 10);
  double shares = 0;
  bool convolution = false;
  for (const json& row : p["by_op_type"]) {
    shares += row["share"].get<double>();
    convolution = convolution || row["op_type"] == "Convolution";
  }
  EXPECT_TRUE(convolution) << p["by_op_type"].dump();
  EXPECT_GT(shares, 0.5);
  EXPECT_LE(shares, 1.0 + 1e-9);
  // The raw counters are kept beside the stats, one entry per executed layer.
  fs::path raw;
  for (const auto& e : fs::directory_iterator(cache())) {
    if (fs::exists(e.path() / p["raw_file"].get<std::string>())) {
      raw = e.path() / p["raw_file"].get<std::string>();
    }
  }
  ASSERT_FALSE(raw.empty()) << p.dump();
  const json counters = json::parse(slurp(raw));
  EXPECT_EQ(counters["calls"], p["calls"]);
  EXPECT_FALSE(counters["nodes"].empty());
}

TEST_F(OpenVino, AnUnknownRuntimeArgumentIsOneLineAndTheRunGoesOn) {
  const fs::path model = dir / "conv.onnx";
  small_conv_net(model);
  RunResult r = run_turnkey(
      {model.string(), "--runtime", "openvino", "--iterations", "5", "--rt-args", "hint=fastest"},
      cache());
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_NE(r.all().find("openvino: hint=fastest is not latency or throughput"), std::string::npos)
      << r.all();
  EXPECT_FALSE(looks_like_crash(r)) << r.all();
}

// Where OpenVINO cannot be loaded (here: a module that is no library, found first next to a
// copy of the binary; or a build without OpenVINO), --runtime openvino fails in one line naming
// the set-up script, system-info says why, and ort runs as before.
TEST(OpenVinoUnavailable, OneLineNamingTheSetUpScriptAndOtherRuntimesRun) {
  TempDir dir{"tk-e2e-openvino-missing"};
  const fs::path bin = dir / "bin";
  fs::create_directories(bin / "runtimes");
  fs::copy_file(turnkey_binary(), bin / "turnkey");
  fs::permissions(bin / "turnkey", fs::perms::owner_all, fs::perm_options::add);
  {
    std::ofstream fake(bin / "runtimes" / "turnkey_openvino.so");
    fake << "not a library\n";
  }
  const fs::path model = dir / "conv.onnx";
  small_conv_net(model);
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), (bin / "turnkey").string());
    return run_command(args, {{"TURNKEY_CACHE_DIR", (dir / "cache").string()},
                              {"TURNKEY_BUILD_MONITOR", "False"}});
  };
  RunResult r = run({model.string(), "--runtime", "openvino", "--iterations", "5"});
  EXPECT_NE(r.exit_code, 0) << r.all();
  EXPECT_FALSE(looks_like_crash(r)) << r.all();
  const std::regex reason(kBuiltWithOpenVino
                              ? "openvino: unavailable: its module [^\n]*turnkey_openvino.so "
                                "cannot be loaded: [^\n]*\\(scripts/setup-openvino installs "
                                "OpenVINO\\)\n"
                              : "openvino: unavailable: turnkey was built without OpenVINO \\(run "
                                "scripts/setup-openvino, then rebuild\\)\n");
  EXPECT_TRUE(std::regex_search(r.all(), reason)) << r.all();

  RunResult info = run({"system-info"});
  ASSERT_EQ(info.exit_code, 0) << info.all();
  EXPECT_TRUE(
      std::regex_search(info.out, std::regex("openvino +[^\n]*(cannot be loaded|not built)")))
      << info.out;

  RunResult ort = run({model.string(), "--iterations", "5"});
  EXPECT_EQ(ort.exit_code, 0) << ort.all();
}

}  // namespace
}  // namespace turnkey::test
