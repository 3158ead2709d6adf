// End-to-end: corpus runs stopped from outside (docs/corpus_runs.md): Ctrl-C cancels the running
// input and a rerun runs it again; without cgroups the watchdog still stops a fork storm; a turnkey
// killed outright takes the user's scripts with it.
#include "corpus_runs_support.h"

namespace turnkey::test {
namespace {

// Ctrl-C (SIGINT) to a corpus run stops the running input with it, records it as cancelled,
// still prints the summary, and exits with 128 + 2; a rerun runs the cancelled input again.
TEST(CorpusRuns, InterruptedRunCancelsItsInputAndARerunRunsItAgain) {
  TempDir dir("tk-interrupt");
  const fs::path out = dir / "out.txt";
  pid_t pid = start_turnkey_job(dir.path(),
                                {(kHostile / "infinite_loop.py").string(), "--process-isolation"});
  std::vector<pid_t> pids = wait_for_pids(dir.path(), 1);
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

// A Ctrl-C in a terminal reaches the whole foreground process group: the workers of a -j run die
// of the same SIGINT, and may be reaped before turnkey's own handler has run. Their inputs are
// cancelled all the same (not crashed, which a rerun would skip as failed). Here the workers get
// the signal 50 ms before turnkey, the order that lost the race.
TEST(CorpusRuns, ACtrlCToTheWholeGroupCancelsEveryRunningInput) {
  TempDir dir("tk-interrupt-group");
  std::vector<std::string> args;
  for (const char* name : {"loop_a.py", "loop_b.py"}) {
    fs::copy_file(kHostile / "infinite_loop.py", dir / name);
    args.push_back((dir / name).string());
  }
  args.insert(args.end(), {"-j", "2"});
  const fs::path out = dir / "out.txt";
  pid_t pid = start_turnkey_job(dir.path(), args);
  std::vector<pid_t> pids = wait_for_pids(dir.path(), 2);
  ASSERT_EQ(pids.size(), 2u) << "the scripts never started\n" << slurp(out);
  // turnkey's children are its workers (each runs one input and its script).
  std::istringstream children(
      slurp(fs::path("/proc") / std::to_string(pid) / "task" / std::to_string(pid) / "children"));
  pid_t worker;
  int workers = 0;
  while (children >> worker) workers += kill(worker, SIGINT) == 0;
  EXPECT_EQ(workers, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kill(-pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string text = slurp(out);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 130) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex("\n  cancelled +2\n"))) << text;
  for (const char* stem : {"loop_a", "loop_b"}) {
    EXPECT_EQ(yaml_string(record_of(dir / "cache", stem), "status"), "cancelled") << stem;
  }
  EXPECT_EQ(still_running(pids), "");
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
    std::vector<std::string> args = {(kHostile / "infinite_loop.py").string()};
    if (isolated) args.push_back("--process-isolation");
    pid_t pid = start_turnkey_job(dir.path(), args);
    std::vector<pid_t> pids = wait_for_pids(dir.path(), 1);
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
