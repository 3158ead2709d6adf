// Issue 18: a slowdown the load average cannot see is flagged, and clean runs stay quiet. The test
// slows turnkey with a real CPU quota (half of one CPU, in 10 ms periods) on a cgroup it creates
// (v1 `cpu` controller, or v2 where its cpu controller is enabled), and skips, saying why, where
// it cannot make one. Registered RUN_SERIAL: another test on the other core would make the free
// runs slow for real.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>

#include "e2e_util.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// x [256,1024] -> MatMul(W1 1024x1024) -> Relu -> MatMul(W2) -> y: ~0.5 G multiply-adds, 3-5 ms
// a call on one thread here (AVX-512), so that a 5 ms-in-10 ms quota spans every timed call.
void matmul_chain(const fs::path& path) {
  onnx::ModelProto model = new_model();
  onnx::GraphProto* g = model.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {256, 1024});
  add_output(g, "y", onnx::TensorProto::FLOAT, {256, 1024});
  add_float_initializer(g, "w1", {1024, 1024}, 1);
  add_float_initializer(g, "w2", {1024, 1024}, 2);
  add_node(g, "MatMul", {"x", "w1"}, {"h"});
  add_node(g, "Relu", {"h"}, {"r"});
  add_node(g, "MatMul", {"r", "w2"}, {"y"});
  save_model(model, path);
}

bool write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// A cgroup with a CPU quota of `quota_us` per `period_us`, removed on destruction.
class QuotaCgroup {
 public:
  QuotaCgroup(int quota_us, int period_us) {
    const std::string name = "turnkey-test-speed-" + std::to_string(getpid());
    // v1: the cpu controller's own hierarchy (here /sys/fs/cgroup/cpu).
    for (const char* root : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
      const fs::path dir = fs::path(root) / name;
      std::error_code ec;
      if (!fs::exists(fs::path(root) / "cpu.cfs_quota_us", ec) || !fs::create_directory(dir, ec)) {
        continue;
      }
      if (write_text(dir / "cpu.cfs_period_us", std::to_string(period_us)) &&
          write_text(dir / "cpu.cfs_quota_us", std::to_string(quota_us))) {
        dir_ = dir;
        return;
      }
      fs::remove(dir, ec);
    }
    // v2: a child of the unified root where the cpu controller is enabled.
    for (const char* root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
      const std::string controllers = slurp(fs::path(root) / "cgroup.subtree_control");
      if (controllers.find("cpu") == std::string::npos) continue;
      const fs::path dir = fs::path(root) / name;
      std::error_code ec;
      if (!fs::create_directory(dir, ec)) continue;
      if (write_text(dir / "cpu.max", std::to_string(quota_us) + " " + std::to_string(period_us))) {
        dir_ = dir;
        return;
      }
      fs::remove(dir, ec);
    }
  }
  ~QuotaCgroup() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove(dir_, ec);  // empty by then: its processes have exited
  }
  QuotaCgroup(const QuotaCgroup&) = delete;
  QuotaCgroup& operator=(const QuotaCgroup&) = delete;
  bool made() const { return !dir_.empty(); }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

struct SpeedRun {
  RunResult result;
  json stats;
  std::vector<std::string> flags;
  bool slowdown_flagged() const {
    for (const std::string& f : flags) {
      if (f.rfind("machine slowed", 0) == 0 || f.rfind("CPU quota throttled", 0) == 0) return true;
    }
    return false;
  }
};

class MachineSpeed : public ::testing::Test {
 protected:
  void SetUp() override {
    matmul_chain(dir_ / "matmul.onnx");
    fs::create_directories(dir_ / "state");
  }

  // One benchmark on CPU 0 with one thread; in `cgroup` when given (the shell moves itself into
  // it, then becomes turnkey). A fresh cache each time: every run is measured, none reused.
  SpeedRun run(const QuotaCgroup* cgroup) {
    const fs::path cache = dir_ / ("cache" + std::to_string(runs_++));
    std::vector<std::string> argv = {turnkey_binary(), (dir_ / "matmul.onnx").string(),
                                     "--threads",      "1",
                                     "--pin",          "0",
                                     "--iterations",   "40"};
    if (cgroup) {
      argv.insert(argv.begin(), {"/bin/sh", "-c", "echo $$ > \"$0\" && exec \"$@\"",
                                 (cgroup->dir() / "cgroup.procs").string()});
    }
    SpeedRun r;
    r.result = run_command(argv, {{"TURNKEY_CACHE_DIR", cache.string()},
                                  {"TURNKEY_STATE_DIR", (dir_ / "state").string()},
                                  {"TURNKEY_BUILD_MONITOR", "False"}});
    EXPECT_EQ(r.result.exit_code, 0) << r.result.all();
    for (const auto& entry : fs::directory_iterator(cache)) {
      if (fs::exists(entry.path() / "turnkey_stats.yaml")) {
        r.stats = yaml_stats(entry.path() / "turnkey_stats.yaml");
      }
    }
    for (const json& f : r.stats.value("measurement_flags", json::array())) {
      r.flags.push_back(f.get<std::string>());
    }
    return r;
  }

  // The few keys the test reads, from turnkey_stats.yaml (YAML: parsed by turnkey's own report).
  json yaml_stats(const fs::path& file) {
    RunResult r = run_command({"/usr/bin/python3", "-c",
                               "import json, sys, yaml; print(json.dumps(yaml.safe_load("
                               "open(sys.argv[1]))))",
                               file.string()});
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
  }

  TempDir dir_{"tk-speed"};
  int runs_ = 0;
};

TEST_F(MachineSpeed, SlowedRunsAreFlaggedAndAFreeRunIsNot) {
  QuotaCgroup quota(5000, 10000);  // half of one CPU
  if (!quota.made()) {
    GTEST_SKIP() << "cannot make a cgroup with a CPU quota here (needs root and a cgroup v1 cpu "
                    "controller or a v2 cpu controller in subtree_control)";
  }
  // free / slowed / free / slowed, as the acceptance has it.
  std::vector<SpeedRun> free_runs, slowed_runs;
  for (int i = 0; i < 2; ++i) {
    free_runs.push_back(run(nullptr));
    slowed_runs.push_back(run(&quota));
  }
  // Each slowed run is flagged, by the cgroup's throttling counter or by the probe: on a loaded
  // machine a process may never use up half a CPU, and then only the probe sees the slowdown.
  bool throttled = false;
  for (const SpeedRun& s : slowed_runs) {
    EXPECT_TRUE(s.slowdown_flagged()) << s.result.out;
    throttled = throttled || s.stats.value("cpu_throttled_ms", 0.0) > 0;
  }
  if (!throttled) std::cerr << "note: no slowed run was throttled (a loaded machine)\n";
  // Where the kernel's counter did not see the quota, the probe must have: a slowed run's
  // slowest probe is well above the machine's best. (Where it did, the probe may not: a 5 ms
  // probe at rest fits in a fresh 5 ms allowance of the 10 ms period, measured on an idle
  // machine, 2026-11-26.)
  double most_slowed = 0;
  for (const SpeedRun& s : slowed_runs)
    most_slowed = std::max(most_slowed, s.stats.value("speed_slowdown", 0.0));
  if (!throttled) {
    EXPECT_GT(most_slowed, 0.2) << slowed_runs.back().stats.dump();
  }
  // At least one free run is clean of slowdown flags; a third is allowed where the machine had a
  // moment of real contention in both (that run would be flagged rightly).
  bool clean = !free_runs[0].slowdown_flagged() || !free_runs[1].slowdown_flagged();
  if (!clean) clean = !run(nullptr).slowdown_flagged();
  EXPECT_TRUE(clean) << free_runs[0].result.out << free_runs[1].result.out;
  // Free runs are never throttled: they are in no quota'd cgroup.
  for (const SpeedRun& f : free_runs) EXPECT_EQ(f.stats.value("cpu_throttled_ms", 0.0), 0);
}

TEST_F(MachineSpeed, RepetitionsReportTheirSpreadAndAnIntervalCoveringIt) {
  const fs::path cache = dir_ / "reps";
  RunResult r = run_command({turnkey_binary(), (dir_ / "matmul.onnx").string(), "--threads", "1",
                             "--iterations", "20", "--repetitions", "3"},
                            {{"TURNKEY_CACHE_DIR", cache.string()},
                             {"TURNKEY_STATE_DIR", (dir_ / "state").string()},
                             {"TURNKEY_BUILD_MONITOR", "False"}});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("3 repetitions: medians [0-9.]+ [0-9.]+ [0-9.]+ \\(spread [0-9.]+%\\), "
                        "next-run interval \\[[0-9.]+, [0-9.]+\\] from 6 blocks")))
      << r.out;
  json s;
  for (const auto& entry : fs::directory_iterator(cache)) {
    if (fs::exists(entry.path() / "turnkey_stats.yaml"))
      s = yaml_stats(entry.path() / "turnkey_stats.yaml");
  }
  ASSERT_EQ(s["repetitions"], 3);
  ASSERT_EQ(s["repetition_medians_ms"].size(), 3u);
  EXPECT_EQ(s["iterations"], 60);  // the samples of all three, pooled
  EXPECT_EQ(s["speed_probes_ms"].size(), 6u);
  EXPECT_EQ(s["blocks"], 6);  // 20 calls: two blocks of 10 in each repetition
  // The interval holds every repetition's median and the pooled CI.
  for (const json& m : s["repetition_medians_ms"]) {
    EXPECT_LE(s["median_interval_low_ms"].get<double>(), m.get<double>());
    EXPECT_GE(s["median_interval_high_ms"].get<double>(), m.get<double>());
  }
  EXPECT_LE(s["median_interval_low_ms"].get<double>(), s["median_ci_low_ms"].get<double>());
  EXPECT_GE(s["median_interval_high_ms"].get<double>(), s["median_ci_high_ms"].get<double>());

  // An absurd count is a usage error before anything runs.
  RunResult bad =
      run_command({turnkey_binary(), (dir_ / "matmul.onnx").string(), "--repetitions", "0"},
                  {{"TURNKEY_CACHE_DIR", cache.string()}});
  EXPECT_EQ(bad.exit_code, 2) << bad.all();
  EXPECT_NE(bad.err.find("--repetitions"), std::string::npos) << bad.err;
}

TEST_F(MachineSpeed, TheDefaultIntervalIsMadeFromBlocksAndSaysHow) {
  const auto run = [&](const std::string& name, std::vector<std::string> extra) {
    const fs::path cache = dir_ / name;
    std::vector<std::string> args = {turnkey_binary(), (dir_ / "matmul.onnx").string(), "--threads",
                                     "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = run_command(args, {{"TURNKEY_CACHE_DIR", cache.string()},
                                     {"TURNKEY_STATE_DIR", (dir_ / "state").string()},
                                     {"TURNKEY_BUILD_MONITOR", "False"}});
    EXPECT_EQ(r.exit_code, 0) << r.all();
    json s;
    for (const auto& entry : fs::directory_iterator(cache)) {
      if (fs::exists(entry.path() / "turnkey_stats.yaml"))
        s = yaml_stats(entry.path() / "turnkey_stats.yaml");
    }
    return std::make_pair(r, s);
  };
  // By default: 100 calls in 5 blocks; the interval from the four blocks nearest their median
  // (tests/unit/test_statistics.cpp checks its arithmetic), never narrower than the CI.
  auto [r, s] = run("blocks", {});
  EXPECT_EQ(s["iterations"], 100);
  ASSERT_EQ(s["blocks"], 5);
  ASSERT_EQ(s["block_medians_ms"].size(), 5u);
  const double low = s["median_interval_low_ms"], high = s["median_interval_high_ms"];
  EXPECT_LE(low, s["median_ci_low_ms"].get<double>());
  EXPECT_GE(high, s["median_ci_high_ms"].get<double>());
  EXPECT_NE(s["median_interval_method"].get<std::string>().find(
                "c x sd of the 4 block medians nearest their median (of 5; c = 3.159"),
            std::string::npos)
      << s["median_interval_method"];
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("next-run interval \\[[0-9.]+, [0-9.]+\\] from 5 blocks")))
      << r.out;
  // --blocks 1: the interval is the median's CI, and says so.
  auto [r1, s1] = run("one-block", {"--blocks", "1"});
  EXPECT_EQ(s1["blocks"], 1);
  EXPECT_EQ(s1["median_interval_low_ms"], s1["median_ci_low_ms"]);
  EXPECT_EQ(s1["median_interval_high_ms"], s1["median_ci_high_ms"]);
  // A first run of its result on this host (a cache of its own) says what it cannot hold.
  EXPECT_EQ(s1["median_interval_method"],
            "the median's 95% CI (order statistics); it holds what varies within this run only: "
            "this is the first run of this result on this host, and one run cannot measure what "
            "varies between runs (rerun to widen it)");
  EXPECT_EQ(s1["median_interval_runs"], 1);
  EXPECT_EQ(r1.out.find("next-run interval"), std::string::npos) << r1.out;
  // A count it cannot cut is a usage error before anything runs.
  RunResult bad = run_command({turnkey_binary(), (dir_ / "matmul.onnx").string(), "--blocks", "0"},
                              {{"TURNKEY_CACHE_DIR", (dir_ / "bad").string()}});
  EXPECT_EQ(bad.exit_code, 2) << bad.all();
  EXPECT_NE(bad.err.find("--blocks"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace turnkey::test
