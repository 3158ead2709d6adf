// Discovery acceptance tests (issue 3), written from the user's side: inputs and options: --max-depth, --labels, .txt lists, build names, the interpreter.
// The runs several tests share and the report readers are in discovery_support.h.
#include "discovery_support.h"

namespace turnkey::test {
namespace {

// README: exit code 2 is a usage error. A negative depth is one, whatever the inputs.
TEST(DiscoveryInputs, NegativeMaxDepthIsAUsageError) {
  RunResult r = run_turnkey({script("label_a.py"), "--max-depth", "-1", "--analyze-only"},
                            cache_of("negative-depth"), {{"TURNKEY_TRACEBACK", ""}}, {}, 120);
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_NE(r.err.find("--max-depth"), std::string::npos) << r.all();
  EXPECT_EQ(r.out.find("label_a ran"), std::string::npos) << r.all();
}

TEST(DiscoveryInputs, LabelsSelectScriptsAndEveryLabelMustMatch) {
  const std::vector<std::string> scripts = {script("label_a.py"), script("label_b.py"),
                                            script("label_none.py")};
  std::vector<std::string> args = scripts;
  args.insert(args.end(), {"--labels", "test_group::b", "author::alice", "--analyze-only"});
  const RunResult& both = run_once("labels-both", args);
  EXPECT_EQ(both.exit_code, 0) << both.all();
  EXPECT_NE(both.out.find("label_a ran"), std::string::npos) << both.out;
  EXPECT_EQ(both.out.find("label_b ran"), std::string::npos) << both.out;  // author differs
  EXPECT_EQ(both.out.find("label_none ran"), std::string::npos) << both.out;
  EXPECT_FALSE(model_block(script_block(both.out, "label_a.py"), "label_a_model").empty());

  // Tool-sequence form; test_group::b matches a script labelled test_group::a,b.
  args = {"-i"};
  args.insert(args.end(), scripts.begin(), scripts.end());
  args.insert(args.end(), {"--labels", "test_group::b", "discover"});
  const RunResult& one = run_once("labels-one", args);
  EXPECT_EQ(one.exit_code, 0) << one.all();
  EXPECT_NE(one.out.find("label_a ran"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("label_b ran"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("label_none ran"), std::string::npos) << one.out;
}

TEST(DiscoveryInputs, TxtListsNameGlobsRegexesAndListsAndCyclesAreErrors) {
  TempDir dir("tk-e2e-lists");
  fs::create_directories(dir / "sub");
  for (const char* name : {"label_a.py", "label_b.py", "label_none.py"}) {
    fs::copy_file(kScripts / name, dir.path() / "sub" / name);
  }
  // top.txt -> nested.txt -> a glob, and sub/regex.txt -> a regular expression (relative to
  // the folder of the list that holds it).
  write_bytes(dir / "top.txt", "# a comment line\nnested.txt\n");
  write_bytes(dir / "nested.txt", "sub/label_b*.py\nsub/regex.txt\n");
  write_bytes(dir.path() / "sub" / "regex.txt", "^label_n.*\\.py$\n");
  const RunResult& r = run_once("lists", {(dir / "top.txt").string(), "--analyze-only"});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(count_occurrences(r.out, "label_b ran"), 1) << r.all();
  EXPECT_EQ(count_occurrences(r.out, "label_none ran"), 1) << r.all();
  EXPECT_EQ(count_occurrences(r.out, "label_a ran"), 0) << r.all();

  write_bytes(dir / "a.txt", "b.txt\n");
  write_bytes(dir / "b.txt", "sub/label_a.py\na.txt\n");
  RunResult cycle = run_turnkey({(dir / "a.txt").string(), "--analyze-only"},
                                cache_of("lists-cycle"), {{"TURNKEY_TRACEBACK", ""}}, {}, 60);
  EXPECT_FALSE(cycle.timed_out);
  EXPECT_NE(cycle.exit_code, 0);
  EXPECT_FALSE(looks_like_crash(cycle)) << cycle.all();
  EXPECT_NE(cycle.all().find("cycle"), std::string::npos) << cycle.all();
  EXPECT_EQ(count_occurrences(cycle.out, "label_a ran"), 1) << cycle.all();  // the rest ran
}

TEST(DiscoveryInputs, BuildNamesAreSanitizedAndNeverCollide) {
  TempDir dir("tk-e2e-names");
  // Two scripts holding the same model (one hash) whose stems sanitize alike: a non-ASCII
  // letter, a space and brackets, and a name made of what they turn into.
  const std::vector<std::string> names = {"w\xc3\xabird (1).py", "w__ird__1_.py"};
  std::vector<std::string> args;
  for (const std::string& n : names) {
    fs::copy_file(kScripts / "collide.py", dir.path() / n);
    args.push_back((dir.path() / n).string());
  }
  args.push_back("--build-only");
  const RunResult& r = run_once("names", args, {{"TURNKEY_ONNX_OPSET", "14"}});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  std::vector<fs::path> builds = build_dirs(cache_of("names"));
  ASSERT_EQ(builds.size(), names.size()) << r.all();
  std::set<std::string> inputs;
  for (const fs::path& build : builds) {
    SCOPED_TRACE(build.string());
    EXPECT_TRUE(
        std::regex_match(build.filename().string(), std::regex(R"([A-Za-z0-9_.\-]+_[0-9a-f]{8})")));
    inputs.insert(state_of(build)["input"].get<std::string>());
    EXPECT_EQ(stats_of(build)["onnx_opset"], 14);  // TURNKEY_ONNX_OPSET
  }
  EXPECT_EQ(inputs.size(), names.size());  // each build holds its own script's model
  std::set<std::string> printed;
  for (const std::string& d : fields(r.out, "Build dir")) printed.insert(d);
  EXPECT_EQ(printed.size(), names.size()) << r.out;
}

TEST(DiscoveryInputs, PythonInterpreterIsFoundOrChosenAndTorchIsRequired) {
  // An interpreter without torch: Debian's, with site-packages switched off.
  TempDir dir("tk-e2e-python");
  fs::create_directories(dir / "bin");
  const fs::path no_torch = dir.path() / "bin" / "python3";
  write_bytes(no_torch, "#!/bin/sh\nexec " + torch_python() + " -S \"$@\"\n");
  fs::permissions(no_torch, fs::perms::owner_all);
  const std::string target = script("label_a.py");

  RunResult flag = run_turnkey({"--python", no_torch.string(), target, "--analyze-only"},
                               cache_of("python"), {{"TURNKEY_PYTHON", ""}});
  EXPECT_NE(flag.exit_code, 0);
  EXPECT_FALSE(looks_like_crash(flag)) << flag.all();
  EXPECT_NE(flag.all().find("torch"), std::string::npos) << flag.all();
  EXPECT_NE(flag.all().find(no_torch.string()), std::string::npos) << flag.all();
  EXPECT_EQ(flag.out.find("label_a ran"), std::string::npos);

  RunResult env = run_turnkey({target, "--analyze-only"}, cache_of("python"),
                              {{"TURNKEY_PYTHON", no_torch.string()}});
  EXPECT_NE(env.exit_code, 0);
  EXPECT_NE(env.all().find("TURNKEY_PYTHON"), std::string::npos) << env.all();
  EXPECT_NE(env.all().find("torch"), std::string::npos) << env.all();

  RunResult missing = run_turnkey({"--python", (dir / "nowhere").string(), target},
                                  cache_of("python"), {{"TURNKEY_PYTHON", ""}});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.all().find((dir / "nowhere").string()), std::string::npos) << missing.all();

  // --python wins over TURNKEY_PYTHON.
  const RunResult& chosen =
      run_once("python-flag-wins", {"--python", torch_python(), target, "--analyze-only"},
               {{"TURNKEY_PYTHON", no_torch.string()}});
  EXPECT_EQ(chosen.exit_code, 0) << chosen.all();
  EXPECT_NE(chosen.out.find("label_a ran"), std::string::npos);

  // Without a choice: the first python3 on PATH has no torch, Debian's /usr/bin/python3 has.
  const char* path = std::getenv("PATH");
  const RunResult& found =
      run_once("python-search", {target, "--analyze-only"},
               {{"TURNKEY_PYTHON", ""},
                {"PATH", (dir / "bin").string() + ":" + (path ? path : "/usr/bin:/bin")}});
  EXPECT_EQ(found.exit_code, 0) << found.all();
  EXPECT_NE(found.out.find("label_a ran"), std::string::npos) << found.all();
}

}  // namespace
}  // namespace turnkey::test
