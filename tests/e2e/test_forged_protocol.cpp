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
  ASSERT_EQ(expected.size(), 6u);
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

INSTANTIATE_TEST_SUITE_P(SandboxOrNot, ForgedProtocol, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "sandbox" : "plain"; });

}  // namespace
}  // namespace turnkey::test
