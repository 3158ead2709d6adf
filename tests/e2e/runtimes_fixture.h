// The fixture of the runtime end-to-end tests (test_runtimes.cpp, test_runtime_verdicts.cpp): a
// cache of its own per test, the stats of a build by script or by model variable, and the check
// the exporter fixes' tests share.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "e2e_util.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

namespace turnkey::test {

class Runtimes : public ::testing::Test {
 protected:
  TempDir dir{"tk-e2e-runtimes"};
  std::filesystem::path cache() const { return dir.path() / "cache"; }

  // The build folder of the script `stem` (its first, where it made several).
  std::filesystem::path build_of(const std::string& stem) const {
    for (const auto& e : std::filesystem::directory_iterator(cache())) {
      if (e.path().filename().string().rfind(stem + "_", 0) == 0) return e.path();
    }
    ADD_FAILURE() << "no build for " << stem;
    return {};
  }

  nlohmann::json stats_of(const std::string& stem) const {
    const std::filesystem::path build = build_of(stem);
    if (build.empty()) return nlohmann::json::object();
    return json_from_yaml(slurp(build / "turnkey_stats.yaml"));
  }

  // The build of the model the script holds in `variable` (several per script).
  std::filesystem::path build_of_model(const std::string& variable) const {
    for (const auto& e : std::filesystem::directory_iterator(cache())) {
      const std::filesystem::path state = e.path() / (e.path().filename().string() + "_state.yaml");
      if (std::filesystem::exists(state) &&
          json_from_yaml(slurp(state)).value("model_name", std::string()) == variable) {
        return e.path();
      }
    }
    ADD_FAILURE() << "no build for the model " << variable;
    return {};
  }

  nlohmann::json stats_of_model(const std::string& variable) const {
    const std::filesystem::path build = build_of_model(variable);
    if (build.empty() || !std::filesystem::exists(build / "turnkey_stats.yaml")) {
      return nlohmann::json::object();
    }
    return json_from_yaml(slurp(build / "turnkey_stats.yaml"));
  }

  // Runs tests/data/scripts/<stem>.py with the TorchScript exporter (the exporter fixes' tests):
  // it must end within tolerance, written with exactly `fixes` of turnkey's.
  void expect_torchscript_fixes(const std::string& stem, const nlohmann::json& fixes) {
    const std::filesystem::path script =
        std::filesystem::path(TURNKEY_SOURCE_DIR) / "tests" / "data" / "scripts" / (stem + ".py");
    RunResult r =
        run_turnkey({script.string(), "--iterations", "5", "--exporter", "torchscript"}, cache());
    ASSERT_EQ(r.exit_code, 0) << r.all();
    const nlohmann::json s = stats_of(stem);
    EXPECT_EQ(s["correctness"]["verdict"], "within_tolerance") << s["correctness"].dump();
    EXPECT_EQ(s["exporter_fixes"], fixes) << s.dump();
  }
};

}  // namespace turnkey::test
