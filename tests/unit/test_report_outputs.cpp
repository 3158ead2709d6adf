// turnkey report's outputs: JSON, HTML escaping and flags, report file names, report_main
// (the rows themselves: test_report.cpp).
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

// ---- JSON ----------------------------------------------------------------------------------

TEST(Json, SameRowsPlusProvenanceAndSamples) {
  TempDir d;
  const std::string c = (d / "c").string();
  write_fake_build(c, {.build_name = "net_aaaaaaaa",
                       .hash_full = hash64('a'),
                       .samples_ms = fake_latencies(2, 12, 1)});
  write_fake_build(c, {.build_name = "bad_bbbbbbbb",
                       .status = "failed",
                       .failed_tool = "benchmark",
                       .error = "boom"});
  Report report = read_caches({c});
  Provenance p{"2026-11-22T00:00:00.000Z", "turnkey report -d c", machine_fingerprint()};
  json j = json::parse(to_json(report, p));
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["kind"], "turnkey-report");
  EXPECT_EQ(j["turnkey_version"], "0.1.0");
  EXPECT_EQ(j["command_line"], "turnkey report -d c");
  EXPECT_EQ(j["machine"]["fingerprint"].get<std::string>().size(), 16u);
  EXPECT_TRUE(j["machine"].contains("cpu_model"));
  std::string cols;
  for (const auto& c : j["columns"]) cols += (cols.empty() ? "" : ",") + c.get<std::string>();
  EXPECT_EQ(cols, csv_header());
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const auto& r : j["rows"]) {
    for (const Column& col : columns()) EXPECT_TRUE(r.contains(col.name)) << col.name;
  }
  const json& bad = j["rows"][0];
  EXPECT_EQ(bad["build_name"], "bad_bbbbbbbb");
  EXPECT_TRUE(bad["median_latency_ms"].is_null());
  EXPECT_TRUE(bad["samples_ms"].is_null());
  const json& ok = j["rows"][1];
  EXPECT_TRUE(ok["median_latency_ms"].is_number());
  EXPECT_EQ(ok["samples_ms"].size(), 12u);

  // Read back: same cells, same samples.
  Report back = report_from_json(to_json(report, p), "r.json");
  ASSERT_EQ(back.rows.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.rows[i].cells, report.rows[i].cells) << i;
    EXPECT_EQ(back.rows[i].samples_ms, report.rows[i].samples_ms);
  }
  EXPECT_THROW(report_from_json("{\"kind\": \"something else\"}", "x"), Error);
  EXPECT_THROW(report_from_json("not json", "x"), Error);
  json newer = j;
  newer["schema_version"] = kSchemaVersion + 1;
  EXPECT_THROW(report_from_json(newer.dump(), "x"), Error);
}

// Object fields the field table keeps whole (`profile`) travel as rows of the table, not by hand:
// the reader keeps each whole beside its column's part, the JSON report writes each (null when a
// row has none) and reads it back.
TEST(Json, FieldsKeptWholeComeFromTheFieldTable) {
  std::vector<std::string> whole;
  for (const StatsField& f : field_table()) {
    if (!f.whole) continue;
    whole.push_back(f.key);
    EXPECT_EQ(f.type, FieldType::Object) << f.key << ": only a mapping is kept whole";
  }
  EXPECT_EQ(whole, (std::vector<std::string>{"profile"}));
  TempDir d;
  const std::string c = (d / "c").string();
  const json profile = {{"summary", "Gemm 90.0%, Relu 10.0%"},
                        {"calls", 10},
                        {"by_op_type", json::array({{{"op", "Gemm"}, {"total_ms", 0.9}}})}};
  write_fake_build(c, {.build_name = "net_aaaaaaaa",
                       .samples_ms = fake_latencies(2, 12, 1),
                       .extra_stats = {{"profile", profile}}});
  write_fake_build(c, {.build_name = "plain_bbbbbbbb", .samples_ms = fake_latencies(2, 12, 2)});
  const Report report = read_caches({c});
  ASSERT_EQ(report.rows.size(), 2u);
  EXPECT_EQ(report.rows[0].object("profile"), profile);
  EXPECT_EQ(report.rows[0].text("profile_top_ops"), "Gemm 90.0%, Relu 10.0%");
  EXPECT_TRUE(report.rows[1].object("profile").is_null());
  const Provenance p{"2026-11-22T00:00:00.000Z", "turnkey report", json::object()};
  const json j = json::parse(to_json(report, p));
  EXPECT_EQ(j["rows"][0]["profile"], profile);
  EXPECT_TRUE(j["rows"][1].contains("profile"));
  EXPECT_TRUE(j["rows"][1]["profile"].is_null());
  const Report back = report_from_json(j.dump(), "r.json");
  EXPECT_EQ(back.rows[0].object("profile"), profile);
  EXPECT_TRUE(back.rows[1].objects.empty());
}

// ---- HTML ----------------------------------------------------------------------------------

TEST(Html, EscapesEverythingAndDrawsOneBarPerMeasurement) {
  EXPECT_EQ(html_escape("<b>\"x\"&'y'</b>"), "&lt;b&gt;&quot;x&quot;&amp;&#39;y&#39;&lt;/b&gt;");
  TempDir d;
  const std::string a = (d / "a").string(), b = (d / "b").string();
  const std::string nasty = "<script>alert(\"x&y\")</script>'";
  write_fake_build(a, {.build_name = "m1_aaaaaaaa",
                       .model_name = nasty,
                       .hash_full = hash64('a'),
                       .samples_ms = fake_latencies(2, 20, 1)});
  write_fake_build(a, {.build_name = "m2_bbbbbbbb",
                       .hash_full = hash64('b'),
                       .samples_ms = fake_latencies(0.002, 20, 2)});
  write_fake_build(a, {.build_name = "f_cccccccc",
                       .model_name = nasty,
                       .status = "failed",
                       .failed_tool = "benchmark",
                       .error = nasty});
  Report one = read_caches({a});
  Provenance p{"2026-11-22T00:00:00.000Z", "turnkey report <&>", machine_fingerprint()};
  std::string html = to_html(one, p);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt;&#39;"),
            std::string::npos);
  EXPECT_EQ(count_occurrences(html, "<rect class=\"bar\""), 2);
  EXPECT_EQ(latency_chart_bar_count(one.rows), 2);
  EXPECT_NE(html.find("id=\"speedup-none\""), std::string::npos);  // only one runtime
  EXPECT_NE(html.find("log scale"), std::string::npos);            // 2 ms vs 0.002 ms
  EXPECT_NE(html.find("<rect class=\"fail-bar\""), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);  // nothing to fetch
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);

  write_fake_build(b, {.build_name = "m1_aaaaaaaa",
                       .hash_full = hash64('a'),
                       .runtime = "other",
                       .samples_ms = fake_latencies(1, 20, 3)});
  Report two = read_caches({a, b});
  html = to_html(two, p);
  EXPECT_EQ(count_occurrences(html, "<rect class=\"bar\""), 3);
  EXPECT_NE(html.find("id=\"speedup-matrix\""), std::string::npos);
  EXPECT_NE(html.find("ort \u00f7 other</th>"), std::string::npos);
  EXPECT_TRUE(
      std::regex_search(html, std::regex(">(1\\.9\\d|2\\.0\\d)\u00d7</td>")));  // ~2 ms / 1 ms
}

TEST(Html, FlagsAreSplitOnlyBetweenFlagsNotInsideTheirParentheses) {
  // Issue 32: "(10.97 and 11.40 ms; flagged above +20%)" became a label of its own.
  TempDir d;
  const std::string a = (d / "a").string();
  write_fake_build(a, {.build_name = "m1_aaaaaaaa",
                       .hash_full = hash64('a'),
                       .samples_ms = fake_latencies(2, 20, 1)});
  Report r = read_caches({a});
  ASSERT_EQ(r.rows.size(), 1u);
  r.rows[0].cells["measurement_flags"] =
      "machine slowed: both speed probes ran 2.19x (10.97 and 11.40 ms; flagged above +20%): "
      "slower; noisy: the median's 95% CI is +-4.0% (> +-5%)";
  const std::string html =
      to_html(r, {"2026-11-26T00:00:00.000Z", "turnkey report", machine_fingerprint()});
  EXPECT_NE(html.find(">machine slowed, noisy</td>"), std::string::npos) << html;
  EXPECT_EQ(html.find("flagged above +20%), noisy"), std::string::npos);
  // The counts name what they count: results, and the caches' build dirs.
  EXPECT_NE(html.find("<li><b>1</b>results</li>"), std::string::npos);
  EXPECT_NE(html.find("(1 build dir)"), std::string::npos);
}

// ---- compare -------------------------------------------------------------------------------

// ---- report files --------------------------------------------------------------------------

TEST(ReportFiles, StemHasDateAndTime) {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 22;
  tm.tm_hour = 9;
  tm.tm_min = 5;
  tm.tm_sec = 7;
  auto when = std::chrono::system_clock::from_time_t(timegm(&tm));
  EXPECT_EQ(report_stem(when), "turnkey_report_2026-11-22_09-05-07Z");
}

TEST(ReportFiles, NeverOverwriteAnEarlierReport) {
  TempDir d;
  const fs::path dir = d / "reports";
  auto first = write_new_files(dir, "r", {{"csv", "one"}, {"json", "1"}});
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].filename(), "r.csv");
  auto second = write_new_files(dir, "r", {{"csv", "two"}, {"json", "2"}});
  EXPECT_EQ(second[0].filename(), "r_2.csv");
  EXPECT_EQ(second[1].filename(), "r_2.json");
  EXPECT_EQ(read_file(dir / "r.csv"), "one");
  EXPECT_EQ(read_file(dir / "r_2.csv"), "two");
  // A stem is taken as a whole: an existing r_3.html moves the csv and json to r_4 too.
  write_file_atomic(dir / "r_3.html", "someone else's");
  auto third = write_new_files(dir, "r", {{"csv", "three"}, {"json", "3"}, {"html", "<p>"}});
  EXPECT_EQ(third[0].filename(), "r_4.csv");
  EXPECT_EQ(third[2].filename(), "r_4.html");
  EXPECT_EQ(read_file(dir / "r_3.html"), "someone else's");
  EXPECT_FALSE(fs::exists(dir / "r_3.csv"));
  // No temp files left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
  }
  EXPECT_EQ(files, 2 + 2 + 1 + 3);
}

TEST(ReportMain, WritesCsvJsonAndHtmlAndTwoRunsNeverCollide) {
  TempDir d;
  const std::string c = (d / "c").string();
  write_fake_build(c, {.build_name = "net_aaaaaaaa", .samples_ms = fake_latencies(2, 20, 1)});
  const std::string out = (d / "out").string();
  testing::internal::CaptureStdout();
  EXPECT_EQ(report_main({"-d", c, "-r", out, "--html"}), 0);
  EXPECT_EQ(report_main({"--cache-dir", c, "--report-dir", out}), 0);
  std::string printed = testing::internal::GetCapturedStdout();
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  ASSERT_EQ(names.size(), 5u) << printed;
  std::regex name_re(R"(turnkey_report_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\dZ(_\d+)?\.(csv|json|html))");
  for (const std::string& n : names) EXPECT_TRUE(std::regex_match(n, name_re)) << n;
  EXPECT_NE(printed.find("Report of 1 result(s) from 1 cache(s): 1 successful, 0 failed"),
            std::string::npos)
      << printed;
  std::string csv;
  for (const std::string& n : names) {
    if (n.ends_with(".csv")) csv = read_file(fs::path(out) / n);
  }
  EXPECT_EQ(csv.substr(0, csv.find("\r\n")), csv_header());
}

TEST(ReportMain, UnreadableBuildsStillGiveAReportWithExitOne) {
  TempDir d;
  const std::string c = (d / "c").string();
  fs::path b =
      write_fake_build(c, {.build_name = "x_aaaaaaaa", .samples_ms = fake_latencies(2, 20, 1)});
  std::ofstream(b / "x_aaaaaaaa_state.yaml") << ": : :\n\t- [\n";
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  EXPECT_EQ(report_main({"-d", c, "-r", (d / "out").string()}), 1);
  testing::internal::GetCapturedStdout();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("1 build dir(s) could not be read"), std::string::npos) << err;
  EXPECT_EQ(std::distance(fs::directory_iterator(d / "out"), fs::directory_iterator()), 2);
}

TEST(ReportMain, UsageErrorsExitTwo) {
  TempDir d;
  testing::internal::CaptureStderr();
  EXPECT_EQ(report_main({"--bogus"}), 2);
  EXPECT_EQ(report_main({"-d", (d / "missing").string(), "-r", (d / "out").string()}), 2);
  EXPECT_EQ(report_main({"-d"}), 2);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 3) << err;
  EXPECT_NE(err.find("turnkey report: error: cache dir"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(d / "out"));
}

}  // namespace
}  // namespace turnkey::report
