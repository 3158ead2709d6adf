// Keras models (issue 29, docs/keras.md) with the real TensorFlow of scripts/setup-keras:
// subclassed, functional and Sequential models discovered, exported by tf2onnx, checked against
// Keras's outputs and benchmarked on ort and on the keras runtime; several models in one script;
// a PyTorch and a Keras model in one script; --max-depth and ::hash filters; the one line for a
// script that imports TensorFlow where it is missing. Tests that need TensorFlow skip, saying
// why, when .deps/keras is absent. The runs are shared by the suite (each costs seconds of
// `import tensorflow`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <sstream>
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

#define REQUIRE_KERAS()                                                        \
  if (!have_keras()) {                                                         \
    GTEST_SKIP() << "Keras interpreter " << keras_python()                     \
                 << " is absent: run scripts/setup-keras (scripts/test does)"; \
  }

// One printed model block of `script`'s section ("keras.py:" up to the next unindented line):
// its lines from the model's name line to the next blank line; "" when there is none.
std::string block_of(const std::string& out, const std::string& script, const std::string& name) {
  const size_t section = out.find("\n" + script + ":\n");
  if (section == std::string::npos) return "";
  size_t section_end = section + 1;
  do {
    section_end = out.find('\n', section_end + 1);
  } while (section_end != std::string::npos && section_end + 1 < out.size() &&
           std::isspace(static_cast<unsigned char>(out[section_end + 1])));
  const size_t at = out.find(" " + name + " (executed", section);
  if (at == std::string::npos || (section_end != std::string::npos && at > section_end)) return "";
  const size_t end = out.find("\n\n", at);
  return out.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// Whether `block` has a line "LABEL:" whose value (after the padding) starts with `value`.
bool has(const std::string& block, const std::string& label, const std::string& value) {
  std::istringstream lines(block);
  for (std::string line; std::getline(lines, line);) {
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line.compare(start, label.size() + 1, label + ":") != 0) {
      continue;
    }
    const size_t v = line.find_first_not_of(" \t", start + label.size() + 1);
    if (v != std::string::npos && line.compare(v, value.size(), value) == 0) return true;
  }
  return false;
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
  const std::string b = block_of(r.out, "keras.py", "keras_model");
  ASSERT_FALSE(b.empty()) << r.out;
  EXPECT_TRUE(has(b, "Model Type", "Keras (tf.keras.Model)")) << b;
  EXPECT_TRUE(has(b, "Class", "SmallKerasModel (<class 'keras.SmallKerasModel'>)")) << b;
  EXPECT_TRUE(has(b, "Parameters", "55 (")) << b;
  EXPECT_TRUE(has(b, "Input Shape", "'x': (1, 10)")) << b;
  EXPECT_TRUE(has(b, "Exporter", "tf2onnx (tensorflow ")) << b;
  EXPECT_TRUE(has(b, "Correctness", "within tolerance")) << b;
  EXPECT_TRUE(has(b, "Mean Latency", "")) << b;
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
  const std::string sub = block_of(r.out, "several.py", "subclassed");
  const std::string fun = block_of(r.out, "several.py", "functional");
  const std::string seq = block_of(r.out, "several.py", "sequential");
  ASSERT_FALSE(sub.empty() || fun.empty() || seq.empty()) << r.out;
  // Called twice with one signature: one model, executed 2x.
  EXPECT_NE(sub.find("subclassed (executed 2x"), std::string::npos) << sub;
  EXPECT_TRUE(has(fun, "Class", "Functional")) << fun;
  EXPECT_NE(fun.find("(1, 4)"), std::string::npos) << fun;  // its second input
  EXPECT_TRUE(has(seq, "Parameters", "138 (")) << seq;      // BatchNorm's statistics too
  // Dropout and BatchNorm in inference mode in the reference and in the export alike.
  for (const std::string* b : {&sub, &fun, &seq}) {
    EXPECT_TRUE(has(*b, "Correctness", "within tolerance")) << *b;
    EXPECT_TRUE(has(*b, "Mean Latency", "")) << *b;
  }
}

TEST_F(Keras, AScriptWithAPyTorchAndAKerasModelListsAndBenchmarksBoth) {
  REQUIRE_KERAS();
  const RunResult& r = ort_run();
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const std::string t = block_of(r.out, "mixed.py", "torch_model");
  const std::string k = block_of(r.out, "mixed.py", "keras_model");
  ASSERT_FALSE(t.empty() || k.empty()) << r.out;
  EXPECT_TRUE(has(t, "Model Type", "Pytorch (torch.nn.Module)")) << t;
  EXPECT_TRUE(has(k, "Model Type", "Keras (tf.keras.Model)")) << k;
  for (const std::string* b : {&t, &k}) {
    EXPECT_TRUE(has(*b, "Correctness", "within tolerance")) << *b;
  }
  EXPECT_TRUE(has(k, "Exporter", "tf2onnx")) << k;
  // torch's dynamo exporter would abort a process that has loaded TensorFlow: TorchScript's.
  EXPECT_TRUE(has(t, "Exporter", "torchscript")) << t;
  EXPECT_NE(t.find("dynamo exporter skipped"), std::string::npos) << t;
}

TEST_F(Keras, TheKerasRuntimeTimesTheModelsOwnCallAndRefusesAPyTorchModelInOneLine) {
  REQUIRE_KERAS();
  const RunResult& r = run("keras", {(kData / "mixed.py").string(), "--runtime", "keras",
                                     "--iterations", "20", "--warmup", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.all();  // the PyTorch model fails; the Keras model runs
  const std::string k = block_of(r.out, "mixed.py", "keras_model");
  EXPECT_NE(k.find("(keras v3."), std::string::npos) << r.out;  // Keras 3.x on TensorFlow
  EXPECT_TRUE(has(k, "Correctness", "within tolerance")) << k;
  EXPECT_TRUE(has(k, "Mean Latency", "")) << k;
  const std::string t = block_of(r.out, "mixed.py", "torch_model");
  EXPECT_NE(t.find("the keras runtime runs Keras models; torch_model is a PyTorch model"),
            std::string::npos)
      << t;
}

TEST_F(Keras, MaxDepthListsTheLayersAndAHashFilterSelectsOneModel) {
  REQUIRE_KERAS();
  const RunResult& deep = run("depth", {kExample.string(), "--analyze-only", "--max-depth", "1"});
  ASSERT_EQ(deep.exit_code, 0) << deep.all();
  const std::string dense = block_of(deep.out, "keras.py", "dense");
  EXPECT_TRUE(has(dense, "Model Type", "Keras (tf.keras.layers.Layer)")) << deep.out;
  EXPECT_TRUE(has(dense, "Parameters", "55 (")) << dense;
  // The model hashes the same in every run (keras.utils.set_random_seed).
  const std::string hash = hash_in(block_of(deep.out, "keras.py", "keras_model"));
  ASSERT_EQ(hash.size(), 8u) << deep.out;
  EXPECT_EQ(hash, hash_in(block_of(ort_run().out, "keras.py", "keras_model"))) << ort_run().out;
  const std::string functional = hash_in(block_of(ort_run().out, "several.py", "functional"));
  ASSERT_EQ(functional.size(), 8u) << ort_run().out;
  const RunResult& one =
      run("hash", {(kData / "several.py").string() + "::" + functional, "--build-only"});
  ASSERT_EQ(one.exit_code, 0) << one.all();
  // Every model is listed, only the one with that hash is built.
  const std::string chosen = block_of(one.out, "several.py", "functional");
  const std::string other = block_of(one.out, "several.py", "subclassed");
  ASSERT_FALSE(chosen.empty() || other.empty()) << one.out;
  EXPECT_TRUE(has(chosen, "Build dir", "")) << chosen;
  EXPECT_FALSE(has(other, "Build dir", "")) << other;
}

// tf2onnx 1.17 as it comes needs ~75 times a model's weights to convert it (InceptionV3's 96 MB:
// 7.3 GB): `wide` (134 MB) would need ~10 GB; under a 3 GB data limit it converts
// (keras_tf2onnx.py). `constant`'s softmax is the same for every input, as the MobileNets' with
// random weights: the verdict rests on the classifier's input, read from the ONNX graph.
TEST_F(Keras, AWideModelConvertsInBoundedMemoryAndAConstantSoftmaxIsCheckedOnItsInput) {
  REQUIRE_KERAS();
  const RunResult& r =
      run("bounded", {(kData / "wide_and_constant.py").string(), "--process-isolation",
                      "--memory-limit", "3G", "--iterations", "5", "--warmup", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  const std::string wide = block_of(r.out, "wide_and_constant.py", "wide");
  ASSERT_FALSE(wide.empty()) << r.out;
  EXPECT_TRUE(has(wide, "Parameters", "33597456 (")) << wide;
  EXPECT_TRUE(has(wide, "Correctness", "within tolerance: ")) << wide;
  EXPECT_TRUE(has(wide, "Mean Latency", "")) << wide;
  const std::string constant = block_of(r.out, "wide_and_constant.py", "constant");
  ASSERT_FALSE(constant.empty()) << r.out;
  EXPECT_TRUE(has(constant, "Correctness", "within tolerance on intermediate tensors")) << constant;
  EXPECT_NE(constant.find("the input of 'classifier' (ONNX value '"), std::string::npos)
      << constant;
}

// Needs no TensorFlow: Debian's interpreter has none.
TEST(KerasMissing, AScriptImportingTensorflowWhereItIsMissingGetsOneLineNamingWhatToInstall) {
  TempDir dir("tk-e2e-keras-missing");
  RunResult r = run_turnkey({"--python", "/usr/bin/python3", (kData / "no_model.py").string()},
                            dir.path() / "cache", {{"TURNKEY_PYTHON", ""}});
  EXPECT_EQ(r.exit_code, 1) << r.all();
  const size_t section = r.out.find("no_model.py:\n");
  ASSERT_NE(section, std::string::npos) << r.all();
  const size_t at = r.out.find("Script failed: ", section);
  ASSERT_NE(at, std::string::npos) << r.all();
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_EQ(line,
            "Script failed: the script imports tensorflow, which /usr/bin/python3 cannot import: "
            "scripts/setup-keras installs TensorFlow and Keras into .deps/keras; run with "
            "--python .deps/keras/bin/python3");
}

}  // namespace
}  // namespace turnkey::test
