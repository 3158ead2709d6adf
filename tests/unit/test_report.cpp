// turnkey report: CSV quoting, the documented column set, merged caches, failures and
// unreadable build dirs as rows (JSON, HTML and report files: test_report_outputs.cpp; compare:
// test_compare.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <regex>
#include <set>

#include "report_test_util.h"
#include "support/fake_cache.h"
#include "support/temp_dir.h"
#include "turnkey/cache/fields.h"
#include "turnkey/cli/report_commands.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/report/compare.h"
#include "turnkey/report/html_report.h"
#include "turnkey/report/report.h"

namespace turnkey::report {
namespace {

namespace fs = std::filesystem;
using cli::report_main;
using nlohmann::json;
using test::fake_latencies;
using test::FakeBuild;
using test::TempDir;
using test::write_fake_build;
using namespace test_util;

// ---- CSV -----------------------------------------------------------------------------------

TEST(Csv, FieldQuotingFollowsRfc4180) {
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("0.004909"), "0.004909");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("\""), "\"\"\"\"");
  EXPECT_EQ(csv_field("line1\nline2"), "\"line1\nline2\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
  EXPECT_EQ(csv_field(" padded "), "\" padded \"");
  EXPECT_EQ(csv_field("<b>&'x'</b>"), "<b>&'x'</b>");  // nothing special for CSV
  EXPECT_EQ(csv_field("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(Csv, CellsRoundTripThroughAStrictReader) {
  const std::vector<std::string> nasty = {
      "a,b", "quote \"q\"", "multi\nline", "cr\r\nlf", " lead",
      "",    "plain",       ",",           "\"\"",     "x'y<z>&"};
  std::vector<Row> rows;
  for (const std::string& s : nasty) {
    Row r;
    r.cells["cache"] = "c";
    r.cells["model_name"] = s;
    r.cells["error"] = s + s;
    rows.push_back(r);
  }
  auto records = parse_csv(to_csv(rows));
  ASSERT_EQ(records.size(), nasty.size() + 1);
  for (size_t i = 0; i < nasty.size(); ++i) {
    auto m = as_map(records[0], records[i + 1]);
    EXPECT_EQ(records[i + 1].size(), columns().size());
    EXPECT_EQ(m["model_name"], nasty[i]);
    EXPECT_EQ(m["error"], nasty[i] + nasty[i]);
  }
}

TEST(Csv, TextASpreadsheetWouldRunAsAFormulaIsWrittenAsText) {
  // A corpus script names its model and its error: such text must not become a formula.
  for (const char* formula : {"=HYPERLINK(\"http://x\",\"y\")", "+1+cmd|' /C calc'!A0", "-2+3",
                              "@SUM(A1)", "\tx", "\rx"}) {
    EXPECT_EQ(csv_cell_text(json(formula)), std::string("'") + formula);
  }
  EXPECT_EQ(csv_cell_text(json("resnet=18")), "resnet=18");  // only the first character counts
  EXPECT_EQ(csv_cell_text(json(-1.5)), "-1.5");              // a number stays a number
  EXPECT_EQ(csv_cell_text(json(-3)), "-3");
  EXPECT_EQ(csv_cell_text(json("")), "");
  Row r;
  r.cells["cache"] = "c";
  r.cells["model_name"] = "=1+1";
  r.cells["median_latency_ms"] = -0.5;
  const auto records = parse_csv(to_csv({r}));
  ASSERT_EQ(records.size(), 2u);
  auto m = as_map(records[0], records[1]);
  EXPECT_EQ(m["model_name"], "'=1+1");
  EXPECT_EQ(m["median_latency_ms"], "-0.5");
}

TEST(Csv, NumbersKeepFullPrecisionAndMissingIsEmpty) {
  EXPECT_EQ(cell_text(json(0.0013183)), "0.0013183");
  EXPECT_EQ(cell_text(json(7.04002267e-05)), "7.04002267e-05");
  EXPECT_EQ(cell_text(json(100)), "100");
  EXPECT_EQ(cell_text(json()), "");
  EXPECT_EQ(std::stod(cell_text(json(0.1 + 0.2))), 0.1 + 0.2);  // shortest round-trip
}

// ---- Column set ----------------------------------------------------------------------------

TEST(Columns, HeaderIsExactlyTheDocumentedOne) {
  const std::string docs = read_file(fs::path(TURNKEY_SOURCE_DIR) / "docs" / "report.md");
  // docs/report.md shows the header line verbatim in a code block ...
  EXPECT_NE(docs.find("\n" + csv_header() + "\n"), std::string::npos)
      << "docs/report.md must show this header verbatim:\n"
      << csv_header();
  // ... and documents every column in its table, in the same order.
  std::regex row_re(R"(\n\| `([a-z0-9_]+)` \|)");
  std::vector<std::string> documented;
  for (std::sregex_iterator it(docs.begin(), docs.end(), row_re), end; it != end; ++it) {
    documented.push_back((*it)[1]);
  }
  std::vector<std::string> names;
  for (const Column& c : columns()) names.push_back(c.name);
  EXPECT_EQ(documented, names);
}

TEST(Columns, HoldTheRequiredSetOnce) {
  std::set<std::string> names;
  for (const Column& c : columns()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
  for (const char* required : {"cache",
                               "build_name",
                               "script",
                               "model_name",
                               "class",
                               "hash",
                               "labels",
                               "parameters",
                               "input_shapes",
                               "sequence",
                               "runtime",
                               "device",
                               "runtime_version",
                               "iterations",
                               "mean_latency_ms",
                               "median_latency_ms",
                               "median_ci_low_ms",
                               "median_ci_high_ms",
                               "p90_latency_ms",
                               "p99_latency_ms",
                               "std_ms",
                               "throughput_ips",
                               "peak_memory_bytes",
                               "max_abs_error",
                               "status",
                               "last_stage",
                               "error"}) {
    EXPECT_TRUE(names.count(required)) << required;
  }
  EXPECT_EQ(csv_header().substr(0, 17), "cache,build_name,");
}

// ---- Reading caches ------------------------------------------------------------------------

TEST(ReadCache, SuccessfulBuildFillsEveryMeasuredColumn) {
  TempDir d;
  FakeBuild b{.build_name = "net_aaaaaaaa",
              .hash_full = hash64('a'),
              .samples_ms = fake_latencies(2.0, 50, 1)};
  write_fake_build(d / "c", b);
  fs::create_directories(d / "c" / "discovery_logs");  // not a build dir: skipped
  auto rows = read_cache(d / "c", "c");
  ASSERT_EQ(rows.size(), 1u);
  const Row& r = rows[0];
  EXPECT_EQ(r.text("status"), "successful");
  EXPECT_EQ(r.text("hash"), "aaaaaaaa");
  EXPECT_EQ(r.text("input_shapes"), "x:1x16");
  EXPECT_EQ(r.text("sequence"), "discover export-pytorch benchmark");
  EXPECT_EQ(r.text("last_stage"), "benchmark");
  EXPECT_EQ(r.cells.at("iterations"), 50);
  // The stats YAML keeps 10 significant digits.
  const LatencyStats st = compute_stats(b.samples_ms);
  EXPECT_NEAR(r.number("median_latency_ms"), st.median_ms, st.median_ms * 1e-9);
  EXPECT_NEAR(r.number("std_ms"), st.std_ms, st.std_ms * 1e-9);
  EXPECT_EQ(r.samples_ms, b.samples_ms);
  EXPECT_FALSE(r.has("peak_memory_bytes"));  // not recorded: an empty cell, not 0
  EXPECT_FALSE(r.has("error"));
}

TEST(ReadCache, FailedAndIncompleteBuildsAreRowsWithStageAndOneLineError) {
  TempDir d;
  write_fake_build(d / "c", {.build_name = "bad_bbbbbbbb",
                             .status = "failed",
                             .failed_tool = "export-pytorch",
                             .error = "torch.onnx.export failed\nTraceback (most recent...)"});
  write_fake_build(d / "c", {.build_name = "cut_cccccccc", .status = "incomplete"});
  auto rows = read_cache(d / "c", "c");
  ASSERT_EQ(rows.size(), 2u);
  const Row* bad = find_row(rows, "c", "bad_bbbbbbbb");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->text("status"), "failed");
  EXPECT_EQ(bad->text("last_stage"), "export-pytorch");
  EXPECT_EQ(bad->text("error"), "torch.onnx.export failed");
  EXPECT_FALSE(bad->has("median_latency_ms"));
  const Row* cut = find_row(rows, "c", "cut_cccccccc");
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->text("status"), "incomplete");
  EXPECT_EQ(cut->text("last_stage"), "export-pytorch");
  EXPECT_NE(cut->text("error").find("did not finish"), std::string::npos);

  // In CSV: a full-width record with empty cells for what was never measured.
  auto records = parse_csv(to_csv(rows));
  ASSERT_EQ(records.size(), 3u);
  auto m = as_map(records[0], records[1]);
  EXPECT_EQ(records[1].size(), columns().size());
  EXPECT_EQ(m["status"], "failed");
  EXPECT_EQ(m["median_latency_ms"], "");
  EXPECT_EQ(m["runtime"], "");
  EXPECT_EQ(m["error"], "torch.onnx.export failed");
}

TEST(ReadCache, CorruptYamlBecomesAnUnreadableRowAndTheRestIsRead) {
  TempDir d;
  const fs::path c = d / "c";
  write_fake_build(c, {.build_name = "good_11111111", .samples_ms = fake_latencies(1, 20, 2)});
  fs::path broken_state =
      write_fake_build(c, {.build_name = "s_22222222", .samples_ms = fake_latencies(1, 20, 3)});
  std::ofstream(broken_state / "s_22222222_state.yaml") << "build_status: [unclosed\n";
  fs::path broken_stats =
      write_fake_build(c, {.build_name = "t_33333333", .samples_ms = fake_latencies(1, 20, 4)});
  std::ofstream(broken_stats / "turnkey_stats.yaml") << "- just\n- a list\n";
  fs::path wrong_type =
      write_fake_build(c, {.build_name = "w_44444444", .samples_ms = fake_latencies(1, 20, 5)});
  std::string stats = read_file(wrong_type / "turnkey_stats.yaml");
  stats = std::regex_replace(stats, std::regex("median_latency_ms: [^\n]*"),
                             "median_latency_ms: \"fast\"");
  std::ofstream(wrong_type / "turnkey_stats.yaml") << stats;
  fs::create_directories(c / "orphan_55555555");
  std::ofstream(c / "orphan_55555555" / "turnkey_stats.yaml") << "model_name: \"x\"\n";

  auto rows = read_cache(c, "c");
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(find_row(rows, "c", "good_11111111")->text("status"), "successful");
  const Row* s = find_row(rows, "c", "s_22222222");
  EXPECT_EQ(s->text("status"), "unreadable");
  EXPECT_NE(s->text("error").find("state file s_22222222_state.yaml: invalid YAML"),
            std::string::npos)
      << s->text("error");
  EXPECT_EQ(s->text("model_name"), "model");  // what the readable stats say is kept
  const Row* t = find_row(rows, "c", "t_33333333");
  EXPECT_EQ(t->text("status"), "unreadable");
  EXPECT_NE(t->text("error").find("stats file turnkey_stats.yaml is not a mapping"),
            std::string::npos)
      << t->text("error");
  const Row* w = find_row(rows, "c", "w_44444444");
  EXPECT_EQ(w->text("status"), "unreadable");
  EXPECT_NE(w->text("error").find("median_latency_ms is not a number"), std::string::npos);
  const Row* o = find_row(rows, "c", "orphan_55555555");
  EXPECT_EQ(o->text("status"), "unreadable");
  EXPECT_NE(o->text("error").find("state file orphan_55555555_state.yaml missing"),
            std::string::npos);
  for (const Row& r : rows) EXPECT_EQ(r.text("error").find('\n'), std::string::npos);
}

TEST(ReadCache, MissingCacheDirIsAnInputError) {
  TempDir d;
  try {
    read_caches({(d / "nope").string()});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos);
  }
}

TEST(Merge, CacheColumnNamesEachRowsCacheAndDuplicatesAreMarkedNotDropped) {
  TempDir d;
  const std::string a = (d / "machine-a").string(), b = (d / "machine-b").string();
  // The same model (hash) in both caches on ort/x86: a duplicate. On another runtime: not.
  write_fake_build(a, {.build_name = "net_aaaaaaaa",
                       .hash_full = hash64('a'),
                       .samples_ms = fake_latencies(2, 30, 1)});
  write_fake_build(a, {.build_name = "other_bbbbbbbb",
                       .hash_full = hash64('b'),
                       .samples_ms = fake_latencies(3, 30, 2)});
  write_fake_build(b, {.build_name = "net_aaaaaaaa",
                       .hash_full = hash64('a'),
                       .samples_ms = fake_latencies(2.1, 30, 3)});
  write_fake_build(b, {.build_name = "renamed_aaaaaaaa",
                       .hash_full = hash64('a'),
                       .runtime = "torch-eager",
                       .samples_ms = fake_latencies(9, 30, 4)});

  Report report = read_caches({a, b + "/"});
  ASSERT_EQ(report.rows.size(), 4u);
  ASSERT_EQ(report.caches.size(), 2u);
  EXPECT_EQ(report.caches[1].label, b);  // trailing slash dropped
  EXPECT_EQ(report.caches[0].builds, 2);
  EXPECT_EQ(report.duplicate_rows, 1);
  EXPECT_FALSE(find_row(report.rows, a, "net_aaaaaaaa")->has("duplicate_of"));
  EXPECT_EQ(find_row(report.rows, b, "net_aaaaaaaa")->text("duplicate_of"), a + "/net_aaaaaaaa");
  EXPECT_FALSE(find_row(report.rows, b, "renamed_aaaaaaaa")->has("duplicate_of"));

  auto records = parse_csv(to_csv(report.rows));
  ASSERT_EQ(records.size(), 5u);
  std::vector<std::string> caches;
  for (size_t i = 1; i < records.size(); ++i)
    caches.push_back(as_map(records[0], records[i])["cache"]);
  EXPECT_EQ(caches, (std::vector<std::string>{a, a, b, b}));

  EXPECT_THROW(read_caches({a, a}), Error);  // same cache twice
  EXPECT_THROW(read_caches({a, (d / "machine-a/.").string()}), Error);
}

TEST(Merge, SameModelInTwoScriptsOfOneCacheIsADuplicateToo) {
  // The content hash leaves out the script (docs/hashing.md): two scripts holding one model
  // benchmarked on one runtime and device measure the same thing.
  TempDir d;
  const std::string c = (d / "c").string();
  write_fake_build(c, {.build_name = "hello_aaaaaaaa",
                       .hash_full = hash64('a'),
                       .samples_ms = fake_latencies(2, 20, 1)});
  write_fake_build(c, {.build_name = "two_models_aaaaaaaa",
                       .hash_full = hash64('a'),
                       .samples_ms = fake_latencies(2, 20, 2)});
  Report r = read_caches({c});
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.duplicate_rows, 1);
  EXPECT_EQ(r.rows[1].text("duplicate_of"), c + "/hello_aaaaaaaa");
}

TEST(ReadCache, OnnxInputsWithSymbolicDimsAndScalars) {
  TempDir d;
  BuildDir b(d / "c", "m_12345678");
  b.create();
  b.write_state({{"build_name", "m_12345678"},
                 {"build_status", "failed"},
                 {"failed_tool", "load-onnx"},
                 {"error", "symbolic dims"}});
  b.write_stats({{"model_name", "m"},
                 {"onnx_inputs",
                  {{{"name", "x"}, {"dtype", "FLOAT"}, {"shape", {"batch", 8}}},
                   {{"name", "s"}, {"dtype", "INT64"}, {"shape", json::array()}}}}});
  auto rows = read_cache(d / "c", "c");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].text("input_shapes"), "x:batchx8,s:()");
  EXPECT_EQ(rows[0].text("status"), "failed");
  EXPECT_EQ(rows[0].text("last_stage"), "load-onnx");
  EXPECT_EQ(rows[0].samples_note, "");  // no runtime: no samples expected
}

}  // namespace
}  // namespace turnkey::report
