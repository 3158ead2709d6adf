// End-to-end: how a corpus run schedules its inputs (docs/corpus_runs.md): -j runs builds in
// parallel and benchmarks one at a time, pinned away from the builds; a rerun resumes (skips what
// is complete), reruns what changed, and --retry-failed the failures.
#include "corpus_runs_support.h"

namespace turnkey::test {
namespace {

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

}  // namespace
}  // namespace turnkey::test
