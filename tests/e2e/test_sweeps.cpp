// End-to-end: issue 20's sweeps and load time, through the built binary on models the tests make.
// --concurrency 1,2 gives two results with sustained throughput (and says why when 2 is not
// faster), --batch-sizes and a repeated --input-shapes give one result per point on ONNX files
// (symbolic or fixed batch; a graph that keeps its batch fails that point alone) and on scripts
// (one run per size; a script that ignores the size is said once), both grammars, corpus runs,
// torchscript's shared module, and the report's sweep section. No timing claims: speed is
// bench/concurrency's. Cost: about 40 s (five script runs, each an `import torch`).
#include <gtest/gtest.h>

#include <fstream>

#include "e2e_util.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path only_build(const fs::path& cache, const std::string& prefix) {
  fs::path found;
  for (const auto& e : fs::directory_iterator(cache)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) {
      EXPECT_TRUE(found.empty()) << "two builds start with " << prefix;
      found = e.path();
    }
  }
  return found;
}

int builds_starting_with(const fs::path& cache, const std::string& prefix) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(cache)) {
    n += e.path().filename().string().rfind(prefix, 0) == 0 ? 1 : 0;
  }
  return n;
}

json results_of_build(const fs::path& build) {
  return json_from_yaml(slurp(build / "turnkey_stats.yaml"))["results"];
}

std::string file_with_extension(const fs::path& dir, const std::string& ext) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ext) return slurp(e.path());
  }
  return "";
}

bool has_flag_containing(const json& result, const std::string& text) {
  for (const json& f : result.value("measurement_flags", json::array())) {
    if (f.get<std::string>().find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(Sweeps, ConcurrencyOneAndTwoAreTwoResultsWithSustainedThroughput) {
  TempDir dir{"tk-e2e-sweeps"};
  small_conv_net(dir / "conv.onnx");
  RunResult r = run_turnkey(
      {(dir / "conv.onnx").string(), "--concurrency", "1,2", "--iterations", "200"}, dir / "cache");
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_FALSE(looks_like_crash(r)) << r.all();
  EXPECT_NE(r.out.find(") at 2 points"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Point          Median ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("concurrency 2  "), std::string::npos) << r.out;
  const json results = results_of_build(only_build(dir / "cache", "conv_"));
  ASSERT_EQ(results.size(), 2u) << results.dump(1);
  const json &one = results[0], &two = results[1];
  EXPECT_EQ(one["concurrency"], 1);
  EXPECT_EQ(two["concurrency"], 2);
  EXPECT_EQ(one["throughput_definition"], "batch_size * 1000 / mean_latency_ms");
  EXPECT_NE(two["throughput_definition"].get<std::string>().find("sustained"), std::string::npos);
  // The thread budget is split: per request max(1, cores / 2); one session per request only
  // when a request gets more than one thread (its own pool).
  const int64_t cores = one["threads"].get<int64_t>();
  EXPECT_EQ(two["threads"], std::max<int64_t>(1, cores / 2));
  EXPECT_EQ(two["sessions"], two["threads"].get<int64_t>() > 1 ? 2 : 1);
  for (const json* res : {&one, &two}) {
    EXPECT_GT((*res)["load_s"].get<double>(), 0) << res->dump();
    EXPECT_GT((*res)["throughput_ips"].get<double>(), 0);
    EXPECT_EQ((*res)["status"], "successful");
  }
  // "at 2 the throughput is above that at 1, or turnkey says why not".
  if (two["throughput_ips"].get<double>() <= one["throughput_ips"].get<double>()) {
    EXPECT_TRUE(has_flag_containing(two, "not above concurrency 1's")) << two.dump(1);
    EXPECT_NE(r.out.find("concurrency 2: no throughput gain: concurrency 2 gave"),
              std::string::npos)
        << r.out;
  } else {
    EXPECT_FALSE(has_flag_containing(two, "not above")) << two.dump(1);
  }
  // A cached build continued at both points: each point replaces its own result (history 1).
  const fs::path build = only_build(dir / "cache", "conv_");
  RunResult cont = run_turnkey({(build / (build.filename().string() + "_state.yaml")).string(),
                                "--concurrency", "1,2", "--iterations", "50"},
                               dir / "cache");
  ASSERT_EQ(cont.exit_code, 0) << cont.all();
  const json again = results_of_build(build);
  ASSERT_EQ(again.size(), 2u) << again.dump(1);
  EXPECT_EQ(again[0]["history"].size(), 1u);
  EXPECT_EQ(again[1]["history"].size(), 1u);
  // The tool grammar says the same with its own words.
  RunResult t = run_turnkey({"-i", (dir / "conv.onnx").string(), "load-onnx", "benchmark",
                             "--concurrency", "1,2", "--iterations", "50"},
                            dir / "cache2");
  ASSERT_EQ(t.exit_code, 0) << t.all();
  EXPECT_EQ(results_of_build(only_build(dir / "cache2", "conv_")).size(), 2u);
  // A single request's block shows the load time.
  RunResult single =
      run_turnkey({(dir / "conv.onnx").string(), "--iterations", "20"}, dir / "cache3");
  ASSERT_EQ(single.exit_code, 0) << single.all();
  EXPECT_NE(single.out.find("Load time:      "), std::string::npos) << single.out;
  EXPECT_EQ(single.out.find(" points"), std::string::npos) << single.out;

  // The report: the CSV has a row per point, the HTML a sweep chart with a dot per point.
  RunResult rep = run_turnkey(
      {"report", "-d", (dir / "cache").string(), "-r", (dir / "report").string(), "--html"},
      dir / "cache");
  ASSERT_EQ(rep.exit_code, 0) << rep.all();
  const std::string html = file_with_extension(dir / "report", ".html");
  EXPECT_NE(html.find("<section id=\"sweeps\">"), std::string::npos);
  EXPECT_EQ(count_occurrences(html, "<circle class=\"sweep-point\""), 2) << html;
  const std::string csv = file_with_extension(dir / "report", ".csv");
  EXPECT_NE(csv.find(",load_s,concurrency,sessions,batch_size"), std::string::npos) << csv;
}

TEST(Sweeps, BatchSizesOnOnnxFilesSymbolicFixedAndAGraphThatKeepsItsBatch) {
  TempDir dir{"tk-e2e-sweeps"};
  const fs::path cache = dir / "cache";
  symbolic_dim(dir / "sym.onnx");        // x [batch, 16]
  small_conv_net(dir / "conv.onnx");     // input [1, 3, 32, 32]
  tiny_transformer(dir / "trans.onnx");  // input_ids, attention_mask [1, 8]; Reshape to [1,...]
  RunResult r =
      run_turnkey({(dir / "sym.onnx").string(), (dir / "conv.onnx").string(),
                   (dir / "trans.onnx").string(), "--batch-sizes", "1,3", "--iterations", "20"},
                  cache);
  EXPECT_EQ(r.exit_code, 1) << r.all();  // one point failed
  EXPECT_FALSE(looks_like_crash(r)) << r.all();
  // The failed point: one line naming the model, the batch and the reason.
  EXPECT_EQ(count_occurrences(r.err, "turnkey: "), 1) << r.err;
  EXPECT_NE(r.err.find("turnkey: " + (dir / "trans.onnx").string() +
                       ": batch 3: the file fixes the batch of input_ids, attention_mask at "
                       "another size and its graph does not run at batch 3: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Reshape"), std::string::npos) << r.err;

  const json sym = results_of_build(only_build(cache, "sym_"));
  ASSERT_EQ(sym.size(), 2u);
  EXPECT_EQ(sym[0]["input_shapes"], "x:1x16");
  EXPECT_EQ(sym[1]["input_shapes"], "x:3x16");
  EXPECT_EQ(sym[1]["batch_size"], 3);

  const fs::path conv_build = only_build(cache, "conv_");
  const json conv = results_of_build(conv_build);
  ASSERT_EQ(conv.size(), 2u);
  EXPECT_EQ(conv[1]["input_shapes"], "input:3x3x32x32");
  EXPECT_EQ(conv[1]["status"], "successful");
  // The fixed batch was made symbolic in a copy inside the build; batch 1 ran the file itself.
  EXPECT_TRUE(fs::exists(conv_build / "batch" / "conv.onnx"));
  EXPECT_EQ(conv[1]["benchmarked_model"], (conv_build / "batch" / "conv.onnx").string());
  EXPECT_EQ(conv[0]["benchmarked_model"], (dir / "conv.onnx").string());

  const json trans = results_of_build(only_build(cache, "trans_"));
  ASSERT_EQ(trans.size(), 2u) << trans.dump(1);
  EXPECT_EQ(trans[0]["status"], "successful");
  EXPECT_NE(trans[1]["status"], "successful");
  EXPECT_NE(r.out.find("at 1 of 2 points"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batch 3  failed (below)"), std::string::npos) << r.out;

  // --input-shapes given twice: a result each.
  RunResult shapes = run_turnkey({(dir / "sym.onnx").string(), "--input-shapes", "x:5x16",
                                  "--input-shapes", "x:6x16", "--iterations", "20"},
                                 dir / "cache2");
  ASSERT_EQ(shapes.exit_code, 0) << shapes.all();
  const json two = results_of_build(only_build(dir / "cache2", "sym_"));
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0]["input_shapes"], "x:5x16");
  EXPECT_EQ(two[1]["input_shapes"], "x:6x16");
}

TEST(Sweeps, BatchSizesOnScriptsRunTheScriptPerSizeAndSayOnceWhenItIgnoresThem) {
  TempDir dir{"tk-e2e-sweeps"};
  const fs::path cache = dir / "cache";
  std::ofstream(dir / "parsed.py") << "import torch\n"
                                      "from turnkeyml.parser import parse\n"
                                      "batch_size, = parse(['batch_size'])\n"
                                      "torch.manual_seed(0)\n"
                                      "model = torch.nn.Linear(16, 4)\n"
                                      "model(torch.rand(batch_size, 16))\n";
  std::ofstream(dir / "fixed.py") << "import torch\n"
                                     "print('script ran')\n"
                                     "torch.manual_seed(0)\n"
                                     "model = torch.nn.Linear(16, 4)\n"
                                     "model(torch.rand(2, 16))\n";
  RunResult r = run_turnkey(
      {(dir / "parsed.py").string(), "--batch-sizes", "1,3", "--iterations", "20"}, cache);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(builds_starting_with(cache, "parsed_"), 2);
  EXPECT_NE(r.out.find("parsed.py (--batch_size 3):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Input Shape:    'input': (3, 16)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parsed.py (batch sweep):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batch 3  "), std::string::npos) << r.out;

  RunResult f =
      run_turnkey({(dir / "fixed.py").string(), "--batch-sizes", "1,3,5", "--iterations", "20"},
                  dir / "cache2");
  ASSERT_EQ(f.exit_code, 0) << f.all();
  EXPECT_EQ(builds_starting_with(dir / "cache2", "fixed_"), 1);
  EXPECT_EQ(results_of_build(only_build(dir / "cache2", "fixed_")).size(), 1u);
  // Said once; the third size is not run at all.
  EXPECT_EQ(count_occurrences(f.err, "the script does not read --batch_size"), 1) << f.err;
  EXPECT_EQ(count_occurrences(f.out, "script ran"), 2) << f.out;
  EXPECT_NE(f.out.find("Not built again: the same model as at --batch_size 1"), std::string::npos)
      << f.out;
}

TEST(Sweeps, TorchscriptCallersShareOneModuleAndLoadTimeLeavesTheTraceApart) {
  TempDir dir{"tk-e2e-sweeps"};
  std::ofstream(dir / "m.py") << "import torch\n"
                                 "torch.manual_seed(0)\n"
                                 "model = torch.nn.Sequential(torch.nn.Linear(16, 8), "
                                 "torch.nn.ReLU())\n"
                                 "model(torch.rand(1, 16))\n";
  RunResult r = run_turnkey({(dir / "m.py").string(), "--runtime", "torchscript", "--concurrency",
                             "2", "--iterations", "50"},
                            dir / "cache");
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("sustained with 2 requests in flight (1 shared session"), std::string::npos)
      << r.out;
  const json res = results_of_build(only_build(dir / "cache", "m_"));
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0]["sessions"], 1);
  EXPECT_EQ(res[0]["concurrency"], 2);
  EXPECT_GT(res[0]["jit_load_s"].get<double>(), 0);
  EXPECT_GE(res[0]["load_s"].get<double>(), res[0]["jit_load_s"].get<double>());
  // torch-eager cannot: one line, exit 2, before the script runs.
  RunResult eager = run_turnkey(
      {(dir / "m.py").string(), "--runtime", "torch-eager", "--concurrency", "2"}, dir / "cache");
  EXPECT_EQ(eager.exit_code, 2) << eager.all();
  EXPECT_EQ(eager.err,
            "turnkey: error: --concurrency 2: torch-eager cannot serve concurrent requests: it "
            "times its calls in one loop of the script's Python process, one call at a time\n");
}

TEST(Sweeps, CorpusRunKeepsEveryPointOfEveryInput) {
  TempDir dir{"tk-e2e-sweeps"};
  linear_relu(dir / "a.onnx");
  symbolic_dim(dir / "b.onnx");
  RunResult r = run_turnkey({(dir / "a.onnx").string(), (dir / "b.onnx").string(), "-j", "2",
                             "--concurrency", "1,2", "--iterations", "20"},
                            dir / "cache");
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(results_of_build(only_build(dir / "cache", "a_")).size(), 2u);
  EXPECT_EQ(results_of_build(only_build(dir / "cache", "b_")).size(), 2u);
}

}  // namespace
}  // namespace turnkey::test
