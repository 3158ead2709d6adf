#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/console/report_printer.h"
#include "turnkey/catalog/tools.h"

namespace turnkey {
namespace {

using nlohmann::json;

TEST(BuildNames, SanitizedAndNeverAPath) {
  EXPECT_EQ(make_build_name("hello_world", "479b1332"), "hello_world_479b1332");
  EXPECT_EQ(make_build_name("../../etc/passwd", "00000000"), "_.._etc_passwd_00000000");
  EXPECT_EQ(make_build_name("..", "abc"), "model_abc");
  EXPECT_EQ(make_build_name("my model (v2)", "1"), "my_model__v2__1");
  for (const char* bad : {"", ".", "..", "a/b", "/etc"}) EXPECT_FALSE(is_safe_build_name(bad)) << bad;
  EXPECT_TRUE(is_safe_build_name("hello_world_479b1332"));
}

TEST(CacheDir, FlagThenEnvThenDefault) {
  setenv("TURNKEY_CACHE_DIR", "/tmp/from-env", 1);
  EXPECT_EQ(resolve_cache_dir("/tmp/from-flag"), "/tmp/from-flag");
  EXPECT_EQ(resolve_cache_dir(""), "/tmp/from-env");
  unsetenv("TURNKEY_CACHE_DIR");
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(resolve_cache_dir(""), "/home/someone/.cache/turnkey");
  EXPECT_EQ(resolve_cache_dir("~/c"), "/home/someone/c");
}

TEST(Yaml, RoundTripKeepsTypesAndPrecision) {
  json v = {{"median_latency_ms", 0.0013183},
            {"iterations", 100},
            {"name", "123"},  // a string that looks like a number stays a string
            {"flag", true},
            {"ops", {{"MatMul", 1}, {"Relu", 2}}},
            {"shape", {1, 16}},
            {"empty", ""}};
  json back = json_from_yaml(yaml_from_json(v));
  EXPECT_EQ(back, v);
  EXPECT_DOUBLE_EQ(back["median_latency_ms"].get<double>(), 0.0013183);
}

TEST(Yaml, BrokenYamlIsACacheError) {
  EXPECT_THROW(json_from_yaml("a: [1, 2"), Error);
}

// What the kind of error is when a cache file (another process's, or a forged one) is not YAML
// turnkey can read; the message names the reason.
std::string cache_error_of(const std::string& yaml_text) {
  try {
    json_from_yaml(yaml_text);
  } catch (const Error& e) {
    return e.kind() == ErrorKind::Cache ? e.what() : "another kind: " + std::string(e.what());
  }
  return "no error";
}

TEST(Yaml, AnAliasInsideItsOwnNodeIsRefusedNotFollowedForever) {
  // Found by the cache_records fuzz campaign: a stack overflow before the walk was bounded.
  const std::string cycle = "a: &x {b: [0, 2.5, trc: *x]}\nc: *x\n";
  EXPECT_NE(cache_error_of(cycle).find("invalid YAML: its aliases expand to more values"),
            std::string::npos)
      << cache_error_of(cycle);
  // In a file with room for the values, the depth stops it.
  const std::string padded = cycle + "pad: \"" + std::string(4096, 'x') + "\"\n";
  EXPECT_NE(cache_error_of(padded).find("invalid YAML: nested deeper than 256 levels"),
            std::string::npos)
      << cache_error_of(padded);
}

TEST(Yaml, AliasesThatExpandExponentiallyAreRefusedAtOnce) {
  // Each level names the one before it ten times: 10^12 values from 300 bytes.
  std::string text = "l0: &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i <= 12; ++i) {
    text += fmt::format("l{0}: &l{0} [", i);
    for (int j = 0; j < 10; ++j) text += fmt::format("{}*l{}", j ? ", " : "", i - 1);
    text += "]\n";
  }
  EXPECT_NE(cache_error_of(text).find("expand to more values than the file has bytes"),
            std::string::npos);
  // A few aliases, as a hand-edited file may have, still read.
  const json few = json_from_yaml("base: &b {threads: 2}\nrun1: *b\nrun2: *b\n");
  EXPECT_EQ(few["run2"]["threads"], 2);
  // As does deep nesting that stays within the bound.
  std::string deep(200, '[');
  deep += std::string(200, ']');
  EXPECT_NO_THROW(json_from_yaml(deep));
  // Past it, a cache error, not a crash: yaml-cpp's own parser or the walk refuses it.
  const std::string deeper = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(cache_error_of(deeper).find("invalid YAML"), std::string::npos)
      << cache_error_of(deeper);
}

TEST(BuildDir, WritesStateAndStatsAtomically) {
  test::TempDir d;
  BuildDir b(d.path() / "cache", "m_12345678");
  b.create();
  b.write_state({{"build_status", "incomplete"}});
  b.write_state({{"build_status", "successful"}});
  EXPECT_EQ(json_from_yaml(read_file(b.state_path()))["build_status"], "successful");
  EXPECT_EQ(b.state_path().filename(), "m_12345678_state.yaml");
  EXPECT_THROW(BuildDir(d.path(), "../escape"), Error);
}

TEST(Printer, LatencyKeepsFourSignificantDigits) {
  EXPECT_EQ(format_latency(0.0013183), "0.001318");
  EXPECT_EQ(format_latency(12.3456), "12.35");
  EXPECT_EQ(format_latency(1234.56), "1235");
  EXPECT_EQ(format_latency(0.5), "0.5000");
}

TEST(Tools, ClosestName) {
  std::vector<std::string> names = {"discover", "load-onnx", "benchmark", "export-pytorch"};
  EXPECT_EQ(closest_name("benchmrk", names), "benchmark");
  EXPECT_EQ(closest_name("lod-onnx", names), "load-onnx");
  EXPECT_EQ(closest_name("zzzzzzzzzzzz", names), "");
  // Never the word itself (issue 17: "'load-onnx' is not a sequence tool (did you mean
  // 'load-onnx'?)").
  EXPECT_EQ(closest_name("load-onnx", names), "");
}

TEST(Tools, TableHasEveryGroupAndDefaults) {
  const ToolSpec* bench = find_tool("benchmark");
  ASSERT_NE(bench, nullptr);
  json d = default_tool_options(*bench);
  EXPECT_EQ(d["iterations"], 100);
  EXPECT_EQ(d["runtime"], "ort");
  EXPECT_EQ(find_tool("discover")->group, ToolGroup::First);
  EXPECT_EQ(find_tool("version")->group, ToolGroup::Management);
  EXPECT_EQ(find_tool("nope"), nullptr);
}

}  // namespace
}  // namespace turnkey
