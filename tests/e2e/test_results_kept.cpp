// End-to-end: a build keeps one result per (runtime, device, settings), and `cache list`, the
// CSV and the HTML show every one; a cache written before results were kept (schema 3,
// tests/data/cache_schema3) keeps its result when a new run joins it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include "e2e_util.h"
#include "turnkey/cache/fields.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kHelloWorld = fs::path(TURNKEY_SOURCE_DIR) / "examples/cli/scripts/hello_world.py";

std::string file_with_extension(const fs::path& dir, const std::string& ext) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ext) return slurp(e.path());
  }
  return "";
}

TEST(ResultsKept, TwoRuntimesAndTwoInputShapesAreFourResultsEverywhere) {
  TempDir dir{"tk-e2e-results"};
  const fs::path cache = dir / "cache";
  const fs::path model = dir / "dyn.onnx";
  symbolic_dim(model);  // x ["batch", 16]
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{kHelloWorld.string(), "--iterations", "20"},
        {kHelloWorld.string(), "--runtime", "torchscript", "--iterations", "20"},
        {model.string(), "--input-shapes", "x:1x16", "--iterations", "20"},
        {model.string(), "--input-shapes", "x:4x16", "--iterations", "20"}}) {
    RunResult r = run_turnkey(args, cache);
    ASSERT_EQ(r.exit_code, 0) << r.all();
    if (args[0] == model.string()) {
      // The block shows the shape benchmarked, not the symbolic one.
      EXPECT_NE(r.out.find("Input Shape:    'x': (" + args[2].substr(2, 1) + ", 16)"),
                std::string::npos)
          << r.out;
    }
  }

  // cache list: one line per result, with its settings.
  RunResult list = run_turnkey({"cache", "list"}, cache);
  ASSERT_EQ(list.exit_code, 0) << list.all();
  EXPECT_EQ(count_occurrences(list.out, "hello_world_170229dc "), 2) << list.out;
  EXPECT_EQ(count_occurrences(list.out, "\ndyn_"), 2) << list.out;
  EXPECT_NE(list.out.find(" ort "), std::string::npos) << list.out;
  EXPECT_NE(list.out.find(" torchscript "), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("shapes=x:1x16"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("shapes=x:4x16"), std::string::npos) << list.out;

  // The stats keep both results of each build, each with its own samples file.
  fs::path dyn_dir;
  for (const auto& e : fs::directory_iterator(cache)) {
    if (e.path().filename().string().rfind("dyn_", 0) == 0) dyn_dir = e.path();
  }
  json stats = json_from_yaml(slurp(dyn_dir / "turnkey_stats.yaml"));
  EXPECT_EQ(stats["schema_version"], kStatsSchemaVersion);
  EXPECT_GE(kStatsSchemaVersion, 4);  // results kept since schema 4
  ASSERT_EQ(stats["results"].size(), 2u) << stats.dump(1);
  for (const json& r : stats["results"]) {
    EXPECT_TRUE(fs::exists(dyn_dir / r["samples_file"].get<std::string>())) << r.dump();
  }
  EXPECT_NE(stats["results"][0]["samples_file"], stats["results"][1]["samples_file"]);

  // CSV and HTML: four successful rows; the runtime-versus-runtime matrix is filled.
  const fs::path out = dir / "report";
  RunResult rep =
      run_turnkey({"report", "-d", cache.string(), "-r", out.string(), "--html"}, cache);
  ASSERT_EQ(rep.exit_code, 0) << rep.all();
  const std::string csv = file_with_extension(out, ".csv");
  EXPECT_EQ(count_occurrences(csv, ",successful,"), 4) << csv;
  EXPECT_NE(csv.find(",x:1x16,load-onnx benchmark,ort,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",x:4x16,load-onnx benchmark,ort,"), std::string::npos) << csv;
  const std::string html = file_with_extension(out, ".html");
  EXPECT_NE(html.find("id=\"speedup-matrix\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"speedup-none\""), std::string::npos);

  // A rerun with the same settings replaces its own result and keeps the old number's trace.
  RunResult again =
      run_turnkey({model.string(), "--input-shapes", "x:4x16", "--iterations", "20"}, cache);
  ASSERT_EQ(again.exit_code, 0) << again.all();
  stats = json_from_yaml(slurp(dyn_dir / "turnkey_stats.yaml"));
  ASSERT_EQ(stats["results"].size(), 2u);
  EXPECT_EQ(stats["results"][0]["history"].size(), 0u);
  EXPECT_EQ(stats["results"][1]["history"].size(), 1u);
}

// Issue 32: each run of a result carries the medians of its earlier runs on this host, and the
// interval for the next run's median is made from them as well; another setting's result
// starts its own history.
TEST(ResultsKept, ARerunCarriesItsEarlierMediansIntoTheNextRunInterval) {
  TempDir dir{"tk-e2e-run-history"};
  const fs::path cache = dir / "cache";
  const fs::path model = dir / "dyn.onnx";
  symbolic_dim(model);  // x ["batch", 16]
  const std::vector<std::string> args = {model.string(), "--input-shapes", "x:1x16",
                                         "--iterations", "20"};
  std::vector<RunResult> runs;
  for (int i = 0; i < 3; ++i) {
    runs.push_back(run_turnkey(args, cache));
    ASSERT_EQ(runs.back().exit_code, 0) << runs.back().all();
  }
  RunResult other =
      run_turnkey({model.string(), "--input-shapes", "x:4x16", "--iterations", "20"}, cache);
  ASSERT_EQ(other.exit_code, 0) << other.all();
  fs::path dyn_dir;
  for (const auto& e : fs::directory_iterator(cache)) {
    if (e.path().filename().string().rfind("dyn_", 0) == 0) dyn_dir = e.path();
  }
  const json stats = json_from_yaml(slurp(dyn_dir / "turnkey_stats.yaml"));
  ASSERT_EQ(stats["results"].size(), 2u) << stats.dump(1);
  const json& third = stats["results"][0];
  ASSERT_EQ(third["input_shapes"], "x:1x16");
  // The earlier medians, oldest first: those of the result's run history whose run was not
  // flagged for its machine (a shared machine may flag any run: those pass on nothing of theirs).
  ASSERT_EQ(third["history"].size(), 2u);
  std::vector<double> expected;
  for (size_t i = 0; i < 2; ++i) {
    const std::string& out = runs[i].out;
    const bool disturbed = out.find("Warning:        machine busy:") != std::string::npos ||
                           out.find("Warning:        machine slowed:") != std::string::npos ||
                           out.find("Warning:        CPU quota throttled") != std::string::npos;
    if (!disturbed) expected.push_back(third["history"][i]["median_latency_ms"].get<double>());
  }
  ASSERT_EQ(third["earlier_medians_ms"].get<std::vector<double>>(), expected) << third.dump(1);
  const size_t n = expected.size();
  EXPECT_EQ(third["median_interval_runs"], n + 1);
  const double low = third["median_interval_low_ms"], high = third["median_interval_high_ms"];
  for (const json& m : third["earlier_medians_ms"]) {
    EXPECT_LE(low, m.get<double>());
    EXPECT_GE(high, m.get<double>());
  }
  EXPECT_LE(low, third["within_run_interval_low_ms"].get<double>());
  EXPECT_GE(high, third["within_run_interval_high_ms"].get<double>());
  const std::string method = third["median_interval_method"].get<std::string>();
  if (n == 0) {
    EXPECT_NE(method.find("the first run of this result on this host"), std::string::npos)
        << method;
  } else {
    EXPECT_NE(method.find(fmt::format("and the medians of this and {} earlier run{} of this "
                                      "result on this host: mean +- t(0.975, {}) x sd x "
                                      "sqrt(1+1/{})",
                                      n, n == 1 ? "" : "s", n, n + 1)),
              std::string::npos)
        << method;
    EXPECT_NE(runs[2].out.find(fmt::format(" blocks and {} runs", n + 1)), std::string::npos)
        << runs[2].out;
  }
  // The first run says what its interval cannot hold; the other setting has no history.
  EXPECT_NE(runs[0].out.find("next-run interval"), std::string::npos) << runs[0].out;
  EXPECT_EQ(runs[0].out.find(" blocks and "), std::string::npos) << runs[0].out;
  const json& shapes4 = stats["results"][1];
  EXPECT_EQ(shapes4["earlier_medians_ms"].size(), 0u) << shapes4.dump(1);
  EXPECT_EQ(shapes4["median_interval_runs"], 1);
  EXPECT_NE(shapes4["median_interval_method"].get<std::string>().find(
                "the first run of this result on this host"),
            std::string::npos)
      << shapes4["median_interval_method"];
  // The report and --json of a cache with the field read as before.
  RunResult rep = run_turnkey({"report", "-d", cache.string(), "-r", (dir / "rep").string()},
                              cache);
  EXPECT_EQ(rep.exit_code, 0) << rep.all();
  RunResult js = run_turnkey({model.string(), "--input-shapes", "x:1x16", "--iterations", "20",
                              "--json"}, cache);
  ASSERT_EQ(js.exit_code, 0) << js.all();
  EXPECT_TRUE(json::accept(js.out)) << js.out;  // no column: the document is as before
  EXPECT_NE(js.out.find("\"median_interval_high_ms\""), std::string::npos) << js.out;
}

// One model benchmarked as it is and after optimize-fp16: two results that every view tells
// apart by their sequence (issue 31: three bars used to carry one label).
TEST(ResultsKept, AnFp16AndAnFp32ResultOfOneModelAreToldApartEverywhere) {
  TempDir dir{"tk-e2e-fp16-fp32"};
  const fs::path cache = dir / "cache";
  const fs::path model = dir / "lin.onnx";
  linear_relu(model);
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, {"--sequence", "optimize-fp16"}}) {
    std::vector<std::string> args = {model.string(), "--iterations", "20"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = run_turnkey(args, cache);
    ASSERT_EQ(r.exit_code, 0) << r.all();
  }
  const std::string fp16_label = "seq=optimize-ort+convert-fp16";

  RunResult list = run_turnkey({"cache", "list"}, cache);
  ASSERT_EQ(list.exit_code, 0) << list.all();
  EXPECT_EQ(count_occurrences(list.out, "\nlin_"), 2) << list.out;
  EXPECT_EQ(count_occurrences(list.out, fp16_label), 1) << list.out;

  const fs::path out = dir / "report";
  RunResult rep =
      run_turnkey({"report", "-d", cache.string(), "-r", out.string(), "--html"}, cache);
  ASSERT_EQ(rep.exit_code, 0) << rep.all();
  const std::string csv = file_with_extension(out, ".csv");
  EXPECT_NE(csv.find(",load-onnx benchmark,ort,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",load-onnx optimize-ort convert-fp16 benchmark,ort,"), std::string::npos)
      << csv;
  // The chart's bar labels: one names the sequence, so the two bars differ.
  const std::string html = file_with_extension(out, ".html");
  EXPECT_EQ(count_occurrences(html, "class=\"bar-label\""), 2) << html;
  EXPECT_NE(html.find(fp16_label + "</title></text>"), std::string::npos);

  // compare: each result meets its own counterpart, not the other's.
  RunResult cmp = run_turnkey({"compare", cache.string(), cache.string()}, cache);
  ASSERT_EQ(cmp.exit_code, 0) << cmp.all();
  EXPECT_EQ(count_occurrences(cmp.out, fp16_label), 1) << cmp.out;
  EXPECT_NE(cmp.out.find("Only in A (0)"), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find("Only in B (0)"), std::string::npos) << cmp.out;
}

// A schema-3 build dir of hello_world.py (ort) met by a torchscript run: the ort result stays.
TEST(ResultsKept, ACacheOfSchemaThreeKeepsItsResultWhenANewRunJoins) {
  TempDir dir{"tk-e2e-results"};
  const fs::path cache = dir / "cache";
  const fs::path fixture = fs::path(TURNKEY_SOURCE_DIR) / "tests/data/cache_schema3";
  fs::create_directories(cache);
  // The fixture was written under hash v1 (hello_world_4d4540b8); hash v2 (docs/hashing.md) names
  // the same model hello_world_170229dc. Joined under today's name, and pointed at this
  // checkout's script (it was made from another checkout).
  const fs::path build = cache / "hello_world_170229dc";
  fs::copy(fixture / "hello_world_4d4540b8", build, fs::copy_options::recursive);
  fs::rename(build / "hello_world_4d4540b8_state.yaml", build / "hello_world_170229dc_state.yaml");
  for (const char* name : {"hello_world_170229dc_state.yaml", "turnkey_stats.yaml"}) {
    const fs::path p = build / name;
    std::string text = slurp(p);
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"/work/main/examples/cli/scripts/hello_world.py",
                                              kHelloWorld.string()},
          {"4d4540b8", "170229dc"}}) {
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
      }
    }
    std::ofstream(p) << text;
  }
  const json old_stats =
      json_from_yaml(slurp(build / "turnkey_stats.yaml"));
  RunResult r =
      run_turnkey({kHelloWorld.string(), "--runtime", "torchscript", "--iterations", "20"}, cache);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  json stats = json_from_yaml(slurp(build / "turnkey_stats.yaml"));
  ASSERT_EQ(stats["results"].size(), 2u) << stats.dump(1);
  EXPECT_EQ(stats["results"][0]["runtime"], "ort");
  EXPECT_EQ(stats["results"][0]["median_latency_ms"], old_stats["median_latency_ms"]);
  EXPECT_EQ(stats["results"][0]["samples_file"], "samples_ort_x86.json");
  EXPECT_EQ(stats["results"][1]["runtime"], "torchscript");
  RunResult list = run_turnkey({"cache", "list"}, cache);
  EXPECT_EQ(count_occurrences(list.out, "hello_world_170229dc "), 2) << list.out;
}

}  // namespace
}  // namespace turnkey::test
