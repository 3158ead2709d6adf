// End-to-end: a damaged cache fails at most the build it damages (issue 15). For each kind of
// damage to one build of a first run (empty, garbage, mistyped or directory state file, truncated
// or changed ONNX artifact), a second run over that script and another one never prints an
// internal error, rebuilds what can be rebuilt with a one-line notice, and leaves every other
// build's result in place.
#include <gtest/gtest.h>

#include <fstream>

#include "e2e_util.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kOneModel = R"(import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.ReLU())
model(torch.ones(1, 6))
)";

constexpr const char* kTwoModels = R"(import torch

torch.manual_seed(0)
first = torch.nn.Linear(5, 2)
second = torch.nn.Sequential(torch.nn.Linear(7, 4), torch.nn.Tanh())
first(torch.ones(1, 5))
second(torch.ones(1, 7))
)";

struct Damage {
  const char* name;
  // Applied to the one build of the first script; returns what the notice or failure names.
  void (*apply)(const fs::path& build_dir, const fs::path& state);
  bool rebuildable;
  const char* message;  // in stderr (a notice) or in the failed build's status line
};

void PrintTo(const Damage& d, std::ostream* os) { *os << d.name; }

fs::path onnx_in(const fs::path& build_dir) {
  for (const auto& e : fs::directory_iterator(build_dir / "onnx")) {
    if (e.path().extension() == ".onnx") return e.path();
  }
  return {};
}

const Damage kDamages[] = {
    {"EmptyState", [](const fs::path&, const fs::path& s) { std::ofstream(s, std::ios::trunc); },
     true, "previous state damaged (empty), rebuilding"},
    {"GarbageState",
     [](const fs::path&, const fs::path& s) { std::ofstream(s) << "{{{ not: [yaml\n\x01\x02"; },
     true, "previous state damaged (invalid YAML"},
    {"MistypedState",
     [](const fs::path&, const fs::path& s) {
       std::ofstream(s) << "build_name: x\ninput: [1, 2]\ntools: {a: 1}\n";
     },
     true, "previous state damaged (input is not a string)"},
    {"MistypedToolEntry",
     [](const fs::path&, const fs::path& s) {
       json state = json_from_yaml(slurp(s));
       state["tools"][1]["outputs"] = 5;
       std::ofstream(s) << yaml_from_json(state);
     },
     true, "previous state damaged (tools[1].outputs is not a mapping)"},
    {"DirectoryInPlaceOfState",
     [](const fs::path&, const fs::path& s) {
       fs::remove(s);
       fs::create_directories(s / "inside");
     },
     false, "is a directory, not a build state"},
    {"TruncatedOnnx", [](const fs::path& b, const fs::path&) { fs::resize_file(onnx_in(b), 60); },
     true, "changed since export-pytorch made it"},
    {"ChangedOnnxSameSize",
     [](const fs::path& b, const fs::path&) {
       const fs::path onnx = onnx_in(b);
       std::string bytes = slurp(onnx);
       bytes[bytes.size() / 2] ^= 0x5a;
       std::ofstream(onnx, std::ios::binary | std::ios::trunc) << bytes;
     },
     true, "changed since export-pytorch made it (SHA-256 differs)"},
};

class DamagedCache : public ::testing::TestWithParam<Damage> {
 protected:
  TempDir dir{"tk-e2e-damaged"};
};

TEST_P(DamagedCache, OnlyTheDamagedBuildIsAffectedAndItIsRebuiltWhenItCanBe) {
  const Damage& damage = GetParam();
  const fs::path cache = dir / "cache";
  std::ofstream(dir / "one.py") << kOneModel;
  std::ofstream(dir / "two.py") << kTwoModels;
  const std::string one = (dir / "one.py").string(), two = (dir / "two.py").string();
  const std::vector<std::string> common = {"--iterations", "5"};

  std::vector<std::string> args = {one};
  args.insert(args.end(), common.begin(), common.end());
  RunResult first = run_turnkey(args, cache);
  ASSERT_EQ(first.exit_code, 0) << first.all();
  fs::path build;
  for (const auto& e : fs::directory_iterator(cache)) {
    if (e.path().filename().string().rfind("one_", 0) == 0) build = e.path();
  }
  ASSERT_FALSE(build.empty());
  const fs::path state = build / (build.filename().string() + "_state.yaml");
  damage.apply(build, state);

  args = {one, two};
  args.insert(args.end(), common.begin(), common.end());
  RunResult second = run_turnkey(args, cache);
  EXPECT_FALSE(looks_like_crash(second)) << second.all();
  EXPECT_EQ(second.exit_code, damage.rebuildable ? 0 : 1) << second.all();
  EXPECT_NE(second.all().find(damage.message), std::string::npos) << second.all();
  EXPECT_EQ(count_occurrences(second.out, "Successfully benchmarked"), damage.rebuildable ? 3 : 2)
      << second.all();

  int successful = 0;
  for (const auto& e : fs::directory_iterator(cache)) {
    const fs::path s = e.path() / (e.path().filename().string() + "_state.yaml");
    if (!fs::is_regular_file(s)) continue;
    const json st = json_from_yaml(slurp(s));
    successful += st.value("build_status", "") == "successful";
    for (const json& t : st["tools"]) {
      EXPECT_NE(t.value("status", ""), "running") << s << " left a tool running";
    }
  }
  EXPECT_EQ(successful, damage.rebuildable ? 3 : 2);
  if (!damage.rebuildable) {
    // The failure is one line in the damaged build's block; the damage is left for the user.
    EXPECT_NE(second.out.find("Failed at discover: " + state.string() + " is a directory"),
              std::string::npos)
        << second.out;
    EXPECT_TRUE(fs::is_directory(state / "inside"));
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, DamagedCache, ::testing::ValuesIn(kDamages),
                         [](const ::testing::TestParamInfo<Damage>& info) {
                           return std::string(info.param.name);
                         });

// A stats file that cannot be read is never overwritten unseen (issue 31): the new run keeps it
// beside the new one and says so in one line; the new result is recorded.
TEST(DamagedCache, AnUnreadableStatsFileIsKeptAsideAndSaid) {
  TempDir tmp{"tk-e2e-unreadable-stats"};
  const fs::path cache = tmp / "cache";
  const std::string model =
      (fs::path(TURNKEY_SOURCE_DIR) / "examples/cli/onnx/sample.onnx").string();
  ASSERT_EQ(run_turnkey({model, "--iterations", "5"}, cache).exit_code, 0);
  fs::path build;
  for (const auto& e : fs::directory_iterator(cache)) {
    if (e.path().filename().string().rfind("sample_", 0) == 0) build = e.path();
  }
  ASSERT_FALSE(build.empty());
  std::ofstream(build / "turnkey_stats.yaml") << "results: [unclosed\n";

  RunResult again = run_turnkey({model, "--iterations", "5"}, cache);
  EXPECT_EQ(again.exit_code, 0) << again.all();
  EXPECT_EQ(count_occurrences(again.err, "turnkey_stats.yaml could not be read"), 1) << again.all();
  EXPECT_NE(again.err.find("kept as turnkey_stats.yaml.unreadable"), std::string::npos)
      << again.all();
  EXPECT_EQ(slurp(build / "turnkey_stats.yaml.unreadable"), "results: [unclosed\n");
  const json stats = json_from_yaml(slurp(build / "turnkey_stats.yaml"));
  EXPECT_EQ(stats["results"].size(), 1u) << stats.dump(1);
}

}  // namespace
}  // namespace turnkey::test
