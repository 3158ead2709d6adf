// The protocol as a boundary (docs/reliability.md): scripts that find the Python side's channel
// and write forged, malformed, oversized and out-of-turn messages and replies to the real event
// pipe (tests/data/forged, the words each failure must say in expected.txt). In one run with a
// good script, with and without --sandbox: each forged script fails with its one line, the core
// stays up, the good script is benchmarked, and nothing a forged reply names is read.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "e2e_util.h"
#include "support/temp_dir.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;

const fs::path kForged = fs::path(TURNKEY_SOURCE_DIR) / "tests" / "data" / "forged";
const fs::path kGood = fs::path(TURNKEY_SOURCE_DIR) / "tests" / "data" / "hostile" / "good_linear.py";

std::vector<std::pair<std::string, std::string>> expected_failures() {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream in(kForged / "expected.txt");
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    out.emplace_back(line.substr(0, space), line.substr(line.find_first_not_of(' ', space)));
  }
  return out;
}

// Lines of `text` holding `words`.
std::vector<std::string> lines_with(const std::string& text, const std::string& words) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(words) != std::string::npos) found.push_back(line);
  }
  return found;
}

class ForgedProtocol : public ::testing::TestWithParam<bool> {};

TEST_P(ForgedProtocol, EachForgedScriptFailsInOneLineAndTheGoodOneIsBenchmarked) {
  TempDir dir("tk-e2e-forged");
  const auto expected = expected_failures();
  ASSERT_EQ(expected.size(), 7u);
  std::vector<std::string> args;
  for (const auto& [script, words] : expected) args.push_back((kForged / script).string());
  args.push_back(kGood.string());
  for (const char* a : {"--iterations", "5", "--warmup", "1"}) args.push_back(a);
  if (GetParam()) args.push_back("--sandbox");
  const RunResult r = run_turnkey(args, dir.path() / "cache", {}, dir.path());
  // The core stays up: it ends by itself, with "some inputs failed".
  ASSERT_EQ(r.signal, 0) << r.all();
  EXPECT_EQ(r.exit_code, 1) << r.all();
  for (const auto& [script, words] : expected) {
    EXPECT_FALSE(lines_with(r.all(), words).empty()) << script << ": " << words << "\n" << r.all();
  }
  EXPECT_EQ(lines_with(r.out, "Successfully benchmarked").size(), 1u) << r.out;
  // Nothing a forged reply named was read or copied: no file of the cache holds /etc/passwd's.
  std::ifstream passwd("/etc/passwd");
  std::string first;
  std::getline(passwd, first);
  ASSERT_FALSE(first.empty());
  EXPECT_TRUE(files_holding(dir.path() / "cache", first).empty());
}

// Bytes of `text` that act on a terminal: C0 controls but tab and newline, DEL, and C1 controls
// (U+0080-U+009F, UTF-8 C2 80 to C2 9F).
size_t terminal_controls(const std::string& text) {
  size_t n = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    n += (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f ||
         (c == 0xc2 && next >= 0x80 && next <= 0x9f);
  }
  return n;
}

TEST(TerminalGuard, ControlCharactersFromAScriptOrAFileNameArePrintedAsEscapes) {
  TempDir dir("tk-e2e-terminal");
  // A model class whose name clears the screen, recolours it, rings and overwrites its line; a
  // file name with a CSI (C1) and an ESC in it.
  std::ofstream(dir.path() / "esc.py")
      << "import torch\n\n\nclass Evil(torch.nn.Module):\n    def __init__(self):\n"
         "        super().__init__()\n        self.fc = torch.nn.Linear(4, 2)\n\n"
         "    def forward(self, x):\n        return self.fc(x)\n\n\n"
         "Evil.__name__ = Evil.__qualname__ = \"Evil\\x1b[2J\\x1b[31mRED\\x07\\rOVER\\x9b\"\n"
         "Evil()(torch.randn(1, 4))\n";
  const std::string missing = (dir.path() / "gone\x1b[2J\xc2\x9b.onnx").string();
  const RunResult r = run_turnkey({(dir.path() / "esc.py").string(), missing, "--build-only"},
                                  dir.path() / "cache", {}, dir.path());
  EXPECT_EQ(r.exit_code, 1) << r.all();  // the missing file failed, the script did not
  EXPECT_EQ(terminal_controls(r.out), 0u) << r.out;
  EXPECT_EQ(terminal_controls(r.err), 0u) << r.err;
  EXPECT_NE(r.out.find("Class:          Evil\\x1b[2J\\x1b[31mRED\\x07\\x0dOVER\\u009b"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("gone\\x1b[2J\\u009b.onnx"), std::string::npos) << r.err;
}

// Warnings are allowed but bounded: what is kept is copied into each build's discover log, so a
// script sending 180 MB of them must not write 180 MB per build (nor hold it in the core).
TEST(ForgedProtocolWarnings, AFloodOfWarningsIsCountedNotKept) {
  TempDir dir("tk-e2e-warnings");
  const RunResult r = run_turnkey(
      {(kForged / "warning_flood.py").string(), "--iterations", "5", "--warmup", "1"},
      dir.path() / "cache", {}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(lines_with(r.out, "Successfully benchmarked").size(), 1u) << r.out;
  std::vector<fs::path> logs;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() / "cache")) {
    if (e.path().filename() == "log_discover.txt") logs.push_back(e.path());
  }
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_LE(fs::file_size(logs[0]), (size_t{1} << 20) + 65536);
  // 1 MiB holds 17 warnings of 60 KB: the other 2983 are counted.
  EXPECT_NE(slurp(logs[0]).find("warning: 2983 more warnings not kept"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(SandboxOrNot, ForgedProtocol, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "sandbox" : "plain"; });

}  // namespace
}  // namespace turnkey::test
