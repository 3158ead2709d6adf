// turnkey report: CSV quoting, the documented column set, merged caches, failures and
// unreadable build dirs as rows, JSON, HTML escaping, report file names (compare: test_compare.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <regex>
#include <set>

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
using nlohmann::json;
using test::fake_latencies;
using test::FakeBuild;
using test::TempDir;
using test::write_fake_build;
using cli::report_main;

// A strict RFC 4180 reader (CRLF records, quoted fields with doubled quotes), so the tests check
// what a CSV consumer would read back rather than our own string pieces.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  size_t i = 0;
  bool field_started = false;
  while (i < text.size()) {
    char c = text[i];
    if (c == '"' && field.empty() && !field_started) {
      ++i;
      for (;;) {
        if (i >= text.size()) throw std::runtime_error("unterminated quote");
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += text[i++];
      }
      field_started = true;
      if (i < text.size() && text[i] != ',' && text[i] != '\r') {
        throw std::runtime_error("text after a closing quote");
      }
      continue;
    }
    if (c == ',') {
      record.push_back(field);
      field.clear();
      field_started = false;
      ++i;
    } else if (c == '\r') {
      if (i + 1 >= text.size() || text[i + 1] != '\n') throw std::runtime_error("bare CR");
      record.push_back(field);
      records.push_back(record);
      record.clear();
      field.clear();
      field_started = false;
      i += 2;
    } else if (c == '\n' || c == '"') {
      throw std::runtime_error("bare LF or quote in an unquoted field");
    } else {
      field += c;
      field_started = true;
      ++i;
    }
  }
  if (!record.empty() || !field.empty()) throw std::runtime_error("last record without CRLF");
  return records;
}

std::map<std::string, std::string> as_map(const std::vector<std::string>& header,
                                          const std::vector<std::string>& record) {
  std::map<std::string, std::string> m;
  for (size_t i = 0; i < header.size() && i < record.size(); ++i) m[header[i]] = record[i];
  return m;
}

const Row* find_row(const std::vector<Row>& rows, const std::string& cache,
                    const std::string& build) {
  for (const Row& r : rows) {
    if (r.text("cache") == cache && r.text("build_name") == build) return &r;
  }
  return nullptr;
}

std::string hash64(char c) { return std::string(64, c); }

int count_occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

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
  write_fake_build(c, {.build_name = "hello_aaaaaaaa", .hash_full = hash64('a'),
                       .samples_ms = fake_latencies(2, 20, 1)});
  write_fake_build(c, {.build_name = "two_models_aaaaaaaa", .hash_full = hash64('a'),
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
  b.write_state({{"build_name", "m_12345678"}, {"build_status", "failed"},
                 {"failed_tool", "load-onnx"}, {"error", "symbolic dims"}});
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
  write_fake_build(a, {.build_name = "m1_aaaaaaaa", .hash_full = hash64('a'),
                       .samples_ms = fake_latencies(2, 20, 1)});
  Report r = read_caches({a});
  ASSERT_EQ(r.rows.size(), 1u);
  r.rows[0].cells["measurement_flags"] =
      "machine slowed: both speed probes ran 2.19x (10.97 and 11.40 ms; flagged above +20%): "
      "slower; noisy: the median's 95% CI is +-4.0% (> +-3%)";
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
