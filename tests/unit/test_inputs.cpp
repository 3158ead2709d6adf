#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.h"
#include "turnkey/common/error.h"
#include "turnkey/inputs/inputs.h"

namespace turnkey {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::vector<std::string> names(const std::vector<InputItem>& items) {
  std::vector<std::string> out;
  for (const auto& i : items) out.push_back(i.error.empty() ? i.path.filename().string() : "ERR:" + i.error);
  return out;
}

TEST(Inputs, HashFilterSplit) {
  std::string path;
  std::vector<std::string> hashes;
  split_hash_filter("dir/two_models.py::479B1332, 215ca1e3", path, hashes);
  EXPECT_EQ(path, "dir/two_models.py");
  EXPECT_EQ(hashes, (std::vector<std::string>{"479b1332", "215ca1e3"}));
  split_hash_filter("plain.py", path, hashes);
  EXPECT_EQ(path, "plain.py");
  EXPECT_TRUE(hashes.empty());
}

TEST(Inputs, ListsAreRelativeToTheirFolderAndSkipCommentsAndBlanks) {
  TempDir d;
  write(d / "m/a.onnx", "x");
  write(d / "m/sub/b.py", "x");
  write(d / "m/list.txt", "# comment\n\n  a.onnx  \nsub/b.py::abcd1234\n   # indented comment\n");
  auto items = expand_inputs({(d / "m/list.txt").string()});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].path, (d / "m/a.onnx").lexically_normal());
  EXPECT_EQ(items[1].hashes, std::vector<std::string>{"abcd1234"});
  EXPECT_TRUE(items[0].error.empty());
}

TEST(Inputs, GlobsRegexesNestedListsAndDuplicates) {
  TempDir d;
  write(d / "a.py", "");
  write(d / "b.py", "");
  write(d / "c.onnx", "");
  write(d / "deep/x_model.py", "");
  write(d / "inner.txt", "c.onnx\n");
  write(d / "outer.txt", "*.py\ninner.txt\ndeep/.*_model\\.py\na.py\n");
  auto items = expand_inputs({(d / "outer.txt").string()});
  EXPECT_EQ(names(items), (std::vector<std::string>{"a.py", "b.py", "c.onnx", "x_model.py"}));
}

TEST(Inputs, MissingEmptyGlobAndDirectoryAreErrorItems) {
  TempDir d;
  fs::create_directories(d / "folder");
  auto items = expand_inputs({(d / "nope.onnx").string(), (d / "*.zzz").string(),
                              (d / "folder").string()});
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].error, "not found");
  EXPECT_EQ(items[1].error, "glob matched no files");
  EXPECT_NE(items[2].error.find("directory"), std::string::npos);
}

TEST(Inputs, ListCycleIsAnErrorNotAHang) {
  TempDir d;
  write(d / "a.txt", "b.txt\n");
  write(d / "b.txt", "a.txt\nok.py\n");
  write(d / "ok.py", "");
  auto items = expand_inputs({(d / "a.txt").string()});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_NE(items[0].error.find("cycle"), std::string::npos);
  EXPECT_EQ(items[1].path.filename(), "ok.py");
}

TEST(Labels, ParseAndMatch) {
  TempDir d;
  write(d / "s.py", "# labels: test_group::a,b author::me\nimport torch\n");
  write(d / "t.py", "#labels domain::nlp\n");
  write(d / "none.py", "import torch\n# labels: x::y\n");
  Labels s = read_labels(d / "s.py");
  EXPECT_EQ(labels_to_string(s), "author::me test_group::a,b");
  EXPECT_TRUE(labels_match(s, {"test_group::a"}));
  EXPECT_TRUE(labels_match(s, {"test_group::b", "author::me"}));
  EXPECT_FALSE(labels_match(s, {"test_group::c"}));
  EXPECT_FALSE(labels_match(s, {"test_group::a", "author::you"}));  // every label must match
  EXPECT_TRUE(labels_match(read_labels(d / "t.py"), {"domain::nlp"}));
  EXPECT_TRUE(read_labels(d / "none.py").empty());  // only the first line counts
  EXPECT_THROW(labels_match(s, {"test_group"}), Error);
}

}  // namespace
}  // namespace turnkey
