// The field table, result records (merge, history, legacy stats) and the build-dir rule; and a
// cache written by the schema-3 binary (tests/data/cache_schema3) read through report and
// `cache list`.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <set>

#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/cache/build_records.h"
#include "turnkey/cache/fields.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/report/cache_list.h"
#include "turnkey/report/report.h"

namespace turnkey {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSchema3 = fs::path(TURNKEY_SOURCE_DIR) / "tests/data/cache_schema3";

TEST(FieldTable, KeysAndColumnsAreUniqueAndUnitsNameTheirKeys) {
  std::set<std::string> keys, columns;
  for (const StatsField& f : field_table()) {
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    if (f.column) {
      EXPECT_TRUE(columns.insert(f.column).second) << f.column;
    }
    const std::string unit = f.unit, key = f.key;
    if (!unit.empty()) {
      ASSERT_GT(key.size(), unit.size() + 1) << key;
      std::string suffix = "_";
      suffix += unit;
      EXPECT_TRUE(key.ends_with(suffix)) << key;
    }
    EXPECT_GE(f.since, 1) << key;
    EXPECT_LE(f.since, kStatsSchemaVersion) << key;
  }
  for (const std::string& s : result_settings()) {
    const StatsField* f = find_field(s);
    ASSERT_NE(f, nullptr) << s;
    EXPECT_EQ(f->scope, FieldScope::Result) << s;
  }
}

TEST(FieldTable, ReportColumnsAreTheTablesColumnsInOrder) {
  std::vector<std::string> from_table;
  for (const StatsField& f : field_table()) {
    if (f.column) from_table.push_back(f.column);
  }
  std::vector<std::string> from_report;
  for (const report::Column& c : report::columns()) from_report.push_back(c.name);
  EXPECT_EQ(from_report, from_table);
  // Columns of earlier schemas keep their place: a new field's column goes at the end.
  int last_since = 0;
  for (const StatsField& f : field_table()) {
    if (!f.column) continue;
    EXPECT_GE(f.since, last_since) << f.column;
    last_since = f.since;
  }
}

json result_fields(const std::string& runtime, int threads, double median) {
  return {{"runtime", runtime},          {"device", "x86"},
          {"threads", threads},          {"pinned_cpus", ""},
          {"input_shapes", "x:1x16"},    {"sequence", "load-onnx benchmark"},
          {"median_latency_ms", median}, {"mean_latency_ms", median * 1.1}};
}

ResultRecord record(const std::string& runtime, int threads, double median,
                    const std::string& finished) {
  ResultRecord r;
  r.fields = result_fields(runtime, threads, median);
  r.key = result_key(r.fields);
  r.status = "successful";
  r.finished = finished;
  return r;
}

TEST(ResultRecords, SameSettingsReplaceTheirOwnResultAndKeepItsHistory) {
  std::vector<ResultRecord> results;
  results = merge_result(results, record("ort", 2, 1.0, "t1"));
  results = merge_result(results, record("torchscript", 2, 3.0, "t2"));
  results = merge_result(results, record("ort", 1, 2.0, "t3"));  // other threads: its own
  results = merge_result(results, record("ort", 2, 0.9, "t4"));  // replaces the first
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].fields["median_latency_ms"], 0.9);
  ASSERT_EQ(results[0].history.size(), 1u);
  EXPECT_EQ(results[0].history[0].median_latency_ms, 1.0);
  EXPECT_EQ(results[0].history[0].finished, "t1");
  EXPECT_EQ(results[1].fields["runtime"], "torchscript");
  EXPECT_TRUE(results[1].history.empty());
  EXPECT_EQ(results[2].fields["threads"], 1);
}

TEST(ResultRecords, HistoryIsBoundedAndOldestGoFirst) {
  std::vector<ResultRecord> results;
  for (int i = 0; i < 15; ++i) {
    results = merge_result(results, record("ort", 2, i, std::to_string(i) + "t"));
  }
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(results[0].history.size(), ResultRecord::kHistoryLimit);
  EXPECT_EQ(results[0].history.front().finished, "4t");
  EXPECT_EQ(results[0].history.back().finished, "13t");
  EXPECT_EQ(results[0].finished, "14t");
}

TEST(ResultRecords, JsonRoundTripKeepsEverything) {
  std::vector<ResultRecord> results =
      merge_result({record("ort", 2, 1.0, "t1")}, record("ort", 2, 2.0, "t2"));
  results[0].samples_file = "samples_ort_x86_12345678.json";
  results[0].error = "";
  const ResultRecord back = ResultRecord::from_json(results[0].to_json());
  EXPECT_EQ(back.key, results[0].key);
  EXPECT_EQ(back.fields, results[0].fields);
  EXPECT_EQ(back.samples_file, results[0].samples_file);
  ASSERT_EQ(back.history.size(), 1u);
  EXPECT_EQ(back.history[0].median_latency_ms, 1.0);
}

TEST(ResultRecords, SettingsChangeTheKeyAndTheSamplesFile) {
  json a = result_fields("ort", 2, 1.0), b = a;
  b["input_shapes"] = "x:8x16";
  EXPECT_NE(result_key(a), result_key(b));
  EXPECT_NE(samples_file_name(a), samples_file_name(b));
  json c = a;
  c["median_latency_ms"] = 5.0;  // a number is not a setting
  EXPECT_EQ(result_key(a), result_key(c));
  EXPECT_EQ(samples_file_name(a).rfind("samples_ort_x86_", 0), 0u);
}

// Issue 20: requests in flight are a setting; one request keys as results did before it existed
// (their keys and samples files stay), two make another result.
TEST(ResultRecords, ConcurrencyIsASettingAndOneKeysAsBefore) {
  json before = result_fields("ort", 2, 1.0);
  json one = before, two = before;
  one["concurrency"] = 1;
  two["concurrency"] = 2;
  EXPECT_EQ(result_key(one), result_key(before));
  EXPECT_EQ(samples_file_name(one), samples_file_name(before));
  EXPECT_NE(result_key(two), result_key(one));
  EXPECT_EQ(merge_result({record("ort", 2, 1.0, "t1")},
                         [&] {
                           ResultRecord r;
                           r.fields = two;
                           r.key = result_key(two);
                           return r;
                         }())
                .size(),
            2u);
}

TEST(ResultRecords, SchemaThreeStatsReadAsOneResult) {
  json stats = {{"runtime", "ort"},         {"device", "x86"},
                {"median_latency_ms", 0.5}, {"build_status", "successful"},
                {"model_name", "m"},        {"hash", "abcd1234"}};
  std::vector<ResultRecord> r = results_of(stats);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, "successful");
  EXPECT_EQ(r[0].samples_file, "samples_ort_x86.json");
  EXPECT_EQ(r[0].fields["median_latency_ms"], 0.5);
  EXPECT_FALSE(r[0].fields.contains("model_name")) << "a model fact is not a result field";
  EXPECT_TRUE(results_of(json{{"model_name", "m"}}).empty()) << "no runtime: no result";
}

TEST(ResultRecords, CarryOverTakesModelFactsOnly) {
  json from = {
      {"model_name", "m"}, {"parameters", 10}, {"median_latency_ms", 1.0}, {"onnx_opset", 17}};
  json into = json::object();
  carry_model_facts(from, into);
  EXPECT_EQ(into, (json{{"model_name", "m"}, {"parameters", 10}}));
}

TEST(BuildDirRule, StateOrStatsInAnyFormMakesABuildDir) {
  test::TempDir d{"tk-records"};
  fs::create_directories(d.path() / "a");
  std::ofstream(d.path() / "a" / "a_state.yaml") << "build_name: a\n";
  fs::create_directories(d.path() / "b" / "b_state.yaml");  // damaged: a dir in its place
  fs::create_directories(d.path() / "c");
  std::ofstream(d.path() / "c" / "turnkey_stats.yaml") << "";
  fs::create_directories(d.path() / "discovery_logs");
  fs::create_symlink(d.path() / "a", d.path() / "link");
  EXPECT_TRUE(is_build_dir(d.path() / "a"));
  EXPECT_TRUE(is_build_dir(d.path() / "b"));
  EXPECT_TRUE(is_build_dir(d.path() / "c"));
  EXPECT_FALSE(is_build_dir(d.path() / "discovery_logs"));
  EXPECT_FALSE(is_build_dir(d.path() / "link"));
  EXPECT_FALSE(is_build_dir(d.path() / "missing"));
}

TEST(BuildFiles, BothFilesCarryTheSchemaVersion) {
  test::TempDir d{"tk-records"};
  BuildDir dir(d.path(), "m_12345678");
  dir.create();
  dir.write_state({{"build_name", "m_12345678"}});
  dir.write_stats({{"model_name", "m"}});
  EXPECT_EQ(json_from_yaml(read_file(dir.state_path()))["schema_version"], kStateSchemaVersion);
  EXPECT_EQ(json_from_yaml(read_file(dir.stats_path()))["schema_version"], kStatsSchemaVersion);
}

// ---- The typed records the engine writes: write -> read -> equal --------------------------------

BuildState full_state() {
  BuildState s;
  s.build_name = "m_12345678";
  s.build_status = "failed";
  s.status = "crashed";
  s.error = "the Python side was killed by signal 9 (Killed) during export";
  s.failed_tool = "export-pytorch";
  s.last_tool = "export-pytorch";
  s.started = "2026-11-23T15:14:40.000Z";
  s.finished = "2026-11-23T15:14:42.045Z";
  s.turnkey_version = "0.1.0";
  s.input = "/tmp/m.py";
  s.run = "0123456789abcdef";
  s.rebuild = "if_needed";
  s.chain_key = "abc";
  s.onnx_path = "/tmp/c/m_12345678/onnx/m-op17-base.onnx";
  s.model_name = "model";
  s.hash_full = std::string(64, 'a');
  s.sequence = {"load-build", "benchmark"};
  s.continued_from = {"discover", "export-pytorch"};
  s.lean_cache = true;
  s.signal = 9;
  ToolStep first;
  first.name = "discover";
  first.status = "successful";
  first.key = "k0";
  first.duration_s = 0.5;
  ToolStep second;
  second.name = "export-pytorch";
  second.status = "failed";
  second.started = "2026-11-23T15:14:41.000Z";
  second.key = "k1";
  second.options = {{"opset", 17}};
  second.versions = "torch 1.13.1";
  second.error = "killed";
  second.duration_s = 1.25;
  second.outputs = {
      {"onnx_path", "/x.onnx"}, {"inputs", json::array()}, {"outputs", json::array()}};
  second.artifacts = json::array({{{"path", "/x.onnx"}, {"size_bytes", 10}, {"sha256", "ff"}}});
  second.reused = true;
  second.rest = {{"from_a_newer_writer", 1}};
  s.tools = {first, second};
  return s;
}

TEST(TypedRecords, BuildStateWriteReadIsEqual) {
  const BuildState s = full_state();
  std::vector<std::string> problems;
  const BuildState back = BuildState::from_json(s.to_json(), problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(back.to_json(), s.to_json());
  EXPECT_EQ(back.status, "crashed");
  EXPECT_EQ(back.signal, 9);
  EXPECT_TRUE(back.lean_cache);
  EXPECT_EQ(back.continued_from, s.continued_from);
  ASSERT_EQ(back.tools.size(), 2u);
  EXPECT_EQ(back.tools[1].duration_s, 1.25);
  EXPECT_EQ(back.tools[1].options, s.tools[1].options);
  EXPECT_TRUE(back.tools[1].reused);
  EXPECT_FALSE(back.tools[0].reused);
  EXPECT_EQ(back.tools[1].rest, (json{{"from_a_newer_writer", 1}}));
  // Through the YAML file as the engine writes it.
  test::TempDir d{"tk-records"};
  BuildDir dir(d.path(), s.build_name);
  dir.create();
  dir.write_state(s.to_json());
  const BuildState read =
      BuildState::from_json(json_from_yaml(read_file(dir.state_path())), problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(read.schema_version, kStateSchemaVersion);
  json written = read.to_json();
  written.erase("schema_version");
  EXPECT_EQ(written, s.to_json());
}

// Issue 28: a state names its run's record; the run's command line is written once, beside.
TEST(RunRecords, OneRecordPerRunWrittenOnceAndNamedByItsContent) {
  test::TempDir d{"tk-runs"};
  const RunRecord run{"turnkey a.py b.py", "/home/u", "0.1.0"};
  const std::string id = record_run(d.path(), run);
  ASSERT_EQ(id.size(), 16u);
  EXPECT_EQ(id, run.id());
  const fs::path path = run_record_path(d.path(), id);
  EXPECT_EQ(path, d.path() / "inputs" / "runs" / (id + ".yaml"));
  EXPECT_EQ(json_from_yaml(read_file(path)), run.to_json());
  EXPECT_EQ(run.to_json()["command_line"], "turnkey a.py b.py");
  // The same run again (a rerun, or every worker of a corpus run) writes nothing new.
  std::ofstream(path, std::ios::app) << "# touched\n";
  EXPECT_EQ(record_run(d.path(), run), id);
  EXPECT_NE(read_file(path).find("# touched"), std::string::npos) << "rewritten";
  // Another folder or another command line is another run.
  EXPECT_NE(RunRecord({"turnkey a.py b.py", "/tmp", "0.1.0"}).id(), id);
  EXPECT_NE(RunRecord({"turnkey a.py", "/home/u", "0.1.0"}).id(), id);
  EXPECT_EQ(record_run(d.path(), {"", "/home/u", "0.1.0"}), "") << "no command line, no record";
}

TEST(RunRecords, AnOldStatesCommandLineIsKeptAsRead) {
  const json old = {{"build_name", "b"},
                    {"command_line", "turnkey a.py"},
                    {"sequence", json::array()},
                    {"tools", json::array()}};
  std::vector<std::string> problems;
  const BuildState s = BuildState::from_json(old, problems);
  EXPECT_TRUE(s.run.empty());
  EXPECT_EQ(s.to_json(), old);
}

TEST(TypedRecords, EmptyTextIsNotWrittenAndUnknownKeysStay) {
  BuildState s;
  s.build_name = "b";
  const json j = s.to_json();
  EXPECT_EQ(j, (json{{"build_name", "b"}, {"sequence", json::array()}, {"tools", json::array()}}));
  std::vector<std::string> problems;
  const json odd = {{"build_name", "b"},
                    {"started", 5},
                    {"future", {{"x", 1}}},
                    {"sequence", json::array()},
                    {"tools", json::array()}};
  EXPECT_EQ(BuildState::from_json(odd, problems).to_json(), odd)
      << "a mistyped field the reader does not check is kept as read";
  EXPECT_TRUE(problems.empty());
  BuildState::from_json({{"build_status", 3}}, problems);
  EXPECT_EQ(problems, std::vector<std::string>{"state: build_status is not text"});
}

TEST(TypedRecords, StatsFieldsAreCheckedByTheFieldTable) {
  BuildStats s;
  s.set("model_name", "m");
  s.set("parameters", int64_t{10});
  s.set("median_latency_ms", 0.5);
  s.set("median_latency_ms", 1);  // an integer is a number
  s.set("exporter_fixes", json::array({"aten_zero"}));
  s.set("correctness", {{"verdict", "within_tolerance"}});
  s.set("torch_version", nullptr);  // a value not known
  EXPECT_EQ(s.text("model_name"), "m");
  EXPECT_EQ(s.number("median_latency_ms"), 1.0);
  EXPECT_TRUE(s.has("torch_version"));
  const auto internal = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.kind() == ErrorKind::Internal;
    }
    return false;
  };
  EXPECT_TRUE(internal([&] { s.set("no_such_field", 1); }));
  EXPECT_TRUE(internal([&] { s.set("status", "successful"); })) << "a Report field has no key";
  EXPECT_TRUE(internal([&] { s.set("parameters", 1.5); }));
  EXPECT_TRUE(internal([&] { s.set("model_name", 3); }));
  EXPECT_TRUE(internal([&] { s.set("noisy", "yes"); }));
  EXPECT_TRUE(internal([&] { s.set("measurement_flags", json::array({1})); }));
  EXPECT_FALSE(s.has("no_such_field"));
}

TEST(TypedRecords, BuildStatsWriteReadIsEqual) {
  BuildStats s;
  s.set("model_name", "m");
  s.set("hash", "abcd1234");
  s.set("onnx_ops", {{"Gemm", 1}});
  s.set("runtime", "ort");
  s.set("threads", 2);
  s.set("median_latency_ms", 0.0013);
  s.build_name = "m_abcd1234";
  s.build_status = "successful";
  s.samples_file = "samples_ort_x86_12345678.json";
  s.results = {record("ort", 2, 0.0013, "t1"), record("torchscript", 2, 0.004, "t2")};
  const json j = s.to_json();
  const BuildStats back = BuildStats::from_json(j);
  EXPECT_EQ(back.to_json(), j);
  EXPECT_EQ(back.fields(), s.fields());
  EXPECT_EQ(back.build_status, "successful");
  EXPECT_EQ(back.samples_file, s.samples_file);
  ASSERT_EQ(back.results.size(), 2u);
  EXPECT_EQ(back.results[1].fields, s.results[1].fields);
  // Through the YAML file: numbers keep their digits.
  test::TempDir d{"tk-records"};
  BuildDir dir(d.path(), s.build_name);
  dir.create();
  dir.write_stats(j);
  json read = BuildStats::from_json(json_from_yaml(read_file(dir.stats_path()))).to_json();
  EXPECT_EQ(read, j);
  // A key the table does not name, from another writer, is kept; a mistyped field too.
  json other = j;
  other["from_elsewhere"] = "x";
  other["parameters"] = "many";
  EXPECT_EQ(BuildStats::from_json(other).to_json(), other);
  EXPECT_FALSE(BuildStats::from_json(other).has("parameters"));
  // Carry-over takes Model fields of the right type only.
  BuildStats carried;
  carried.carry_model_facts(other);
  EXPECT_EQ(carried.fields(), (json{{"model_name", "m"}, {"hash", "abcd1234"}}));
}

// The schema-3 files read into the typed records and written back are the same files: the
// records lose nothing of what the earlier writer wrote, and the table names every stats key.
TEST(TypedRecords, SchemaThreeFilesRoundTripUnchanged) {
  for (const char* name : {"hello_world_4d4540b8", "dyn_393a33d5"}) {
    json state = json_from_yaml(read_file(kSchema3 / name / (std::string(name) + "_state.yaml")));
    std::vector<std::string> problems;
    json state_back = BuildState::from_json(state, problems).to_json();
    EXPECT_TRUE(problems.empty()) << name;
    EXPECT_EQ(state_back, state) << name;
    json stats = json_from_yaml(read_file(kSchema3 / name / "turnkey_stats.yaml"));
    const BuildStats typed = BuildStats::from_json(stats);
    EXPECT_EQ(typed.to_json(), stats) << name;
    for (const auto& [key, value] : stats.items()) {
      // How the build ended: BuildStats' own members, not fields of the table.
      if (key == "build_name" || key == "build_status" || key == "status" || key == "failed_tool" ||
          key == "error" || key == "samples_file")
        continue;
      const StatsField* f = find_field(key);
      ASSERT_NE(f, nullptr) << name << ": " << key << " is not in the field table";
      EXPECT_TRUE(fits_field(*f, value)) << name << ": " << key;
      EXPECT_TRUE(typed.has(key)) << name << ": " << key;
    }
  }
}

// tests/data/cache_schema3: state, stats and samples of two builds written by the binary of
// schema 3 (before results were kept), numbers as it wrote them: hello_world.py benchmarked on
// ort, and dyn.onnx whose second run (an unknown runtime) failed.
TEST(SchemaThreeCache, ReportReadsItsRowsWithTheirNumbers) {
  std::vector<report::Row> rows = report::read_cache(kSchema3, "old");
  ASSERT_EQ(rows.size(), 2u);
  const report::Row& dyn = rows[0];
  EXPECT_EQ(dyn.text("build_name"), "dyn_393a33d5");
  EXPECT_EQ(dyn.text("status"), "failed");
  EXPECT_EQ(dyn.text("runtime"), "nosuch");
  EXPECT_NE(dyn.text("error").find("unknown runtime 'nosuch'"), std::string::npos)
      << dyn.text("error");
  const report::Row& hello = rows[1];
  EXPECT_EQ(hello.text("build_name"), "hello_world_4d4540b8");
  EXPECT_EQ(hello.text("status"), "successful");
  EXPECT_EQ(hello.text("runtime"), "ort");
  EXPECT_EQ(hello.text("correctness"), "within_tolerance");
  EXPECT_EQ(hello.text("input_shapes"), "x:10");
  json stats = json_from_yaml(read_file(kSchema3 / "hello_world_4d4540b8/turnkey_stats.yaml"));
  EXPECT_EQ(hello.number("median_latency_ms"), stats["median_latency_ms"].get<double>());
  EXPECT_EQ(hello.number("std_ms"), stats["std_latency_ms"].get<double>());
  EXPECT_EQ(hello.samples_ms.size(), 100u) << hello.samples_note;
  EXPECT_FALSE(hello.has("runs")) << "a schema-3 row has no run history";
  // CSV and JSON render it; JSON reads back to the same cells.
  const std::string csv = report::to_csv(rows);
  EXPECT_NE(csv.find("hello_world_4d4540b8"), std::string::npos);
  report::Report rep;
  rep.rows = rows;
  report::Report back = report::report_from_json(report::to_json(rep, report::Provenance{}), "old");
  ASSERT_EQ(back.rows.size(), 2u);
  EXPECT_EQ(back.rows[1].number("median_latency_ms"), hello.number("median_latency_ms"));
}

TEST(SchemaThreeCache, CacheListShowsEveryBuild) {
  const std::string out = report::cache_list_text(kSchema3);
  EXPECT_NE(out.find("hello_world_4d4540b8"), std::string::npos) << out;
  EXPECT_NE(out.find("dyn_393a33d5"), std::string::npos) << out;
  EXPECT_NE(out.find("unknown runtime 'nosuch'"), std::string::npos) << out;
}

}  // namespace
}  // namespace turnkey
