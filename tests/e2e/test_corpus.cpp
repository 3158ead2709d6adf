// End-to-end: the selftest corpus (models/selftest) through the default sequence, then a report
// of its cache, as a user would run them.
#include <gtest/gtest.h>

#include "e2e_util.h"
#include "support/temp_dir.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;

TEST(Corpus, SelftestCorpusBenchmarksEveryScriptAndReports) {
  const fs::path corpus = fs::path(TURNKEY_SOURCE_DIR) / "models" / "selftest";
  std::vector<std::string> scripts;
  for (const auto& e : fs::directory_iterator(corpus)) {
    if (e.path().extension() == ".py") scripts.push_back(e.path().string());
  }
  std::sort(scripts.begin(), scripts.end());
  ASSERT_GE(scripts.size(), 5u);
  TempDir dir("tk-e2e-corpus");

  RunResult where = run_turnkey({"models", "location", "--quiet"}, dir / "cache");
  EXPECT_EQ(where.exit_code, 0);
  EXPECT_EQ(fs::weakly_canonical(where.out.substr(0, where.out.find('\n'))),
            fs::weakly_canonical(corpus.parent_path()));

  std::vector<std::string> args = scripts;
  args.insert(args.end(), {"--iterations", "5"});
  RunResult r = run_turnkey(args, dir / "cache", {}, {}, 900);
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_FALSE(looks_like_crash(r));
  for (const std::string& s : scripts) {
    EXPECT_NE(r.out.find(fs::path(s).filename().string() + ":"), std::string::npos) << s;
  }
  EXPECT_EQ(count_occurrences(r.out, "Successfully benchmarked"), static_cast<int>(scripts.size()))
      << r.out;

  RunResult report = run_turnkey({"report", "-d", (dir / "cache").string(), "-r",
                                  (dir / "reports").string()},
                                 dir / "cache");
  EXPECT_EQ(report.exit_code, 0) << report.all();
  std::string csv;
  for (const auto& e : fs::directory_iterator(dir / "reports")) {
    if (e.path().extension() == ".csv") csv = slurp(e.path());
  }
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(count_occurrences(csv, ",successful,"), static_cast<int>(scripts.size())) << csv;
}

}  // namespace
}  // namespace turnkey::test
