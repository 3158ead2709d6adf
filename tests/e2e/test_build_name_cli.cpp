// The CLI hooks of the Python API (docs/python_api.md): `--build-name` for scripts and ONNX
// files, and the checks on `--build-name` / `--attach` misuse. The API itself is tested from
// Python (tests/python/test_api.py).
#include <gtest/gtest.h>

#include <fstream>

#include "e2e_util.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class BuildNameCli : public ::testing::Test {
 protected:
  TempDir dir{"tk-e2e-build-name"};
  fs::path cache() const { return dir.path() / "cache"; }
};

TEST_F(BuildNameCli, OnnxFileLandsUnderTheGivenName) {
  linear_relu(dir / "linear.onnx");
  RunResult r = run_turnkey(
      {(dir / "linear.onnx").string(), "--build-name", "my_onnx", "--iterations", "3"}, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  json state = json_from_yaml(slurp(cache() / "my_onnx" / "my_onnx_state.yaml"));
  EXPECT_EQ(state["build_name"], "my_onnx");
  EXPECT_EQ(state["build_status"], "successful");
  json stats = json_from_yaml(slurp(cache() / "my_onnx" / "turnkey_stats.yaml"));
  EXPECT_EQ(stats["iterations"], 3);
  // Nothing under the default name.
  for (const auto& e : fs::directory_iterator(cache())) {
    EXPECT_NE(e.path().filename().string().rfind("linear_", 0), 0u) << e.path();
  }
}

TEST_F(BuildNameCli, ScriptWithTwoModelsBuildsOnlyTheFirstUnderTheName) {
  const fs::path script = fs::path(TURNKEY_SOURCE_DIR) / "examples/cli/scripts/two_models.py";
  RunResult r = run_turnkey({script.string(), "--build-name", "only_one", "--build-only"}, cache());
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_NE(r.out.find("Not built: --build-name only_one names one build and two_models.py has "
                       "more models (select one with two_models.py::HASH)"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::exists(cache() / "only_one" / "only_one_state.yaml"));
  int dirs = 0;
  for (const auto& e : fs::directory_iterator(cache())) {
    // inputs/ holds the run's records (inputs/runs/<run>.yaml, docs/cache.md), not a build.
    dirs += e.is_directory() && e.path().filename() != "inputs" ? 1 : 0;
  }
  EXPECT_EQ(dirs, 1);  // the second model did not overwrite or add a build
}

TEST_F(BuildNameCli, MisuseIsAUsageErrorOrAnInputError) {
  linear_relu(dir / "a.onnx");
  linear_relu(dir / "b.onnx");
  RunResult two = run_turnkey(
      {(dir / "a.onnx").string(), (dir / "b.onnx").string(), "--build-name", "same"}, cache());
  EXPECT_EQ(two.exit_code, 2) << two.all();
  EXPECT_EQ(two.err, "turnkey: error: --build-name names one build: give one input, not 2\n");

  RunResult escape = run_turnkey({(dir / "a.onnx").string(), "--build-name", "../x"}, cache());
  EXPECT_EQ(escape.exit_code, 2) << escape.all();
  EXPECT_EQ(escape.err, "turnkey: error: --build-name '../x': not a usable directory name\n");

  fs::path script = dir / "s.py";
  write_bytes(script, "print('never runs')\n");
  // Checked with the other option values when the command line is read (issue 15).
  RunResult attach = run_turnkey({script.string(), "--attach", "97,98"}, cache());
  EXPECT_EQ(attach.exit_code, 2) << attach.all();
  EXPECT_NE(attach.err.find("--attach 97,98: expected two open descriptors E,C"), std::string::npos)
      << attach.err;
  EXPECT_EQ(attach.out.find("never runs"), std::string::npos) << attach.out;
}

// The API prepends its binary's own libraries (TURNKEY_BIN_LIBRARY_PATH, torch 2 root) and says
// what LD_LIBRARY_PATH was: turnkey puts that back, so the script's Python never sees the path.
TEST_F(BuildNameCli, TheCallersLibraryPathIsRestoredForTheScript) {
  const fs::path script = dir / "show_path.py";
  std::ofstream(script) << "import os\nprint('LDPATH=' + os.environ.get('LD_LIBRARY_PATH', '<unset>'))\n"
                           "print('MARK=' + os.environ.get('TURNKEY_LD_LIBRARY_PATH_BEFORE', '<unset>'))\n";
  const fs::path libs = dir / "bin_libs";
  fs::create_directories(libs);
  // run_turnkey treats "" as "unset": an empty TURNKEY_LD_LIBRARY_PATH_BEFORE goes through env(1).
  RunResult unset = run_command(
      {"/usr/bin/env", "TURNKEY_LD_LIBRARY_PATH_BEFORE=", "LD_LIBRARY_PATH=" + libs.string(),
       turnkey_binary(), script.string(), "--analyze-only"},
      {{"TURNKEY_CACHE_DIR", cache().string()}, {"TURNKEY_BUILD_MONITOR", "False"}});
  ASSERT_EQ(unset.exit_code, 0) << unset.all();
  EXPECT_NE(unset.out.find("LDPATH=<unset>"), std::string::npos) << unset.out;
  EXPECT_NE(unset.out.find("MARK=<unset>"), std::string::npos) << unset.out;
  RunResult kept = run_turnkey({script.string(), "--analyze-only"}, cache(),
                               {{"LD_LIBRARY_PATH", libs.string() + ":/callers/own"},
                                {"TURNKEY_LD_LIBRARY_PATH_BEFORE", "/callers/own"}});
  ASSERT_EQ(kept.exit_code, 0) << kept.all();
  EXPECT_NE(kept.out.find("LDPATH=/callers/own\n"), std::string::npos) << kept.out;
}

}  // namespace
}  // namespace turnkey::test
