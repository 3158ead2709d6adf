// Help built from the parsers (issue 17): the classic grammar's help groups every option under
// its section, `turnkey -h` lists every global and classic-only option, `benchit` is the classic
// grammar under its own name, and TURNKEY_TRACEBACK defaults to on.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "turnkey/cli/cli.h"
#include "turnkey/cli/grammar.h"
#include "turnkey/cli/help.h"
#include "turnkey/common/env.h"
#include "turnkey/catalog/tools.h"

namespace turnkey {
namespace {

// What `f` writes to `stream` (std::cout or std::cerr).
template <typename F>
std::string captured(std::ostream& stream, F f) {
  std::ostringstream text;
  std::streambuf* old = stream.rdbuf(text.rdbuf());
  try {
    f();
  } catch (...) {
    stream.rdbuf(old);
    throw;
  }
  stream.rdbuf(old);
  return text.str();
}

// The text of one section of a CLI11 help ("Benchmark:" up to the next blank line).
std::string section(const std::string& help, const std::string& title) {
  const size_t at = help.find("\n" + title + ":\n");
  if (at == std::string::npos) return "";
  return help.substr(at, help.find("\n\n", at + 1) - at);
}

TEST(ClassicHelp, EveryToolOptionIsInItsToolsSection) {
  const std::string help = captured(std::cout, [] {
    EXPECT_FALSE(parse_classic_grammar({"benchmark", "-h"}, "turnkey benchmark -h"));
  });
  const std::vector<std::pair<std::string, std::string>> tool_sections = {
      {"discover", "Discovery"},
      {"load-onnx", "Inputs"},
      {"export-pytorch", "Build"},
      {"benchmark", "Benchmark"}};
  for (const auto& [tool, title] : tool_sections) {
    const std::string text = section(help, title);
    ASSERT_FALSE(text.empty()) << title << "\n" << help;
    for (const OptionSpec& o : find_tool(tool)->options) {
      // --batch-sizes belongs to both first tools: the classic grammar shows it once, in Inputs.
      const std::string& where = o.key == "batch_sizes" ? section(help, "Inputs") : text;
      // export-pytorch's --opset is the classic --onnx-opset,--opset.
      EXPECT_NE(where.find(o.long_flag()), std::string::npos) << o.long_flag() << "\n" << where;
    }
  }
  EXPECT_NE(section(help, "Build").find("--onnx-opset,--opset"), std::string::npos);
  EXPECT_NE(section(help, "Corpus runs").find("--use-slurm"), std::string::npos);
  EXPECT_LT(help.find("\nInputs:"), help.find("\nDiscovery:"));
  EXPECT_LT(help.find("\nDiscovery:"), help.find("\nBuild:"));
  EXPECT_LT(help.find("\nBuild:"), help.find("\nBenchmark:"));
  EXPECT_LT(help.find("\nBenchmark:"), help.find("\nCorpus runs:"));
}

TEST(ClassicHelp, BenchitIsTheClassicGrammarUnderItsOwnName) {
  const std::string help = captured(
      std::cout, [] { EXPECT_FALSE(parse_classic_grammar_as("benchit", {"-h"}, "benchit -h")); });
  EXPECT_NE(help.find("Usage: benchit benchmark [OPTIONS]"), std::string::npos) << help;
  EXPECT_NE(help.find("`benchit INPUT...` is short for `benchit benchmark INPUT...`"),
            std::string::npos);
  std::optional<RunRequest> r =
      parse_classic_grammar_as("benchit", {"benchmark", "a.py", "--build-only"}, "benchit ...");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->global.inputs, std::vector<std::string>{"a.py"});

  // The tool grammar is turnkey's: benchit refuses it with one line, exit code 2.
  std::vector<std::string> words = {"/somewhere/benchit", "-i", "a.py", "discover"};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  int code = -1;
  const std::string err =
      captured(std::cerr, [&] { code = cli_main(static_cast<int>(argv.size()), argv.data()); });
  EXPECT_EQ(code, 2);
  EXPECT_EQ(err.rfind("benchit: error: benchit takes the classic grammar", 0), 0u) << err;
}

TEST(MainHelp, ListsEveryGlobalAndClassicOnlyOption) {
  const std::string help = captured(std::cout, [] { print_main_help(); });
  const std::vector<HelpPage> pages = help_pages();
  ASSERT_FALSE(pages.empty());
  ASSERT_EQ(pages.front().args, std::vector<std::string>{"-h"});
  for (const std::string& word : pages.front().accepted) {
    EXPECT_NE(help.find(word), std::string::npos) << word << "\n" << help;
  }
  for (const char* o : {"--lean-cache", "--rebuild", "--sequence", "--sequence-file"}) {
    EXPECT_NE(help.find(std::string("  ") + o + " "), std::string::npos) << o;
  }
}

TEST(Environment, TracebacksAreShownUnlessTurnkeyTracebackIsFalse) {
  const char* saved = std::getenv("TURNKEY_TRACEBACK");
  const std::string before = saved ? saved : "";
  unsetenv("TURNKEY_TRACEBACK");
  EXPECT_TRUE(show_tracebacks());
  setenv("TURNKEY_TRACEBACK", "", 1);
  EXPECT_TRUE(show_tracebacks());
  setenv("TURNKEY_TRACEBACK", "False", 1);
  EXPECT_FALSE(show_tracebacks());
  setenv("TURNKEY_TRACEBACK", "0", 1);
  EXPECT_FALSE(show_tracebacks());
  setenv("TURNKEY_TRACEBACK", "True", 1);
  EXPECT_TRUE(show_tracebacks());
  setenv("TURNKEY_TRACEBACK", "maybe", 1);
  try {
    show_tracebacks();
    ADD_FAILURE() << "TURNKEY_TRACEBACK=maybe accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_STREQ(e.what(), "TURNKEY_TRACEBACK=maybe: expected True or False");
  }
  if (saved) {
    setenv("TURNKEY_TRACEBACK", before.c_str(), 1);
  } else {
    unsetenv("TURNKEY_TRACEBACK");
  }
}

}  // namespace
}  // namespace turnkey
