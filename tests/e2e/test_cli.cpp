// End-to-end: the command line as the documents show it (issue 17). Help lists every option its
// parser accepts (the list comes from the parsers, so a new option cannot go missing unseen);
// `benchit` runs the old tutorial's commands as typed; `cache stats` shows the build's state;
// tracebacks are on the terminal unless TURNKEY_TRACEBACK=False; mistyped words get a "did you
// mean"; one failed input names one log.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "e2e_util.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/cli/help.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using Env = std::vector<std::pair<std::string, std::string>>;

const fs::path kSource = TURNKEY_SOURCE_DIR;
constexpr const char* kTraceback = "Traceback (most recent call last)";

fs::path program_path(const std::string& program) {
  return fs::path(turnkey_binary()).parent_path() / program;
}

// `program` (turnkey or benchit, from build/) with a private cache, as run_turnkey does.
RunResult run_as(const std::string& program, const std::vector<std::string>& args,
                 const fs::path& cache, Env env = {}, const fs::path& cwd = {},
                 double timeout_s = 300) {
  std::vector<std::string> argv = {program_path(program).string()};
  argv.insert(argv.end(), args.begin(), args.end());
  env.insert(env.begin(), {{"TURNKEY_CACHE_DIR", cache.string()},
                           {"TURNKEY_BUILD_MONITOR", "False"},
                           {"TURNKEY_TRACEBACK", "False"}});
  return run_command(argv, env, cwd, timeout_s);
}

// `word` in `text` as a whole word ("--all" is not found in "--all-x" or "--allow").
bool lists(const std::string& text, const std::string& word) {
  auto part = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool starts = at == 0 || !part(text[at - 1]);
    const size_t end = at + word.size();
    if (starts && (end == text.size() || !part(text[end]))) return true;
  }
  return false;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The value after "Label:" on the first line holding it ("" when none).
std::string field(const std::string& text, const std::string& label) {
  for (const std::string& line : lines_of(text)) {
    const size_t at = line.find(label + ":");
    if (at == std::string::npos) continue;
    std::string v = line.substr(at + label.size() + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}

// ---- help --------------------------------------------------------------------------------------

TEST(Help, EveryPageListsEveryOptionItsParserAccepts) {
  const std::vector<HelpPage> pages = help_pages();
  ASSERT_GE(pages.size(), 10u);
  TempDir dir("tk-help");
  for (const HelpPage& page : pages) {
    std::string shown = page.program;
    for (const std::string& a : page.args) shown += " " + a;
    SCOPED_TRACE(shown);
    ASSERT_FALSE(page.accepted.empty());
    RunResult r = run_as(page.program, page.args, dir / "cache", {}, {}, 120);
    EXPECT_EQ(r.exit_code, 0) << r.all();
    for (const std::string& word : page.accepted) {
      EXPECT_TRUE(lists(r.out, word)) << word << " is accepted but not in the help:\n" << r.out;
    }
  }
}

TEST(Help, PagesCoverWhatTheDocumentsAskFor) {
  // What the issue found missing: a parser that drops one of these fails here, not silently.
  auto accepted = [](const std::vector<std::string>& args) {
    for (const HelpPage& p : help_pages()) {
      if (p.program == "turnkey" && p.args == args) return p.accepted;
    }
    return std::vector<std::string>{};
  };
  auto has = [](const std::vector<std::string>& words, const std::string& w) {
    return std::find(words.begin(), words.end(), w) != words.end();
  };
  const std::vector<std::string> main = accepted({"-h"});
  for (const char* o : {"--lean-cache", "--rebuild", "--sequence", "--sequence-file", "--labels",
                        "--cache-dir", "--analyze-only", "--build-only", "--process-isolation"}) {
    EXPECT_TRUE(has(main, o)) << o;
  }
  const std::vector<std::string> classic = accepted({"benchmark", "-h"});
  for (const char* o : {"--analyze-only", "--lean-cache", "--rebuild", "--sequence", "--cache-dir",
                        "--labels", "--build-only", "--max-depth", "--script-args", "--iterations",
                        "--device", "--runtime", "--onnx-opset", "--search-dir", "--all"}) {
    EXPECT_TRUE(has(classic, o)) << o;
  }
  EXPECT_TRUE(has(accepted({"cache", "-h"}), "report"));
  EXPECT_TRUE(has(accepted({"cache", "-h"}), "stats"));
}

TEST(Help, ClassicHelpIsGroupedInTheDocumentsOrder) {
  TempDir dir("tk-help-groups");
  RunResult r = run_as("turnkey", {"benchmark", "-h"}, dir / "cache");
  ASSERT_EQ(r.exit_code, 0) << r.all();
  // Each option in its section: the section's title comes before it and the next title after.
  const std::vector<std::pair<std::string, std::vector<std::string>>> sections = {
      {"Inputs", {"--search-dir", "--labels", "--input-shapes"}},
      {"Discovery", {"--analyze-only", "--max-depth", "--script-args", "--python"}},
      {"Build",
       {"--sequence", "--sequence-file", "--build-only", "--onnx-opset", "--lean-cache",
        "--rebuild", "--cache-dir"}},
      {"Benchmark", {"--device", "--runtime", "--iterations", "--rt-args"}},
      {"Corpus runs", {"--process-isolation", "--use-slurm", "--timeout", "--jobs"}}};
  size_t previous = 0;
  for (size_t i = 0; i < sections.size(); ++i) {
    const size_t at = r.out.find("\n" + sections[i].first + ":\n");
    ASSERT_NE(at, std::string::npos) << sections[i].first << "\n" << r.out;
    EXPECT_GT(at, previous) << sections[i].first;
    const size_t next =
        i + 1 < sections.size() ? r.out.find("\n" + sections[i + 1].first + ":\n") : r.out.size();
    for (const std::string& option : sections[i].second) {
      const size_t o = r.out.find(option, at);
      EXPECT_LT(o, next) << option << " not under " << sections[i].first << "\n" << r.out;
    }
    previous = at;
  }
  EXPECT_NE(r.out.find("Runtimes:"), std::string::npos);  // availability follows the options
}

// ---- benchit -----------------------------------------------------------------------------------

TEST(Benchit, LiesBesideTurnkeyAndSpeaksOnlyTheClassicGrammar) {
  const fs::path benchit = program_path("benchit");
  ASSERT_TRUE(fs::exists(benchit)) << benchit << ": scripts/setup (the CMake build) makes it";
  EXPECT_EQ(fs::canonical(benchit), fs::canonical(turnkey_binary()));
  TempDir dir("tk-benchit");
  RunResult help = run_as("benchit", {"-h"}, dir / "cache");
  EXPECT_EQ(help.exit_code, 0) << help.all();
  EXPECT_NE(help.out.find("Usage: benchit benchmark"), std::string::npos) << help.out;
  RunResult version = run_as("benchit", {"version"}, dir / "cache");
  RunResult turnkey_version = run_as("turnkey", {"version"}, dir / "cache");
  EXPECT_EQ(version.out, turnkey_version.out);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-i", "x.py", "discover"}, {"discover", "x.py"}}) {
    RunResult r = run_as("benchit", args, dir / "cache");
    EXPECT_EQ(r.exit_code, 2) << r.all();
    EXPECT_EQ(count_occurrences(r.err, "\n"), 1) << r.err;
    EXPECT_NE(r.err.find("benchit: error: benchit takes the classic grammar"), std::string::npos)
        << r.err;
  }
  RunResult typo = run_as("benchit", {"x.py", "--iteratons", "5"}, dir / "cache");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(typo.err,
            "benchit: error: unknown option '--iteratons' (did you mean '--iterations'?)\n");
  // The management commands' help names the program it was started as.
  for (const std::string command : {"cache", "models", "version", "system-info", "report"}) {
    RunResult page = run_as("benchit", {command, "-h"}, dir / "cache");
    EXPECT_EQ(page.exit_code, 0) << page.all();
    EXPECT_NE(page.out.find("Usage: benchit " + command), std::string::npos) << page.out;
    EXPECT_EQ(page.out.find("Usage: turnkey"), std::string::npos) << page.out;
    RunResult own = run_as("turnkey", {command, "-h"}, dir / "cache");
    EXPECT_NE(own.out.find("Usage: turnkey " + command), std::string::npos) << own.out;
  }
}

// The `benchit` tutorial (seed 003), in a copy of examples/cli, its commands as typed.
TEST(Benchit, TheTutorialsCommandsWorkAsTyped) {
  TempDir dir("tk-benchit-tutorial");
  const fs::path cli = dir / "cli";
  fs::create_directories(cli);
  fs::copy(kSource / "examples/cli/scripts", cli / "scripts", fs::copy_options::recursive);
  const fs::path cache = dir / "cache";
  auto benchit = [&](const std::vector<std::string>& args) {
    RunResult r = run_as("benchit", args, cache, {}, cli);
    EXPECT_FALSE(looks_like_crash(r)) << r.all();
    return r;
  };
  auto build_of = [&](const fs::path& c, const std::string& prefix) -> std::string {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(c, ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind(prefix + "_", 0) == 0) return n;
    }
    return "";
  };

  RunResult hello = benchit({"scripts/hello_world.py"});
  EXPECT_EQ(hello.exit_code, 0) << hello.all();
  EXPECT_NE(hello.out.find("Successfully benchmarked on"), std::string::npos) << hello.out;
  EXPECT_NE(hello.out.find("Mean Latency:"), std::string::npos);
  const std::string hello_build = build_of(cache, "hello_world");
  ASSERT_FALSE(hello_build.empty());

  // Model hashes: --analyze-only shows them; script.py::HASH builds only that model.
  RunResult two = benchit({"scripts/two_models.py", "--analyze-only"});
  EXPECT_EQ(two.exit_code, 0) << two.all();
  std::vector<std::string> hashes;
  for (const std::string& line : lines_of(two.out)) {
    if (line.find("Hash:") != std::string::npos) hashes.push_back(field(line, "Hash"));
  }
  ASSERT_EQ(hashes.size(), 2u) << two.out;
  RunResult one = benchit({"benchmark", "scripts/two_models.py::" + hashes[1], "--build-only"});
  EXPECT_EQ(one.exit_code, 0) << one.all();
  EXPECT_EQ(count_occurrences(one.out, "Model successfully built"), 1) << one.out;

  // --search-dir and --all.
  RunResult searched =
      benchit({"benchmark", "hello_world.py", "--search-dir", "scripts", "--analyze-only"});
  EXPECT_EQ(searched.exit_code, 0) << searched.all();
  RunResult all = benchit({"benchmark", "--all", "--search-dir", "scripts", "--analyze-only"});
  // keras.py (the tutorial's Keras chapter) needs TensorFlow, which the default interpreter
  // lacks: it fails in one line that says what to install; every other script is listed.
  EXPECT_EQ(all.exit_code, 1) << all.all();
  EXPECT_EQ(count_occurrences(all.out, "scripts/setup-keras installs TensorFlow"), 1) << all.out;
  for (const char* s : {"hello_world.py:", "two_models.py:", "max_depth.py:"}) {
    EXPECT_NE(all.out.find(s), std::string::npos) << s << "\n" << all.out;
  }

  // --cache-dir, cache list --cache-dir, --lean-cache.
  RunResult tmp = benchit({"benchmark", "scripts/hello_world.py", "--cache-dir", "tmp_cache"});
  EXPECT_EQ(tmp.exit_code, 0) << tmp.all();
  RunResult listed = benchit({"cache", "list", "--cache-dir", "tmp_cache"});
  EXPECT_EQ(listed.exit_code, 0) << listed.all();
  EXPECT_NE(listed.out.find("hello_world_"), std::string::npos) << listed.out;
  const std::string tmp_build = build_of(cli / "tmp_cache", "hello_world");
  ASSERT_FALSE(tmp_build.empty());
  EXPECT_TRUE(fs::exists(cli / "tmp_cache" / tmp_build / "onnx"));
  RunResult lean =
      benchit({"benchmark", "scripts/hello_world.py", "--cache-dir", "tmp_cache", "--lean-cache"});
  EXPECT_EQ(lean.exit_code, 0) << lean.all();
  EXPECT_FALSE(fs::exists(cli / "tmp_cache" / tmp_build / "onnx"));
  EXPECT_TRUE(fs::exists(cli / "tmp_cache" / tmp_build / (tmp_build + "_state.yaml")));

  // cache stats: the state (status, sequence, tools with their times), then the stats.
  RunResult stats = benchit({"cache", "stats", hello_build});
  EXPECT_EQ(stats.exit_code, 0) << stats.all();
  EXPECT_NE(stats.out.find("Info: The state of build " + hello_build + " in cache"),
            std::string::npos)
      << stats.out;
  EXPECT_EQ(field(stats.out, "build_status"), "successful") << stats.out;
  EXPECT_EQ(field(stats.out, "sequence"), "discover, export-pytorch, benchmark") << stats.out;
  EXPECT_TRUE(
      std::regex_search(stats.out, std::regex(R"(\n  export-pytorch +successful +\d+\.\d{3} s)")))
      << stats.out;
  EXPECT_NE(stats.out.find("_state.yaml\n"), std::string::npos);
  EXPECT_NE(stats.out.find("turnkey_stats.yaml\n"), std::string::npos);
  EXPECT_NE(stats.out.find("mean_latency_ms:"), std::string::npos);  // the stats themselves
  RunResult print = benchit({"cache", "print", hello_build});
  EXPECT_EQ(print.out, stats.out);

  // --max-depth 1: the sub-modules are built too; --build-only stops before the benchmark.
  RunResult depth =
      benchit({"benchmark", "scripts/max_depth.py", "--max-depth", "1", "--build-only"});
  EXPECT_EQ(depth.exit_code, 0) << depth.all();
  EXPECT_NE(depth.out.find("fc2 (executed"), std::string::npos) << depth.out;
  EXPECT_EQ(count_occurrences(depth.out, "Model successfully built"), 3) << depth.out;

  // cache delete, then cache list no longer shows it.
  const std::string depth_build = build_of(cache, "max_depth");
  ASSERT_FALSE(depth_build.empty());
  RunResult deleted = benchit({"cache", "delete", depth_build});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.all();
  RunResult after = benchit({"cache", "list"});
  EXPECT_EQ(after.out.find(depth_build), std::string::npos) << after.out;
  EXPECT_NE(after.out.find(hello_build), std::string::npos) << after.out;

  // --device nvidia on a machine without one: one line naming why.
  RunResult nvidia = benchit({"scripts/hello_world.py", "--device", "nvidia"});
  EXPECT_EQ(nvidia.exit_code, 1) << nvidia.all();
  EXPECT_NE(nvidia.out.find("no NVIDIA GPU found"), std::string::npos) << nvidia.out;
}

// ---- cache and report commands -----------------------------------------------------------------

TEST(CacheCommands, MistypedWordsGetADidYouMeanAndAMissingCacheIsAnError) {
  TempDir dir("tk-cache-words");
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"cache", "lst"}, "turnkey: error: cache: unexpected argument 'lst' (did you mean 'list'?)"},
      {{"report", "--htm"}, "did you mean '--html'?"},
      {{"cache", "list", "-d", (dir / "missing").string()},
       "turnkey: error: cache: cache dir " + (dir / "missing").string() + " does not exist"},
      {{"cache", "stats", "--all", "-d", (dir / "missing").string()},
       (dir / "missing").string() + " does not exist"},
      {{"cache"}, "turnkey: error: cache: name a command: location, list, stats"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args.front() + " " + c.args.back());
    RunResult r = run_as("turnkey", c.args, dir / "cache");
    EXPECT_EQ(r.exit_code, 2) << r.all();
    EXPECT_EQ(count_occurrences(r.err, "\n"), 1) << r.err;
    EXPECT_NE(r.err.find(c.error), std::string::npos) << r.err;
  }
  // The default cache, or TURNKEY_CACHE_DIR's, before the first run is no error: no builds yet.
  RunResult fresh = run_as("turnkey", {"cache", "list"}, dir / "cache",
                           {{"TURNKEY_CACHE_DIR", ""}, {"HOME", dir.path().string()}});
  EXPECT_EQ(fresh.exit_code, 0) << fresh.all();
  EXPECT_NE(fresh.out.find("No builds in"), std::string::npos) << fresh.out;
  RunResult from_env = run_as("turnkey", {"cache", "list"}, dir / "not-yet");
  EXPECT_EQ(from_env.exit_code, 0) << from_env.all();
  EXPECT_EQ(from_env.out, "No builds in " + (dir / "not-yet").string() + "\n");
  // `cache -d DIR report` is `report -d DIR`.
  fs::create_directories(dir / "cache");
  RunResult report = run_as(
      "turnkey", {"cache", "-d", (dir / "cache").string(), "report", "-r", (dir / "out").string()},
      dir / "other");
  EXPECT_EQ(report.exit_code, 0) << report.all();
  EXPECT_NE(report.out.find("Report of 0 result(s) from 1 cache(s)"), std::string::npos)
      << report.all();
}

// ---- failures: tracebacks and logs -------------------------------------------------------------

class FailingScript : public ::testing::Test {
 protected:
  TempDir dir{"tk-failing"};
  fs::path script() {
    const fs::path p = dir / "bad.py";
    if (!fs::exists(p)) std::ofstream(p) << "raise ValueError(\"x\")\n";
    return p;
  }
};

TEST_F(FailingScript, TracebackIsOnTheTerminalUnlessTurnkeyTracebackIsFalse) {
  RunResult shown = run_as("turnkey", {script().string()}, dir / "cache",
                           {{"TURNKEY_TRACEBACK", ""}});  // unset: the default
  EXPECT_EQ(shown.exit_code, 1) << shown.all();
  EXPECT_NE(shown.err.find(kTraceback), std::string::npos) << shown.all();
  EXPECT_NE(shown.err.find("raise ValueError(\"x\")"), std::string::npos) << shown.all();
  EXPECT_EQ(field(shown.out, "Status"), "Script failed: ValueError: x") << shown.out;

  RunResult hidden =
      run_as("turnkey", {script().string()}, dir / "cache", {{"TURNKEY_TRACEBACK", "False"}});
  EXPECT_EQ(hidden.exit_code, 1) << hidden.all();
  EXPECT_EQ(hidden.all().find(kTraceback), std::string::npos) << hidden.all();
  EXPECT_EQ(field(hidden.out, "Status"), "Script failed: ValueError: x") << hidden.out;
  // Either way the log holds it.
  EXPECT_NE(slurp(field(hidden.out, "Log")).find(kTraceback), std::string::npos);
}

TEST_F(FailingScript, OneFailedInputNamesOneLog) {
  RunResult r = run_as("turnkey", {script().string(), "--process-isolation"}, dir / "cache");
  EXPECT_EQ(r.exit_code, 1) << r.all();
  const std::string block_log = field(r.out, "Log");
  ASSERT_FALSE(block_log.empty()) << r.out;
  EXPECT_NE(slurp(block_log).find(kTraceback), std::string::npos);
  // The summary's row and the stderr line name the same log as the block.
  std::smatch m;
  const std::string out = r.out;
  ASSERT_TRUE(
      std::regex_search(out, m, std::regex(R"(\n  discovery_failed +\S+ +discover +(\S+)\n)")))
      << r.out;
  EXPECT_EQ(m[1].str(), block_log);
  EXPECT_NE(r.err.find("; log: " + block_log), std::string::npos) << r.err;
  std::set<std::string> logs;
  const std::regex path(R"((/[^\s<>]+\.(txt|log))\b)");
  for (const std::string& text : {r.out, r.err}) {
    for (std::sregex_iterator it(text.begin(), text.end(), path), end; it != end; ++it) {
      logs.insert((*it)[1].str());
    }
  }
  EXPECT_EQ(logs.size(), 1u) << r.all();
  // A rerun (resume: the failure stands) names it too.
  RunResult again = run_as("turnkey", {script().string(), "--process-isolation"}, dir / "cache");
  EXPECT_NE(again.out.find(block_log), std::string::npos) << again.all();
}

}  // namespace
}  // namespace turnkey::test
