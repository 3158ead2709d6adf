// End-to-end: corpus runs (docs/corpus_runs.md) with the built binary. The hostile corpus
// (tests/data/hostile, each script's expected status in expected_status.txt) mixed with good
// scripts under -j 2 and limits: every input ends with its status, the good ones are benchmarked,
// nothing the corpus started is left running. Then -j scheduling (benchmarks one at a time),
// resume and --retry-failed, TURNKEY_TIMEOUT_SECONDS, and a killed turnkey taking its workers and
// scripts with it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "e2e_util.h"
#include "support/temp_dir.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;

const fs::path kHostile = fs::path(TURNKEY_SOURCE_DIR) / "tests" / "data" / "hostile";

// A process that still exists and is not a zombie waiting for its reaper.
bool alive(pid_t pid) {
  std::string stat = slurp(fs::path("/proc") / std::to_string(pid) / "stat");
  if (stat.empty()) return false;
  size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

std::vector<pid_t> recorded_pids(const fs::path& pid_dir) {
  std::vector<pid_t> pids;
  std::ifstream in(pid_dir / "pids.txt");
  pid_t p;
  while (in >> p) pids.push_back(p);
  return pids;
}

std::string still_running(const std::vector<pid_t>& pids) {
  // A killed process can be a zombie for a moment; give reapers a short while.
  std::string left;
  for (int attempt = 0; attempt < 20; ++attempt) {
    left.clear();
    for (pid_t p : pids) {
      if (!alive(p)) continue;
      left.push_back(' ');
      left.append(std::to_string(p));
    }
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return left;
}

// The input record of `script` (inputs/<stem>_<hash8>.yaml) as text; "" when missing.
std::string record_of(const fs::path& cache, const std::string& stem) {
  for (const auto& e : fs::directory_iterator(cache / "inputs")) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".yaml" && name.rfind(stem + "_", 0) == 0 &&
        name.size() == stem.size() + 1 + 8 + 5) {
      return slurp(e.path());
    }
  }
  return "";
}

std::string yaml_string(const std::string& text, const std::string& key) {
  std::smatch m;
  if (std::regex_search(text, m, std::regex("(^|\n)" + key + ": \"?([^\"\n]*)\"?"))) return m[2];
  return "";
}

std::vector<std::pair<std::string, std::string>> expected_statuses() {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream in(kHostile / "expected_status.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t sp = line.find(' ');
    std::string status = line.substr(line.find_first_not_of(' ', sp));
    out.push_back({line.substr(0, sp), status});
  }
  return out;
}

std::string write_script(const fs::path& dir, const std::string& name, int width) {
  fs::create_directories(dir);
  fs::path p = dir / name;
  std::ofstream(p) << "import torch\n\ntorch.manual_seed(0)\nmodel = torch.nn.Sequential("
                      "torch.nn.Linear("
                   << width << ", 8), torch.nn.ReLU())\n"
                   << "model(torch.randn(1, " << width << "))\n";
  return p.string();
}

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

TEST(CorpusRuns, ParallelBuildsBenchmarkOneAtATimeAndRerunsResume) {
  TempDir dir("tk-parallel");
  std::vector<std::string> scripts;
  for (int i = 0; i < 4; ++i) {
    scripts.push_back(write_script(dir / "corpus", "tiny_" + std::to_string(i) + ".py", 8 + i));
  }
  scripts.push_back((kHostile / "sys_exit.py").string());
  std::vector<std::string> args = scripts;
  args.insert(args.end(), {"-j", "2", "--iterations", "200", "--timeout", "120"});
  RunResult first = run_turnkey(args, dir / "cache", {}, {}, 280);
  ASSERT_FALSE(first.timed_out);
  EXPECT_EQ(first.exit_code, 1) << first.all();
  EXPECT_NE(first.out.find("Corpus summary: 5 inputs"), std::string::npos) << first.out;
  EXPECT_TRUE(std::regex_search(first.out, std::regex("\n  successful +4\n"))) << first.out;
  EXPECT_TRUE(std::regex_search(first.out, std::regex("\n  discovery_failed +1\n"))) << first.out;

  // Benchmarks never overlapped in time (from the workers' progress events).
  std::vector<std::pair<std::string, std::string>> intervals;  // ISO timestamps sort as text
  for (const auto& e : fs::directory_iterator(dir / "cache" / "inputs")) {
    if (e.path().string().find(".progress.jsonl") == std::string::npos) continue;
    std::string start;
    std::ifstream in(e.path());
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (line.find("\"benchmark\"") == std::string::npos) continue;
      if (!std::regex_search(line, m, std::regex("\"t\":\"([^\"]+)\""))) continue;
      if (line.find("\"start\"") != std::string::npos) start = m[1];
      if (line.find("\"end\"") != std::string::npos) intervals.push_back({start, m[1]});
    }
  }
  ASSERT_EQ(intervals.size(), 5u);  // sys_exit.py's model is benchmarked before it exits
  std::sort(intervals.begin(), intervals.end());
  for (size_t i = 1; i < intervals.size(); ++i) {
    EXPECT_LE(intervals[i - 1].second, intervals[i].first) << "benchmarks overlapped";
  }

  // A rerun skips what is complete, and the failure (no --retry-failed).
  RunResult second = run_turnkey(args, dir / "cache", {}, {}, 120);
  EXPECT_EQ(second.exit_code, 1) << second.all();
  EXPECT_NE(second.out.find("(5 from an earlier run)"), std::string::npos) << second.all();
  EXPECT_EQ(count_occurrences(second.err, "in an earlier run, skipped"), 5) << second.err;
  EXPECT_EQ(second.err.find("turnkey: [1/"), std::string::npos) << "nothing should run";

  // A changed script runs again; --retry-failed reruns the failure too.
  write_script(dir / "corpus", "tiny_0.py", 20);
  args.push_back("--retry-failed");
  RunResult third = run_turnkey(args, dir / "cache", {}, {}, 280);
  EXPECT_EQ(third.exit_code, 1) << third.all();
  EXPECT_NE(third.out.find("(3 from an earlier run)"), std::string::npos) << third.all();
  EXPECT_NE(third.err.find("tiny_0.py\n"), std::string::npos) << third.err;
  EXPECT_NE(third.err.find("sys_exit.py: discovery_failed"), std::string::npos) << third.err;

  // A deleted build makes its input incomplete again.
  for (const auto& e : fs::directory_iterator(dir / "cache")) {
    if (e.path().filename().string().rfind("tiny_1_", 0) == 0) fs::remove_all(e.path());
  }
  args.pop_back();
  RunResult fourth = run_turnkey(args, dir / "cache", {}, {}, 280);
  EXPECT_NE(fourth.out.find("(4 from an earlier run)"), std::string::npos) << fourth.all();
  EXPECT_NE(fourth.err.find("] " + scripts[1] + "\n"), std::string::npos) << fourth.err;
}

// A benchmark that asks for fewer cores than the machine has runs pinned to them while the other
// inputs' builds go on, pinned to the remaining cores (progress events record both sides).
TEST(CorpusRuns, ABenchmarkOnOneCoreKeepsBuildsOffThatCore) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs at least 2 CPUs";
  TempDir dir("tk-pinned");
  std::vector<std::string> args;
  for (int i = 0; i < 3; ++i) {
    args.push_back(write_script(dir / "corpus", "tiny_" + std::to_string(i) + ".py", 8 + i));
  }
  args.insert(args.end(), {"-j", "2", "--threads", "1", "--iterations", "2000"});
  RunResult r = run_turnkey(args, dir / "cache", {}, {}, 280);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  std::set<std::string> benchmark_cpus, build_cpus;
  int benchmarks = 0;
  for (const auto& e : fs::directory_iterator(dir / "cache" / "inputs")) {
    if (e.path().string().find(".progress.jsonl") == std::string::npos) continue;
    std::ifstream in(e.path());
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (!std::regex_search(line, m, std::regex("\"cpus\":\\[([0-9,]*)\\]"))) continue;
      if (line.find("\"phase\":\"start\"") != std::string::npos) {
        ++benchmarks;
        benchmark_cpus.insert(m[1]);
      } else if (line.find("\"for\"") != std::string::npos) {
        build_cpus.insert(m[1]);  // pinned away while another input's benchmark ran
      }
    }
  }
  EXPECT_EQ(benchmarks, 3);
  ASSERT_EQ(benchmark_cpus.size(), 1u);
  const std::string mine = *benchmark_cpus.begin();
  EXPECT_EQ(mine.find(','), std::string::npos) << "a 1-thread benchmark got CPUs " << mine;
  for (const std::string& cpus : build_cpus) {
    std::stringstream ss(cpus);
    std::string c;
    while (std::getline(ss, c, ',')) EXPECT_NE(c, mine) << "builds shared the benchmark's CPU";
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
      {"raises_memory_error", "out_of_memory"},   {"killed_by_sigkill", "crashed (signal 9)"},
      {"says_memory_error", "discovery_failed"},  {"memory_error_in_export", "out_of_memory"},
      {"torch_cannot_allocate", "out_of_memory"}, {"says_bad_alloc", "discovery_failed"}};
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

// Ctrl-C (SIGINT) to a corpus run stops the running input with it, records it as cancelled,
// still prints the summary, and exits with 128 + 2; a rerun runs the cancelled input again.
TEST(CorpusRuns, InterruptedRunCancelsItsInputAndARerunRunsItAgain) {
  TempDir dir("tk-interrupt");
  fs::create_directories(dir / "pids");
  const fs::path out = dir / "out.txt";
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    setenv("HOSTILE_PID_DIR", (dir / "pids").c_str(), 1);
    setenv("TURNKEY_CACHE_DIR", (dir / "cache").c_str(), 1);
    setenv("TURNKEY_BUILD_MONITOR", "False", 1);
    std::string bin = turnkey_binary(), script = (kHostile / "infinite_loop.py").string();
    execl(bin.c_str(), bin.c_str(), script.c_str(), "--process-isolation", nullptr);
    _exit(127);
  }
  std::vector<pid_t> pids;
  for (int i = 0; i < 600 && pids.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pids = recorded_pids(dir / "pids");
  }
  ASSERT_FALSE(pids.empty()) << "the script never started";
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << slurp(out);
  EXPECT_EQ(WEXITSTATUS(status), 130) << slurp(out);
  const std::string text = slurp(out);
  EXPECT_TRUE(std::regex_search(text, std::regex("\n  cancelled +1\n"))) << text;
  EXPECT_EQ(yaml_string(record_of(dir / "cache", "infinite_loop"), "status"), "cancelled");
  EXPECT_EQ(still_running(pids), "");
  // The rerun runs the cancelled input again (it is not skipped as done): the script never
  // ends, so it times out, at whatever stage a loaded machine has reached in 2 s.
  RunResult again = run_turnkey({(kHostile / "infinite_loop.py").string(), "--timeout", "2"},
                                dir / "cache", {}, {}, 120);
  EXPECT_TRUE(std::regex_search(again.err, std::regex("timeout \\(last stage: [a-z-]+\\): "
                                                      "exceeded the 2 s timeout")))
      << again.all();
  EXPECT_EQ(again.err.find("in an earlier run, skipped"), std::string::npos) << again.all();
}

// Where turnkey cannot make a pids cgroup (hidden here by an empty tmpfs over the pids hierarchy
// in a private mount namespace), the watchdog counts the processes itself and still stops a fork
// storm (the storm stops by itself at 1024 processes, should both fail).
TEST(CorpusRuns, WithoutCgroupsTheWatchdogStopsAForkStorm) {
  if (access("/usr/bin/unshare", X_OK) != 0 || geteuid() != 0) {
    GTEST_SKIP() << "needs root and unshare(1) to hide the cgroup hierarchy";
  }
  TempDir dir("tk-nocgroup");
  fs::create_directories(dir / "pids");
  const std::string command =
      "mount -t tmpfs none /sys/fs/cgroup/pids 2>/dev/null || mount -t tmpfs none /sys/fs/cgroup"
      " || exit 99; exec \"$0\" \"$@\"";
  RunResult r = run_command(
      {"/usr/bin/unshare", "-m", "sh", "-c", command, turnkey_binary(),
       (kHostile / "fork_storm.py").string(), "--max-processes", "64", "--timeout", "60"},
      {{"HOSTILE_PID_DIR", (dir / "pids").string()},
       {"TURNKEY_CACHE_DIR", (dir / "cache").string()},
       {"TURNKEY_BUILD_MONITOR", "False"}},
      {}, 120);
  if (r.exit_code == 99) GTEST_SKIP() << "cannot mount over the cgroup hierarchy here";
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_NE(r.err.find("process_limit (last stage: discover): tried to run more than 64"),
            std::string::npos)
      << r.all();
  std::vector<pid_t> pids = recorded_pids(dir / "pids");
  EXPECT_GE(pids.size(), 10u);
  EXPECT_LE(pids.size(), 200u) << "the watchdog let the storm grow";
  EXPECT_EQ(still_running(pids), "");
}

// turnkey killed outright (SIGKILL: no handler runs) still takes the user's script with it, in
// the plain mode and in the isolated mode.
TEST(CorpusRuns, KilledTurnkeyLeavesNoScriptRunning) {
  for (bool isolated : {false, true}) {
    TempDir dir("tk-killed");
    fs::create_directories(dir / "pids");
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      dup2(devnull, 2);
      setenv("HOSTILE_PID_DIR", (dir / "pids").c_str(), 1);
      setenv("TURNKEY_CACHE_DIR", (dir / "cache").c_str(), 1);
      std::string bin = turnkey_binary(), script = (kHostile / "infinite_loop.py").string();
      if (isolated) {
        execl(bin.c_str(), bin.c_str(), script.c_str(), "--process-isolation", nullptr);
      } else {
        execl(bin.c_str(), bin.c_str(), script.c_str(), nullptr);
      }
      _exit(127);
    }
    std::vector<pid_t> pids;
    for (int i = 0; i < 600 && pids.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      pids = recorded_pids(dir / "pids");
    }
    ASSERT_FALSE(pids.empty()) << "the script never started";
    ASSERT_TRUE(alive(pids[0]));
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    EXPECT_EQ(still_running(pids), "") << (isolated ? "isolated" : "plain");
    kill(-pid, SIGKILL);  // in case the test fails: leave nothing behind either
  }
}

}  // namespace
}  // namespace turnkey::test
