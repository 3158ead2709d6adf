// End-to-end: builds and the cache (issue 4): reuse, rebuild policy, lean cache, cache tools,
// load-build, sequences, concurrency and crashes.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <regex>
#include <thread>

#include "e2e_util.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class CacheCli : public ::testing::Test {
 protected:
  TempDir dir{"tk-e2e-cache"};
  fs::path cache() const { return dir.path() / "cache"; }

  std::vector<fs::path> builds() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(cache(), ec)) {
      if (fs::exists(e.path() / (e.path().filename().string() + "_state.yaml"))) out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  static json state_of(const fs::path& build) {
    return json_from_yaml(slurp(build / (build.filename().string() + "_state.yaml")));
  }
  void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
};

constexpr const char* kScript = R"(# labels: test_group::cache
import torch

torch.manual_seed(0)


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))


model = Tiny()
print("out", model(torch.ones(1, 8)).shape)
)";

TEST_F(CacheCli, SecondRunReusesExportAndOptionChangesRebuild) {
  write(dir / "tiny.py", kScript);
  const std::string script = (dir / "tiny.py").string();
  RunResult first = run_turnkey({script, "--iterations", "5"}, cache());
  ASSERT_EQ(first.exit_code, 0) << first.all();
  ASSERT_EQ(builds().size(), 1u);
  const fs::path build = builds().front();
  const auto onnx_before = fs::last_write_time(state_of(build)["onnx_path"].get<std::string>());

  RunResult second = run_turnkey({script, "--iterations", "5"}, cache());
  ASSERT_EQ(second.exit_code, 0) << second.all();
  EXPECT_NE(second.out.find("Successfully benchmarked"), std::string::npos);
  json st = state_of(build);
  EXPECT_EQ(st["tools"][1]["name"], "export-pytorch");
  EXPECT_EQ(st["tools"][1]["reused"], true);
  EXPECT_NE(slurp(build / "log_export-pytorch.txt").find("reused from cache"), std::string::npos);
  EXPECT_EQ(fs::last_write_time(st["onnx_path"].get<std::string>()), onnx_before);

  // Another opset: the export is stale, rebuilt, and the user is told why in one line.
  RunResult opset = run_turnkey({script, "--iterations", "5", "--onnx-opset", "16"}, cache());
  ASSERT_EQ(opset.exit_code, 0) << opset.all();
  EXPECT_TRUE(std::regex_search(opset.err, std::regex("rebuilding .*export-pytorch.*options changed")))
      << opset.err;
  st = state_of(build);
  EXPECT_FALSE(st["tools"][1].contains("reused"));
  EXPECT_EQ(st["tools"][1]["options"]["opset"], 16);

  // --rebuild always: exported again without a notice; --rebuild never: the stale export is used.
  RunResult always = run_turnkey({script, "--iterations", "5", "--rebuild", "always"}, cache());
  EXPECT_EQ(always.exit_code, 0);
  EXPECT_FALSE(state_of(build)["tools"][1].contains("reused"));
  RunResult never = run_turnkey({script, "--iterations", "5", "--rebuild", "never",
                                 "--onnx-opset", "15"}, cache());
  EXPECT_EQ(never.exit_code, 0) << never.all();
  EXPECT_EQ(state_of(build)["tools"][1]["reused"], true);

  // Changed weights: another model hash, so another build.
  std::string changed = kScript;
  changed.replace(changed.find("manual_seed(0)"), 14, "manual_seed(1)");
  write(dir / "tiny.py", changed);
  RunResult weights = run_turnkey({script, "--iterations", "5"}, cache());
  EXPECT_EQ(weights.exit_code, 0);
  EXPECT_EQ(builds().size(), 2u);
}

TEST_F(CacheCli, LeanCacheKeepsLogsAndYamlOnlyAlsoOnFailure) {
  linear_relu(dir / "good.onnx");
  complex_input(dir / "bad.onnx");  // fails at load-onnx (no complex inputs), after its build dir
  RunResult r = run_turnkey({(dir / "good.onnx").string(), (dir / "bad.onnx").string(),
                             "--lean-cache", "--iterations", "5"},
                            cache());
  EXPECT_EQ(r.exit_code, 1) << r.all();
  ASSERT_EQ(builds().size(), 2u);
  for (const fs::path& b : builds()) {
    for (const auto& e : fs::recursive_directory_iterator(b)) {
      const std::string ext = e.path().extension().string();
      const std::string name = e.path().filename().string();
      EXPECT_TRUE(ext == ".txt" || ext == ".yaml" || ext == ".json" || name == ".lock")
          << e.path();
    }
    EXPECT_TRUE(fs::exists(b / "turnkey_stats.yaml")) << b;
  }
}

TEST_F(CacheCli, DeleteRefusesPathsAndNeverLeavesTheCache) {
  linear_relu(dir / "m.onnx");
  ASSERT_EQ(run_turnkey({(dir / "m.onnx").string(), "--iterations", "3"}, cache()).exit_code, 0);
  // Something outside the cache, reachable through a symlink planted inside a build dir.
  write(dir / "outside" / "precious.txt", "keep me");
  fs::create_directory_symlink(dir / "outside", builds().front() / "link");
  write(cache() / "notes.txt", "not a build");

  for (const std::string bad : {"../x", "/etc", "..", ".", "a/b"}) {
    RunResult r = run_turnkey({"cache", "delete", bad}, cache());
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("not a build name"), std::string::npos) << r.err;
  }
  RunResult unknown = run_turnkey({"cache", "delete", "nosuchbuild"}, cache());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no build named"), std::string::npos);

  RunResult all = run_turnkey({"cache", "delete", "--all"}, cache());
  EXPECT_EQ(all.exit_code, 0) << all.all();
  EXPECT_TRUE(fs::is_directory(cache()));
  EXPECT_TRUE(builds().empty());
  EXPECT_EQ(slurp(dir / "outside" / "precious.txt"), "keep me");
  EXPECT_TRUE(fs::exists(cache() / "notes.txt"));
  EXPECT_TRUE(fs::exists(dir / "m.onnx"));
}

TEST_F(CacheCli, ListStatsCleanAndLoadBuild) {
  linear_relu(dir / "m.onnx");
  ASSERT_EQ(run_turnkey({(dir / "m.onnx").string(), "--iterations", "3"}, cache()).exit_code, 0);
  const std::string name = builds().front().filename().string();
  RunResult list = run_turnkey({"cache", "list"}, cache());
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_NE(list.out.find(name), std::string::npos);
  EXPECT_NE(list.out.find("successful"), std::string::npos);
  RunResult stats = run_turnkey({"cache", "stats", name}, cache());
  EXPECT_NE(stats.out.find("median_latency_ms"), std::string::npos);
  RunResult print = run_turnkey({"cache", "print", name}, cache());
  EXPECT_EQ(print.out, stats.out);

  // Continue the cached build with another benchmark.
  const fs::path state = builds().front() / (name + "_state.yaml");
  RunResult cont = run_turnkey({"-i", state.string(), "load-build", "benchmark", "--iterations",
                                "7"},
                               cache());
  EXPECT_EQ(cont.exit_code, 0) << cont.all();
  EXPECT_NE(cont.out.find("Successfully benchmarked"), std::string::npos);
  EXPECT_EQ(json_from_yaml(slurp(builds().front() / "turnkey_stats.yaml"))["iterations"], 7);

  RunResult clean = run_turnkey({"cache", "clean", name}, cache());
  EXPECT_EQ(clean.exit_code, 0);
  EXPECT_NE(clean.out.find("Cleaned " + name), std::string::npos);
}

// Issue 28: a build records what made it (its input, its tools' options), not the run's whole
// command line: a state is the same size whether its run had one input or twenty, in-process or
// as a corpus run; the command line is written once, in the run's record the state names.
TEST_F(CacheCli, StateDoesNotGrowWithTheRunsInputs) {
  linear_relu(dir / "m.onnx");
  std::vector<std::string> many = {(dir / "m.onnx").string()};
  for (int i = 0; i < 20; ++i) {  // other models (another size each), long paths
    const fs::path p = dir / std::string(120, 'x') / ("other_" + std::to_string(i) + ".onnx");
    fs::create_directories(p.parent_path());
    linear_relu(p, 16, 5 + i);
    many.push_back(p.string());
  }
  auto state_of_m = [&](const fs::path& cache) {
    for (const auto& e : fs::directory_iterator(cache)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("m_", 0) == 0) return e.path() / (name + "_state.yaml");
    }
    return fs::path();
  };
  const std::vector<std::string> opts = {"--iterations", "2", "--warmup", "0"};
  std::vector<std::string> one_args = {many.front()}, many_args = many;
  one_args.insert(one_args.end(), opts.begin(), opts.end());
  many_args.insert(many_args.end(), opts.begin(), opts.end());
  ASSERT_EQ(run_turnkey(one_args, dir / "one").exit_code, 0);
  RunResult big = run_turnkey(many_args, dir / "many");
  ASSERT_EQ(big.exit_code, 0) << big.all();
  many_args.push_back("--process-isolation");
  RunResult iso = run_turnkey(many_args, dir / "iso");
  ASSERT_EQ(iso.exit_code, 0) << iso.all();
  const std::string one = slurp(state_of_m(dir / "one"));
  size_t command_bytes = 0;
  for (const std::string& a : many) command_bytes += a.size() + 1;
  ASSERT_GT(command_bytes, 2500u);
  for (const char* cache : {"many", "iso"}) {
    const std::string state_text = slurp(state_of_m(dir / cache));
    // Timestamps and durations differ in their digits only: a few bytes, not the command line.
    EXPECT_LT(std::abs(static_cast<long>(state_text.size()) - static_cast<long>(one.size())), 100)
        << cache << "\n" << state_text;
    EXPECT_EQ(state_text.find("other_"), std::string::npos) << cache << "\n" << state_text;
    const json st = json_from_yaml(state_text);
    EXPECT_FALSE(st.contains("command_line")) << cache;
    // The run's record holds the whole command line, once for the run.
    const std::string run = st.value("run", "");
    ASSERT_EQ(run.size(), 16u) << cache;
    const json record = json_from_yaml(slurp(run_record_path(dir / cache, run)));
    EXPECT_NE(record.value("command_line", "").find(many.back()), std::string::npos);
    size_t records = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir / cache / "inputs" / "runs"))
      ++records;
    EXPECT_EQ(records, 1u) << cache;
  }
  // The records of the run are read as before: every build listed and reported.
  RunResult list = run_turnkey({"cache", "list"}, dir / "iso");
  ASSERT_EQ(list.exit_code, 0) << list.all();
  EXPECT_NE(list.out.find("other_19_"), std::string::npos) << list.out;
  RunResult rep = run_turnkey({"report", "-r", (dir / "rep").string()}, dir / "iso");
  ASSERT_EQ(rep.exit_code, 0) << rep.all();
}

TEST_F(CacheCli, SequencesAreCheckedBeforeTheyRun) {
  linear_relu(dir / "m.onnx");
  RunResult bad = run_turnkey({"-i", (dir / "m.onnx").string(), "load-onnx", "export-pytorch"},
                              cache());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("export-pytorch needs a PyTorch model: put discover before it"),
            std::string::npos)
      << bad.err;
  write(dir / "seq.yaml", "- export-pytorch: {opset: 16}\n- benchmark: {iterations: 4}\n");
  write(dir / "bad_seq.yaml", "- benchmrk\n");
  RunResult from_file = run_turnkey({(dir / "m.onnx").string(), "--sequence-file",
                                     (dir / "seq.yaml").string()},
                                    cache());
  EXPECT_EQ(from_file.exit_code, 0) << from_file.all();
  EXPECT_EQ(json_from_yaml(slurp(builds().front() / "turnkey_stats.yaml"))["iterations"], 4);
  RunResult typo = run_turnkey({(dir / "m.onnx").string(), "--sequence-file",
                                (dir / "bad_seq.yaml").string()},
                               cache());
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("did you mean 'benchmark'"), std::string::npos) << typo.err;
  RunResult unknown = run_turnkey({(dir / "m.onnx").string(), "--sequence", "fastest"}, cache());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("optimize-fp16"), std::string::npos) << unknown.err;
}

TEST_F(CacheCli, BuildStagesOptimizeConvertAndCheck) {
  small_conv_net(dir / "conv.onnx");
  RunResult r = run_turnkey({"-i", (dir / "conv.onnx").string(), "load-onnx", "optimize-ort",
                             "convert-fp16", "check-onnx", "benchmark", "--iterations", "5"},
                            cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  ASSERT_EQ(builds().size(), 1u);
  const fs::path b = builds().front();
  json st = state_of(b);
  std::vector<std::string> tools;
  for (const auto& t : st["tools"]) {
    tools.push_back(t["name"]);
    EXPECT_EQ(t["status"], "successful") << t.dump();
  }
  EXPECT_EQ(tools, (std::vector<std::string>{"load-onnx", "optimize-ort", "convert-fp16",
                                             "check-onnx", "benchmark"}));
  EXPECT_TRUE(fs::exists(b / "onnx" / (b.filename().string() + "-opt-basic.onnx")));
  EXPECT_TRUE(fs::exists(b / "onnx" / (b.filename().string() + "-fp16.onnx")));
  json stats = json_from_yaml(slurp(b / "turnkey_stats.yaml"));
  EXPECT_LT(stats["fp16_worst_rel_error"].get<double>(), 1e-2);
  EXPECT_GT(stats["fp16_worst_cosine"].get<double>(), 0.999);
  EXPECT_EQ(stats["check_onnx"], "passed");
  EXPECT_NE(stats["benchmarked_model"].get<std::string>().find("-fp16.onnx"), std::string::npos);
  for (const char* tool : {"optimize-ort", "convert-fp16", "check-onnx", "benchmark"}) {
    EXPECT_TRUE(fs::exists(b / (std::string("log_") + tool + ".txt"))) << tool;
  }
  // Rerun: optimize and fp16 come from the cache.
  RunResult again = run_turnkey({"-i", (dir / "conv.onnx").string(), "load-onnx", "optimize-ort",
                                 "convert-fp16", "check-onnx", "benchmark", "--iterations", "5"},
                                cache());
  ASSERT_EQ(again.exit_code, 0) << again.all();
  st = state_of(b);
  EXPECT_EQ(st["tools"][1]["reused"], true);
  EXPECT_EQ(st["tools"][2]["reused"], true);
}

TEST_F(CacheCli, InvalidEnvironmentValuesAreUsageErrors) {
  for (const auto& [var, value] : std::vector<std::pair<std::string, std::string>>{
           {"TURNKEY_TRACEBACK", "maybe"},
           {"TURNKEY_BUILD_MONITOR", "2"},
           {"TURNKEY_ONNX_OPSET", "seventeen"},
           {"TURNKEY_TIMEOUT_SECONDS", "-5"},
           {"TURNKEY_FLOAT64_BUDGET_S", "soon"},
           {"TURNKEY_ONNX_OPTIMIZER_BUDGET_S", "-1"},
           {"TURNKEY_DEBUG", "perhaps"}}) {
    RunResult r = run_turnkey({"version"}, cache(), {{var, value}});
    EXPECT_EQ(r.exit_code, 2) << var;
    EXPECT_NE(r.err.find(var + "=" + value), std::string::npos) << r.err;
    EXPECT_FALSE(looks_like_crash(r));
  }
}

TEST_F(CacheCli, ConcurrentRunsOnOneCacheStayConsistent) {
  small_conv_net(dir / "conv.onnx");
  linear_relu(dir / "lin.onnx");
  std::vector<std::string> args = {(dir / "conv.onnx").string(), (dir / "lin.onnx").string(),
                                   "--iterations", "300"};
  RunResult a, b;
  std::thread ta([&] { a = run_turnkey(args, cache()); });
  std::thread tb([&] { b = run_turnkey(args, cache()); });
  ta.join();
  tb.join();
  EXPECT_EQ(a.exit_code, 0) << a.all();
  EXPECT_EQ(b.exit_code, 0) << b.all();
  ASSERT_EQ(builds().size(), 2u);
  for (const fs::path& build : builds()) {
    json st = state_of(build);
    EXPECT_EQ(st["build_status"], "successful");
    EXPECT_NO_THROW(json_from_yaml(slurp(build / "turnkey_stats.yaml")));
  }
}

TEST_F(CacheCli, KilledRunLeavesParsableIncompleteStateAndRerunSucceeds) {
  linear_relu(dir / "m.onnx");
  // A benchmark long enough to be killed in the middle of it.
  pid_t pid = fork();
  if (pid == 0) {
    setenv("TURNKEY_CACHE_DIR", cache().c_str(), 1);
    setenv("TURNKEY_BUILD_MONITOR", "False", 1);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl(turnkey_binary().c_str(), "turnkey", (dir / "m.onnx").c_str(), "--iterations",
          "50000000", nullptr);
    _exit(127);
  }
  // Wait until the benchmark tool has started, then SIGKILL.
  for (int i = 0; i < 300; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!builds().empty()) {
      std::string text = slurp(builds().front() / (builds().front().filename().string() + "_state.yaml"));
      if (text.find("benchmark") != std::string::npos) break;
    }
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_EQ(builds().size(), 1u);
  json st = state_of(builds().front());  // parses
  EXPECT_EQ(st["build_status"], "incomplete");
  RunResult rerun = run_turnkey({(dir / "m.onnx").string(), "--iterations", "5"}, cache());
  EXPECT_EQ(rerun.exit_code, 0) << rerun.all();
  EXPECT_EQ(state_of(builds().front())["build_status"], "successful");
}

}  // namespace
}  // namespace turnkey::test
