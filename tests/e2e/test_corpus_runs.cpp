// End-to-end: corpus runs (docs/corpus_runs.md) with the built binary, how inputs end. The hostile
// corpus (tests/data/hostile, each script's expected status in expected_status.txt) mixed with good
// scripts under -j 2 and limits: every input ends with its status, the good ones are benchmarked,
// nothing the corpus started is left running. TURNKEY_TIMEOUT_SECONDS and usage errors, a script
// that never exits, and statuses taken from the protocol. Scheduling and resume:
// test_corpus_scheduling.cpp; interrupted and killed runs: test_corpus_interrupts.cpp.
#include "corpus_runs_support.h"

namespace turnkey::test {
namespace {

TEST(CorpusRuns, HostileCorpusEveryInputEndsWithItsStatusAndNothingIsLeftRunning) {
  TempDir dir("tk-hostile");
  fs::create_directories(dir / "pids");
  std::vector<std::pair<std::string, std::string>> expected = expected_statuses();
  ASSERT_GE(expected.size(), 10u);
  std::vector<std::string> args;
  for (const auto& [script, status] : expected) args.push_back((kHostile / script).string());
  // The timeout is far above what any input that ends needs (a few seconds each, ~25 s with both
  // cores busy), so only the inputs that never end meet it, however loaded the machine is.
  args.insert(args.end(), {"-j", "2", "--timeout", "90", "--memory-limit", "1G", "--max-processes",
                           "64", "--iterations", "5"});
  RunResult r =
      run_turnkey(args, dir / "cache", {{"HOSTILE_PID_DIR", (dir / "pids").string()}}, {}, 800);
  ASSERT_FALSE(r.timed_out) << r.all();
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_EQ(r.signal, 0);

  // Every input: its record says the expected status (and signal).
  for (const auto& [script, status] : expected) {
    const std::string stem = fs::path(script).stem().string();
    const std::string record = record_of(dir / "cache", stem);
    ASSERT_FALSE(record.empty()) << script << " has no record\n" << r.all();
    std::string got = yaml_string(record, "status");
    if (got == "crashed" && !yaml_string(record, "signal").empty()) {
      got += " (signal " + yaml_string(record, "signal") + ")";
    }
    EXPECT_EQ(got, status) << script << ":\n" << record;
    if (got == "crashed (signal 11)") {
      // A crash under the limit names it (a refused allocation crashes unchecking native code).
      EXPECT_NE(record.find("under --memory-limit's data limit of 1024 MiB"), std::string::npos)
          << record;
    }
    if (status == "successful") {
      // Benchmarked: its build has latency numbers.
      bool benchmarked = false;
      for (const auto& e : fs::directory_iterator(dir / "cache")) {
        if (e.path().filename().string().rfind(stem + "_", 0) == 0 &&
            fs::exists(e.path() / "turnkey_stats.yaml")) {
          benchmarked =
              benchmarked ||
              slurp(e.path() / "turnkey_stats.yaml").find("median_latency_ms") != std::string::npos;
        }
      }
      EXPECT_TRUE(benchmarked) << script << " was not benchmarked";
    }
  }
  // Benchmarked, then never exits: killed after the grace, its results kept, and its log says so.
  EXPECT_EQ(files_holding(dir / "cache" / "inputs",
                          "hang_at_exit.py: the script's process was still running 10 s after "
                          "its last command")
                .size(),
            1u);
  // Killed in the middle of a build: the build state carries the status and the stage reached.
  bool found_state = false;
  for (const auto& e : fs::directory_iterator(dir / "cache")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("hang_in_export_", 0) != 0) continue;
    const std::string state = slurp(e.path() / (name + "_state.yaml"));
    found_state = true;
    EXPECT_EQ(yaml_string(state, "build_status"), "timeout") << state;
    EXPECT_EQ(yaml_string(state, "failed_tool"), "export-pytorch") << state;
  }
  EXPECT_TRUE(found_state) << "hang_in_export.py started no build";

  // The closing summary: one row per status with its count, failures with their logs.
  EXPECT_NE(r.out.find("Corpus summary: " + std::to_string(expected.size()) + " inputs"),
            std::string::npos)
      << r.out;
  std::map<std::string, int> counts;
  for (const auto& [script, status] : expected) ++counts[status];
  for (const auto& [status, n] : counts) {
    std::regex row("\n  " + std::regex_replace(status, std::regex(R"([()])"), R"(\$&)") + " +" +
                   std::to_string(n) + "\n");
    EXPECT_TRUE(std::regex_search(r.out, row)) << status << " x" << n << " not in\n" << r.out;
  }
  EXPECT_NE(r.out.find("/inputs/infinite_loop_"), std::string::npos) << "log path of a failure";
  // Megabytes of output were drained into a capped log, not lost and not unbounded.
  for (const auto& e : fs::directory_iterator(dir / "cache" / "inputs")) {
    if (e.path().filename().string().rfind("noisy_output_", 0) == 0 &&
        e.path().extension() == ".log") {
      EXPECT_GT(fs::file_size(e.path()), 3u << 20);
      EXPECT_LE(fs::file_size(e.path()), (8u << 20) + 4096);
    }
  }
  // Nothing the corpus started survives: scripts, children, the daemonized grandchild, the storm.
  std::vector<pid_t> pids = recorded_pids(dir / "pids");
  EXPECT_GE(pids.size(), 10u);
  EXPECT_EQ(still_running(pids), "");
  // And no process is left in a pids cgroup of turnkey's.
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator("/sys/fs/cgroup/pids", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("turnkey-", 0) != 0) continue;
    // turnkey-<parent pid>-...: other tests' runs may be going on; a dead parent's must be empty.
    if (alive(static_cast<pid_t>(std::atoi(name.c_str() + 8)))) continue;
    EXPECT_EQ(slurp(e.path() / "cgroup.procs"), "") << e.path();
  }
}

TEST(CorpusRuns, TimeoutFromTheEnvironmentAndUsageErrors) {
  TempDir dir("tk-timeout");
  const auto t0 = std::chrono::steady_clock::now();
  RunResult r = run_turnkey({(kHostile / "infinite_loop.py").string(), "--process-isolation"},
                            dir / "cache", {{"TURNKEY_TIMEOUT_SECONDS", "3"}}, {}, 120);
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_NE(r.err.find("timeout (last stage: discover): exceeded the 3 s timeout"),
            std::string::npos)
      << r.all();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60);

  RunResult bad = run_turnkey({(kHostile / "good_linear.py").string(), "--memory-limit", "lots"},
                              dir / "cache");
  EXPECT_EQ(bad.exit_code, 2) << bad.all();
  EXPECT_NE(bad.err.find("--memory-limit lots: expected a size such as 512M or 4G"),
            std::string::npos)
      << bad.err;
  RunResult zero = run_turnkey({(kHostile / "good_linear.py").string(), "-j", "0"}, dir / "cache");
  EXPECT_EQ(zero.exit_code, 2) << zero.all();
  RunResult env = run_turnkey({(kHostile / "good_linear.py").string(), "--process-isolation"},
                              dir / "cache", {{"TURNKEY_TIMEOUT_SECONDS", "soon"}});
  EXPECT_EQ(env.exit_code, 2) << env.all();
  EXPECT_NE(env.err.find("TURNKEY_TIMEOUT_SECONDS=soon"), std::string::npos) << env.err;
}

// In one process (no supervisor, no --timeout), a script that never exits after its model ran
// held turnkey forever before its results were printed: now it is killed after the grace.
TEST(CorpusRuns, AScriptThatNeverExitsIsKilledAfterTheGraceAndItsResultsStand) {
  TempDir dir("tk-hang-at-exit");
  const auto t0 = std::chrono::steady_clock::now();
  RunResult r = run_turnkey({(kHostile / "hang_at_exit.py").string(), "--iterations", "5"},
                            dir / "cache", {}, {}, 300);
  ASSERT_FALSE(r.timed_out) << r.all();
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("Successfully benchmarked"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("still running 10 s after its last command"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 120);
}

// How the Python side ended decides a status through the protocol's fields (error_status) and
// the child's wait status, never through a message's wording (docs/protocol.md, Errors).
TEST(CorpusRuns, PythonSideEndsTakeTheirStatusFromTheProtocolNotTheWording) {
  TempDir dir("tk-python-ends");
  const fs::path scripts = dir / "scripts";
  fs::create_directories(scripts);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"raises_memory_error", "raise MemoryError('cannot allocate 1 TB')\n"},
      {"killed_by_sigkill", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"},
      {"says_memory_error",
       "raise ValueError('MemoryError: the Python side was killed by signal 9')\n"},
      {"memory_error_in_export",
       "import torch\n\n\nclass Big(torch.nn.Module):\n    def forward(self, x):\n"
       "        if torch.onnx.is_in_onnx_export():\n"
       "            raise MemoryError('export needs 1 TB')\n        return x * 2\n\n\n"
       "big = Big()\nbig(torch.rand(1, 4))\n"},
      // torch reports its allocator's failure as a RuntimeError with the allocator's text.
      {"torch_cannot_allocate", "import torch\ntorch.empty(2 ** 45)\n"},
      {"says_bad_alloc", "raise ValueError('std::bad_alloc')\n"},
      // pybind11's text for a Python object it could not allocate (the TorchScript exporter's
      // serialized graph under --memory-limit: the transformers corpus's timesfm at 8.4 GB).
      {"bindings_cannot_allocate", "raise RuntimeError('Could not allocate bytes object!')\n"},
  };
  std::vector<std::string> args;
  for (const auto& [name, body] : cases) {
    std::ofstream(scripts / (name + ".py")) << body;
    args.push_back((scripts / (name + ".py")).string());
  }
  args.insert(args.end(), {"--process-isolation", "--iterations", "5"});
  RunResult r = run_turnkey(args, dir / "cache", {}, {}, 600);
  ASSERT_FALSE(r.timed_out) << r.all();
  EXPECT_EQ(r.exit_code, 1) << r.all();
  const std::map<std::string, std::string> expected = {
      {"raises_memory_error", "out_of_memory"},     {"killed_by_sigkill", "crashed (signal 9)"},
      {"says_memory_error", "discovery_failed"},    {"memory_error_in_export", "out_of_memory"},
      {"torch_cannot_allocate", "out_of_memory"},   {"says_bad_alloc", "discovery_failed"},
      {"bindings_cannot_allocate", "out_of_memory"}};
  for (const auto& [name, status] : expected) {
    const std::string record = record_of(dir / "cache", name);
    ASSERT_FALSE(record.empty()) << name << " has no record\n" << r.all();
    std::string got = yaml_string(record, "status");
    if (!yaml_string(record, "signal").empty())
      got += " (signal " + yaml_string(record, "signal") + ")";
    EXPECT_EQ(got, status) << name << ":\n" << record;
  }
  // The build whose export raised MemoryError records it as its status, at export-pytorch.
  bool found = false;
  for (const auto& e : fs::directory_iterator(dir / "cache")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("memory_error_in_export_", 0) != 0) continue;
    const std::string state = slurp(e.path() / (name + "_state.yaml"));
    found = true;
    EXPECT_EQ(yaml_string(state, "status"), "out_of_memory") << state;
    EXPECT_EQ(yaml_string(state, "failed_tool"), "export-pytorch") << state;
  }
  EXPECT_TRUE(found) << "memory_error_in_export.py started no build\n" << r.all();
  // The summary shows the signal with the crash.
  EXPECT_NE(r.out.find("crashed (signal 9)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace turnkey::test
