// The ONNX backend node tests shipped by Debian's libonnx-testdata, given to turnkey as inputs:
// none may crash it; each either benchmarks or gets a one-line reason.
#include <gtest/gtest.h>

#include <fstream>

#include "e2e_util.h"
#include "support/temp_dir.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;

TEST(OnnxTestdata, EveryModelBenchmarksOrGetsOneLineReason) {
  const fs::path root = "/usr/share/libonnx-testdata/data";
  if (!fs::exists(root)) GTEST_SKIP() << "libonnx-testdata not installed (scripts/setup installs it)";
  TempDir dir("tk-e2e-testdata");
  std::vector<std::string> models;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.path().extension() == ".onnx") models.push_back(e.path().string());
  }
  std::sort(models.begin(), models.end());
  ASSERT_GT(models.size(), 500u);
  {
    std::ofstream list(dir / "all.txt");
    for (const auto& m : models) list << m << "\n";
  }
  RunResult r = run_turnkey({(dir / "all.txt").string(), "--iterations", "3", "--warmup", "0"},
                            dir / "cache", {}, {}, 1200);
  ASSERT_FALSE(r.timed_out);
  EXPECT_FALSE(looks_like_crash(r)) << r.err.substr(0, 4000);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.exit_code;
  const int benchmarked = count_occurrences(r.out, "Successfully benchmarked");
  const int failed_in_block = count_occurrences(r.out, "Status:         Failed at ");
  const int rejected = count_occurrences(r.err, "turnkey: /usr/share/libonnx-testdata/");
  EXPECT_EQ(benchmarked + failed_in_block + rejected, static_cast<int>(models.size()))
      << "benchmarked " << benchmarked << ", failed " << failed_in_block << ", rejected "
      << rejected;
  // Most node tests are plain tensors in, tensors out: a sanity floor on what runs.
  EXPECT_GT(benchmarked, static_cast<int>(models.size()) / 2);
  // Every rejection is a single line naming the file.
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);) {
    if (line.empty()) continue;
    EXPECT_EQ(line.rfind("turnkey: ", 0), 0u) << line;
  }
  std::cout << "[ testdata ] " << models.size() << " models: " << benchmarked << " benchmarked, "
            << failed_in_block << " failed in a later stage, " << rejected << " rejected\n";
}

}  // namespace
}  // namespace turnkey::test
