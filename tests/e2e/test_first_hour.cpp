// The first hour of a new user (issue 32): mistakes on the command line are refused when it is
// read, with one line and exit 2, options go where users put them, peers' flags and values get a
// hint naming turnkey's, and the closing line says what happened.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>

#include "e2e_util.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;

namespace {

using namespace turnkey::test;

struct UsageCase {
  std::vector<std::string> args;
  std::string error;  // a part of the one line on stderr
};

void expect_usage_error(const UsageCase& c, const fs::path& cache) {
  std::string shown;
  for (const std::string& a : c.args) shown += a + " ";
  SCOPED_TRACE(shown);
  RunResult r = run_turnkey(c.args, cache);
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_EQ(count_occurrences(r.err, "\n"), 1) << r.err;
  EXPECT_NE(r.err.find(c.error), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;  // refused before anything ran
}

TEST(FirstHour, CommandLineMistakesAreRefusedWhenItIsRead) {
  TempDir dir("tk-first-hour");
  const fs::path model = dir / "linear.onnx";
  turnkey::test::linear_relu(model);
  const std::string m = model.string();
  { std::ofstream(dir / "a_file") << "x"; }
  fs::create_directories(dir / "locked");
  ::chmod((dir / "locked").c_str(), 0555);
  const bool root = ::geteuid() == 0;  // root writes where the mode says no
  std::vector<UsageCase> cases = {
      // The cache folder: checked before any input runs.
      {{m, "-d", (dir / "a_file" / "cache").string()}, "a_file is a file"},
      {{m, "-d", "CPU"}, "benchmark_app's -d is the device: turnkey's is --device x86"},
      // Thread counts within a bound of the CPUs.
      {{m, "--threads", "999"}, "--threads 999: more than 4 per CPU this process may use"},
      // Values: did you mean, also for names other tools use.
      {{m, "--runtime", "onnxruntime"}, "(did you mean 'ort'?)"},
      {{m, "--runtime", "ORT"}, "(did you mean 'ort'?)"},
      {{m, "--device", "cpu"}, "(did you mean 'x86'?)"},
      // Peers' flags name turnkey's.
      {{m, "-niter", "200"}, "benchmark_app's flag for calls to time; turnkey's: --iterations N"},
      {{m, "-nireq", "4"}, "turnkey's: --concurrency N"},
      {{m, "-hint", "latency"}, "'-hint': that is benchmark_app's flag"},
      {{m, "-r", "200"}, "onnxruntime_perf_test's flag for repetitions; turnkey's: --iterations N"},
      {{m, "-x", "2"}, "turnkey's: --threads N"},
      {{m, "--warmUp=200"}, "trtexec's flag for warm-up milliseconds"},
      {{"-i", m, "benchmark", "-niter", "5"}, "turnkey's: --iterations N"},
      // A run's option given to a command that does not take it: where it goes.
      {{"system-info", "--rebuild", "never"},
       "system-info: unknown option '--rebuild': it is an option of runs"},
      {{"--rebuild", "never", "system-info"}, "it is an option of runs"},
      // Values the parser itself refuses, in the words of turnkey's own checks.
      {{m, "--iterations", "abc"}, "--iterations 'abc': expected a whole number"},
      {{m, "--duration", "soon"}, "--duration 'soon': expected a number"},
      {{m, "--timeout", "-1"}, "--timeout -1: expected a number more than 0"},
      {{m, "-j", "0"}, "--jobs 0: expected a number from 1 to 1024"},
  };
  if (!root) cases.push_back({{m, "-d", (dir / "locked" / "c").string()}, "is not writable"});
  for (const UsageCase& c : cases) expect_usage_error(c, dir / "cache");
  EXPECT_FALSE(fs::exists("CPU"));  // nothing was created for the refused -d CPU
  ::chmod((dir / "locked").c_str(), 0755);
}

TEST(FirstHour, GlobalOptionsAreTakenWhereverTheyAre) {
  TempDir dir("tk-first-hour-place");
  const fs::path cache = dir / "my cache";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"system-info", "-d", cache.string()},
        std::vector<std::string>{"-d", cache.string(), "system-info"}}) {
    RunResult r = run_turnkey(args, dir / "other");
    EXPECT_EQ(r.exit_code, 0) << r.all();
    EXPECT_NE(r.out.find("Cache dir:        " + cache.string() + "\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("State dir:"), std::string::npos) << r.out;
  }
}

TEST(FirstHour, AnEmptyListIsNamedAndTheClosingLineSaysWhatHappened) {
  TempDir dir("tk-first-hour-list");
  const fs::path model = dir / "linear.onnx";
  turnkey::test::linear_relu(model);
  { std::ofstream(dir / "empty.txt") << "# nothing yet\n\n"; }
  RunResult empty = run_turnkey({(dir / "empty.txt").string()}, dir / "cache");
  EXPECT_EQ(empty.exit_code, 1) << empty.all();
  EXPECT_NE(empty.all().find("empty.txt"), std::string::npos) << empty.all();
  EXPECT_NE(empty.all().find("input list names no inputs"), std::string::npos) << empty.all();
  EXPECT_NE(empty.out.find("Done with failures: 1 of 1 input failed"), std::string::npos)
      << empty.out;
  EXPECT_EQ(empty.all().find("Woohoo"), std::string::npos) << empty.all();

  RunResult ok = run_turnkey({model.string(), "--iterations", "5"}, dir / "cache");
  EXPECT_EQ(ok.exit_code, 0) << ok.all();
  EXPECT_NE(ok.out.find("Done: the input finished without a failure."), std::string::npos)
      << ok.out;
  // No field is printed empty.
  EXPECT_FALSE(std::regex_search(ok.out, std::regex(":[ \t]+\n"))) << ok.out;
}

}  // namespace
