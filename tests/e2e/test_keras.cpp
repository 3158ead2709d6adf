// Keras models (issue 29, docs/keras.md) with the real TensorFlow of scripts/setup-keras:
// subclassed, functional and Sequential models discovered, exported by tf2onnx, checked against
// Keras's outputs and benchmarked on ort and on the keras runtime; several models in one script;
// a PyTorch and a Keras model in one script; --max-depth and ::hash filters; the one line for a
// script that imports TensorFlow where it is missing. Tests that need TensorFlow skip, saying
// why, when .deps/keras is absent. The runs are shared by the suite (each costs seconds of
// `import tensorflow`).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "e2e_util.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource = TURNKEY_SOURCE_DIR;
const fs::path kData = kSource / "tests/data/keras";
const fs::path kExample = kSource / "examples/cli/scripts/keras.py";

std::string keras_python() {
  const char* p = std::getenv("TURNKEY_KERAS_PYTHON");
  return p && *p ? p : (kSource / ".deps/keras/bin/python3").string();
}

bool have_keras() { return access(keras_python().c_str(), X_OK) == 0; }

#define REQUIRE_KERAS()                                                                       \
  if (!have_keras()) {                                                                        \
    GTEST_SKIP() << "Keras interpreter " << keras_python()                                    \
                 << " is absent: run scripts/setup-keras (scripts/test does)";              \
  }

// One printed model block: its lines from the name line to the next blank line.
std::string block_of(const std::string& out, const std::string& name) {
  const size_t at = out.find("\t" + name + " (executed");
  if (at == std::string::npos) return "";
  const size_t end = out.find("\n\n", at);
  return out.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string hash_in(const std::string& block) {
  std::smatch m;
  return std::regex_search(block, m, std::regex(R"(Hash:\s*([0-9a-f]{8}))")) ? m[1].str() : "";
}

json stats_of(const fs::path& cache, const std::string& stem) {
  for (const auto& e : fs::directory_iterator(cache)) {
    if (e.path().filename().string().rfind(stem + "_", 0) == 0 &&
        fs::exists(e.path() / "turnkey_stats.yaml")) {
      return json_from_yaml(slurp(e.path() / "turnkey_stats.yaml"));
    }
  }
  return json::object();
}

class Keras : public ::testing::Test {
 protected:
  static TempDir* dir_;
  static std::map<std::string, RunResult>* runs_;

  static void TearDownTestSuite() {
    delete runs_;
    delete dir_;
    runs_ = nullptr;
    dir_ = nullptr;
  }
  static fs::path cache() {
    if (!dir_) dir_ = new TempDir("tk-e2e-keras");
    return dir_->path() / "cache";
  }
  // A run shared by the tests that read it, made on first use.
  static const RunResult& run(const std::string& key, std::vector<std::string> args) {
    if (!runs_) runs_ = new std::map<std::string, RunResult>;
    auto it = runs_->find(key);
    if (it != runs_->end()) return it->second;
    args.insert(args.begin(), {"--python", keras_python()});
    return (*runs_)[key] = run_turnkey(args, cache(), {{"TURNKEY_PYTHON", ""}});
  }
  static const RunResult& ort_run() {
    return run("ort", {(kData / "several.py").string(), (kData / "mixed.py").string(),
                       kExample.string(), "--iterations", "20", "--warmup", "2"});
  }
};
TempDir* Keras::dir_ = nullptr;
std::map<std::string, RunResult>* Keras::runs_ = nullptr;

TEST_F(Keras, TheTutorialsModelIsDiscoveredExportedByTf2onnxAndBenchmarkedWithinTolerance) {
  REQUIRE_KERAS();
  const RunResult& r = ort_run();
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const std::string b = block_of(r.out, "keras_model");
  ASSERT_FALSE(b.empty()) << r.out;
  EXPECT_NE(b.find("Model Type:\tKeras (tf.keras.Model)"), std::string::npos) << b;
  EXPECT_NE(b.find("SmallKerasModel (<class 'keras.SmallKerasModel'>)"), std::string::npos) << b;
  EXPECT_NE(b.find("Parameters:\t55 (<0.1 MB)"), std::string::npos) << b;
  EXPECT_NE(b.find("x: [1, 10] float32"), std::string::npos) << b;
  EXPECT_NE(b.find("Exporter:\ttf2onnx (tensorflow "), std::string::npos) << b;
  EXPECT_NE(b.find("Correctness:\twithin tolerance"), std::string::npos) << b;
  EXPECT_NE(b.find("Mean Latency:"), std::string::npos) << b;
  const json s = stats_of(cache(), "keras");
  EXPECT_EQ(s.value("model_type", ""), "Keras (tf.keras.Model)") << s.dump(1);
  EXPECT_EQ(s.value("exporter", ""), "tf2onnx") << s.dump(1);
  EXPECT_NE(s.value("exporter_version", "").find("tf2onnx 1.17.0"), std::string::npos) << s.dump(1);
  EXPECT_NE(s.value("keras_versions", "").find("keras 3."), std::string::npos) << s.dump(1);
}

TEST_F(Keras, SubclassedFunctionalAndSequentialModelsInOneScriptAreEachBenchmarked) {
  REQUIRE_KERAS();
  const RunResult& r = ort_run();
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const std::string sub = block_of(r.out, "subclassed");
  const std::string fun = block_of(r.out, "functional");
  const std::string seq = block_of(r.out, "sequential");
  ASSERT_FALSE(sub.empty() || fun.empty() || seq.empty()) << r.out;
  // Called twice with one signature: one model, executed 2x.
  EXPECT_NE(sub.find("subclassed (executed 2x)"), std::string::npos) << sub;
  EXPECT_NE(fun.find("Functional"), std::string::npos) << fun;
  EXPECT_NE(fun.find("[1, 4] float32"), std::string::npos) << fun;  // its second input
  EXPECT_NE(seq.find("Parameters:\t138"), std::string::npos) << seq;  // BatchNorm's statistics too
  for (const std::string* b : {&sub, &fun, &seq}) {
    EXPECT_NE(b->find("Correctness:\twithin tolerance"), std::string::npos) << *b;
  }
  // Dropout and BatchNorm ran in inference mode in the reference and in the export alike.
  EXPECT_NE(seq.find("Mean Latency:"), std::string::npos) << seq;
}

TEST_F(Keras, AScriptWithAPyTorchAndAKerasModelListsAndBenchmarksBoth) {
  REQUIRE_KERAS();
  const RunResult& r = ort_run();
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const std::string t = block_of(r.out, "torch_model");
  const std::string k = block_of(r.out, "keras_model\t");  // not the tutorial's keras_model
  ASSERT_FALSE(t.empty()) << r.out;
  EXPECT_NE(t.find("Model Type:\tPytorch (torch.nn.Module)"), std::string::npos) << t;
  EXPECT_NE(t.find("Correctness:\twithin tolerance"), std::string::npos) << t;
  const json ts = stats_of(cache(), "mixed");
  EXPECT_FALSE(ts.empty());
  // Both models of mixed.py have builds: one PyTorch (torch's exporter), one Keras (tf2onnx).
  std::vector<std::string> exporters;
  for (const auto& e : fs::directory_iterator(cache())) {
    if (e.path().filename().string().rfind("mixed_", 0) != 0) continue;
    exporters.push_back(json_from_yaml(slurp(e.path() / "turnkey_stats.yaml")).value("exporter", ""));
  }
  std::sort(exporters.begin(), exporters.end());
  ASSERT_EQ(exporters.size(), 2u) << r.out;
  EXPECT_EQ(exporters[1], "tf2onnx");
  EXPECT_NE(exporters[0], "tf2onnx");
  (void)k;
}

TEST_F(Keras, TheKerasRuntimeTimesTheModelsOwnCallAndRefusesAPyTorchModelInOneLine) {
  REQUIRE_KERAS();
  const RunResult& r = run("keras", {(kData / "mixed.py").string(), "--runtime", "keras",
                                     "--iterations", "20", "--warmup", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.all();  // the PyTorch model fails; the Keras model runs
  const std::string k = block_of(r.out, "keras_model");
  EXPECT_NE(k.find("Keras eager (TensorFlow)"), std::string::npos) << r.out;
  EXPECT_NE(k.find("Correctness:\twithin tolerance"), std::string::npos) << k;
  EXPECT_NE(k.find("Mean Latency:"), std::string::npos) << k;
  const std::string t = block_of(r.out, "torch_model");
  EXPECT_NE(t.find("the keras runtime runs Keras models; torch_model is a PyTorch model"),
            std::string::npos)
      << t;
}

TEST_F(Keras, MaxDepthListsTheLayersAndAHashFilterSelectsOneModel) {
  REQUIRE_KERAS();
  const RunResult& deep =
      run("depth", {kExample.string(), "--analyze-only", "--max-depth", "1"});
  ASSERT_EQ(deep.exit_code, 0) << deep.all();
  const std::string dense = block_of(deep.out, "dense");
  EXPECT_NE(dense.find("Keras (tf.keras.layers.Layer)"), std::string::npos) << deep.out;
  EXPECT_NE(dense.find("Parameters:\t55"), std::string::npos) << dense;
  // The top-level model hashes the same in every run (keras.utils.set_random_seed).
  const std::string hash = hash_in(block_of(deep.out, "keras_model"));
  ASSERT_EQ(hash.size(), 8u) << deep.out;
  const RunResult& again = run("hash", {(kData / "several.py").string() + "::" +
                                            hash_in(block_of(ort_run().out, "functional")),
                                        "--analyze-only"});
  ASSERT_EQ(again.exit_code, 0) << again.all();
  EXPECT_FALSE(block_of(again.out, "functional").empty()) << again.out;
  EXPECT_TRUE(block_of(again.out, "subclassed").empty()) << again.out;
  EXPECT_EQ(hash, hash_in(block_of(ort_run().out, "keras_model"))) << ort_run().out;
}

// Needs no TensorFlow: Debian's interpreter has none.
TEST(KerasMissing, AScriptImportingTensorflowWhereItIsMissingGetsOneLineNamingWhatToInstall) {
  TempDir dir("tk-e2e-keras-missing");
  RunResult r = run_turnkey({"--python", "/usr/bin/python3", (kData / "no_model.py").string()},
                            dir.path() / "cache", {{"TURNKEY_PYTHON", ""}});
  EXPECT_EQ(r.exit_code, 1) << r.all();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.all(), m, std::regex(R"(no_model\.py[^\n]*imports tensorflow)")))
      << r.all();
  const std::string all = r.all();
  EXPECT_NE(all.find("scripts/setup-keras"), std::string::npos) << all;
  EXPECT_NE(all.find("--python .deps/keras/bin/python3"), std::string::npos) << all;
}

}  // namespace
}  // namespace turnkey::test
