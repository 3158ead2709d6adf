// The bundled model corpora (models/): every script follows the template (labels line naming
// its corpus and itself, a docstring, parse()), the selftest corpus is benchmarked end to end
// and runs without turnkey, and the torchvision corpus matches its generator.
//
// One ctest test for the program: the selftest run is shared by the tests that look at it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "e2e_util.h"
#include "support/temp_dir.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;

const fs::path kModels = fs::path(TURNKEY_SOURCE_DIR) / "models";
const fs::path kPythonDir = fs::path(TURNKEY_SOURCE_DIR) / "python";

std::string torch_python() {
  const char* env = std::getenv("TURNKEY_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

std::vector<fs::path> scripts_of(const fs::path& folder) {
  std::vector<fs::path> scripts;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.path().extension() == ".py") scripts.push_back(entry.path());
  }
  std::sort(scripts.begin(), scripts.end());
  return scripts;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

TEST(ModelCorpora, EveryScriptFollowsTheTemplate) {
  const std::set<std::string> corpora = {"selftest", "torchvision", "transformers_like",
                                         "graph_convolutions"};
  std::map<std::string, size_t> counts;
  for (const auto& corpus : corpora) {
    for (const auto& script : scripts_of(kModels / corpus)) {
      SCOPED_TRACE(script.string());
      const std::string text = slurp(script);
      const std::string labels = first_line(text) + " ";
      EXPECT_EQ(labels.rfind("# labels: ", 0), 0u);
      EXPECT_NE(labels.find(" test_group::" + corpus + " "), std::string::npos);
      EXPECT_NE(labels.find(" name::" + script.stem().string() + " "), std::string::npos);
      for (const char* key : {" author::", " task::", " license::"}) {
        EXPECT_NE(labels.find(key), std::string::npos) << key;
      }
      EXPECT_EQ(text.find("\"\"\"\n"), first_line(text).size() + 1) << "docstring on line 2";
      EXPECT_NE(text.find("from turnkeyml.parser import parse"), std::string::npos);
      EXPECT_NE(text.find("torch.manual_seed(0)"), std::string::npos);
      ++counts[corpus];
    }
  }
  EXPECT_EQ(counts["selftest"], 6u);
  EXPECT_GE(counts["torchvision"], 100u);  // exactly: TorchvisionCorpus.ScriptsMatchTheirGenerator
  EXPECT_GE(counts["transformers_like"], 10u);
  EXPECT_GE(counts["graph_convolutions"], 2u);
}

struct SelftestRun {
  TempDir dir{"tk-e2e-corpus"};
  RunResult result;
  SelftestRun() {
    std::vector<std::string> args;
    for (const auto& s : scripts_of(kModels / "selftest")) args.push_back(s.string());
    for (const char* a : {"--iterations", "5", "--warmup", "1"}) args.push_back(a);
    result = run_turnkey(args, dir.path() / "cache");
  }
};

const SelftestRun& selftest_run() {
  static SelftestRun run;
  return run;
}

TEST(SelftestCorpus, EveryModelIsExportedAndBenchmarked) {
  const auto& run = selftest_run();
  ASSERT_EQ(run.result.exit_code, 0) << run.result.all();
  for (const auto& script : scripts_of(kModels / "selftest")) {
    SCOPED_TRACE(script.string());
    int builds = 0;
    for (const auto& entry : fs::directory_iterator(run.dir.path() / "cache")) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(script.stem().string() + "_", 0) != 0) continue;
      const std::string state = slurp(entry.path() / (name + "_state.yaml"));
      // Stems like two_inputs share a prefix with no other script, so this is its build.
      EXPECT_NE(state.find("build_status: \"successful\""), std::string::npos) << state;
      EXPECT_TRUE(fs::exists(entry.path() / "turnkey_stats.yaml"));
      ++builds;
    }
    EXPECT_EQ(builds, 1);
  }
  EXPECT_EQ(count_occurrences(run.result.out, "Successfully benchmarked"), 6) << run.result.out;
  // The shapes and dtypes the scripts call their models with.
  for (const char* shape : {"'input_ids': (1, 128) int64", "'a': (1, 16), 'b': (1, 24)",
                            "'images': (1, 3, 32, 32)"}) {
    EXPECT_NE(run.result.out.find(shape), std::string::npos) << shape;
  }
}

TEST(SelftestCorpus, LabelsSelectTheCorpus) {
  TempDir dir("tk-e2e-corpus-labels");
  std::vector<std::string> args;
  for (const auto& s : scripts_of(kModels / "selftest")) args.push_back(s.string());
  args.push_back(scripts_of(kModels / "graph_convolutions").front().string());
  for (const char* a : {"--analyze-only", "--labels", "test_group::selftest"}) args.push_back(a);
  RunResult r = run_turnkey(args, dir.path() / "cache");
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(count_occurrences(r.out, "Model Type:"), 6) << r.out;
  EXPECT_EQ(r.out.find("graph_convolutions"), std::string::npos) << r.out;
}

TEST(SelftestCorpus, ScriptsRunWithoutTurnkeyAndTakeScriptArgs) {
  for (const auto& script : scripts_of(kModels / "selftest")) {
    SCOPED_TRACE(script.string());
    RunResult r = run_command({torch_python(), script.string(), "--batch_size", "3"},
                              {{"PYTHONPATH", kPythonDir.string()}}, {}, 120);
    EXPECT_EQ(r.exit_code, 0) << r.all();
    EXPECT_NE(r.out.find("(3, "), std::string::npos) << r.out;
  }
}

TEST(TorchvisionCorpus, ScriptsMatchTheirGenerator) {
  RunResult r = run_command(
      {torch_python(), (kModels / "torchvision" / "generate").string(), "--check"}, {}, {}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("106 scripts, 0 missing or stale"), std::string::npos) << r.all();
}

}  // namespace
}  // namespace turnkey::test
