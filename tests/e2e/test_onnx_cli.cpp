// End-to-end: the built turnkey binary on ONNX files the tests generate.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "e2e_util.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class OnnxCli : public ::testing::Test {
 protected:
  TempDir dir{"tk-e2e-onnx"};
  fs::path cache() const { return dir.path() / "cache"; }

  // The single build dir the run created for `stem`.
  fs::path build_dir_for(const std::string& stem) const {
    for (const auto& e : fs::directory_iterator(cache())) {
      if (e.path().filename().string().rfind(stem + "_", 0) == 0) return e.path();
    }
    return {};
  }
};

TEST_F(OnnxCli, VersionPrintsVersion) {
  RunResult r = run_turnkey({"version"}, cache());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(^\d+\.\d+\.\d+\n$)"))) << r.out;
}

TEST_F(OnnxCli, BenchmarksLinearModelAndWritesStatsAndState) {
  fs::path model = dir / "linear.onnx";
  linear_relu(model);
  RunResult r = run_turnkey({model.string(), "--iterations", "50"}, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("linear.onnx:"), std::string::npos);
  EXPECT_NE(r.out.find("Parameters:     68 (272.0 B)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Input Shape:    'input': (1, 16)"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(Status:\s+Successfully benchmarked on .+ \(ort v1\.\d+\.\d+\))")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(Mean Latency:\s+\d+\.\d+\s+milliseconds \(ms\))")));
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(Throughput:\s+\d+\.\d\s+inferences per second \(IPS\))")));
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(median \d+\.\d+ \[95% CI \d+\.\d+, \d+\.\d+\].*p99 \d+\.\d+ \(50 iterations, cold \d+\.\d+\))")))
      << r.out;

  fs::path build = build_dir_for("linear");
  ASSERT_FALSE(build.empty());
  json stats = json_from_yaml(slurp(build / "turnkey_stats.yaml"));
  for (const char* key : {"mean_latency_ms", "median_latency_ms", "min_latency_ms",
                          "max_latency_ms", "std_latency_ms", "p90_latency_ms", "p99_latency_ms",
                          "median_ci_low_ms", "median_ci_high_ms", "throughput_ips"}) {
    ASSERT_TRUE(stats.contains(key)) << key;
    EXPECT_TRUE(stats[key].is_number()) << key;
  }
  EXPECT_EQ(stats["iterations"], 50);
  EXPECT_EQ(stats["parameters"], 68);
  EXPECT_EQ(stats["runtime"], "ort");
  EXPECT_EQ(stats["device"], "x86");
  EXPECT_EQ(stats["batch_size"], 1);
  const double median = stats["median_latency_ms"].get<double>();
  const double mean = stats["mean_latency_ms"].get<double>();
  EXPECT_GT(median, 0);
  EXPECT_LE(stats["min_latency_ms"].get<double>(), median);
  EXPECT_GE(stats["max_latency_ms"].get<double>(), stats["p99_latency_ms"].get<double>());
  EXPECT_NEAR(stats["throughput_ips"].get<double>(), 1000.0 / mean, 1e-6 * 1000.0 / mean);
  // The stored median is the median of the stored raw samples, to full precision (a latency of
  // a few microseconds must not be rounded to 0.001).
  ASSERT_TRUE(stats.contains("samples_file"));
  json samples = json::parse(slurp(build / stats["samples_file"].get<std::string>()));
  std::vector<double> v = samples["samples"].get<std::vector<double>>();
  ASSERT_EQ(v.size(), 50u);
  std::sort(v.begin(), v.end());
  EXPECT_NEAR(median, (v[24] + v[25]) / 2, median * 1e-9);

  json state = json_from_yaml(slurp(build / (build.filename().string() + "_state.yaml")));
  EXPECT_EQ(state["build_status"], "successful");
  EXPECT_EQ(state["sequence"], json({"load-onnx", "benchmark"}));
  EXPECT_TRUE(state.contains("turnkey_version"));
  EXPECT_TRUE(state.contains("started"));
  EXPECT_TRUE(state.contains("finished"));
  // Atomic writes leave no temp files behind.
  for (const auto& e : fs::directory_iterator(build)) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  }
}

TEST_F(OnnxCli, BenchmarksConvNetAndInt64Gather) {
  small_conv_net(dir / "conv.onnx");
  int64_gather(dir / "gather.onnx");
  RunResult r = run_turnkey({(dir / "conv.onnx").string(), (dir / "gather.onnx").string(),
                             "--iterations", "10"},
                            cache());
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(count_occurrences(r.out, "Successfully benchmarked"), 2) << r.out;
  EXPECT_NE(r.out.find("'input_ids': (1, 8)"), std::string::npos) << r.out;
  json stats = json_from_yaml(slurp(build_dir_for("gather") / "turnkey_stats.yaml"));
  EXPECT_EQ(stats["parameters"], 1600);
}

// Issue 17: a symbolic dim without --input-shapes runs with 1 and says so on one line naming the
// input and its dims; the block, the stats and the CSV key show the shape benchmarked.
TEST_F(OnnxCli, SymbolicDimsRunAsOneAndSaySo) {
  symbolic_dim(dir / "sym.onnx");
  RunResult ones = run_turnkey({(dir / "sym.onnx").string(), "--iterations", "10"}, cache());
  EXPECT_EQ(ones.exit_code, 0) << ones.all();
  std::vector<std::string> said;
  std::istringstream err(ones.err);
  for (std::string line; std::getline(err, line);) {
    if (line.find("symbolic") != std::string::npos) said.push_back(line);
  }
  ASSERT_EQ(said.size(), 1u) << ones.err;
  EXPECT_NE(said[0].find("sym.onnx"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("input 'x' [batch]"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("set to 1"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("--input-shapes x:1x16"), std::string::npos) << said[0];
  EXPECT_NE(ones.out.find("Input Shape:    'x': (1, 16)"), std::string::npos) << ones.out;
  EXPECT_EQ(ones.out.find("batch"), std::string::npos) << ones.out;
  json stats = json_from_yaml(slurp(build_dir_for("sym") / "turnkey_stats.yaml"));
  EXPECT_EQ(stats["input_shapes"], "x:1x16");
  EXPECT_EQ(stats["batch_size"], 1);
  // The load-onnx log keeps the line too.
  EXPECT_NE(slurp(build_dir_for("sym") / "log_load-onnx.txt").find("symbolic dims set to 1"),
            std::string::npos);

  // --build-only: no benchmark, and still the shape that would be fed.
  RunResult built = run_turnkey({(dir / "sym.onnx").string(), "--build-only"}, cache());
  EXPECT_EQ(built.exit_code, 0) << built.all();
  EXPECT_NE(built.out.find("Input Shape:    'x': (1, 16)"), std::string::npos) << built.out;

  // Given shapes: no line, the shape given.
  RunResult good = run_turnkey(
      {"-i", (dir / "sym.onnx").string(), "load-onnx", "--input-shapes", "x:8x16", "benchmark",
       "--iterations", "10"},
      cache());
  EXPECT_EQ(good.exit_code, 0) << good.all();
  EXPECT_EQ(good.err.find("symbolic"), std::string::npos) << good.err;
  EXPECT_NE(good.out.find("Input Shape:    'x': (8, 16)"), std::string::npos) << good.out;
  stats = json_from_yaml(slurp(build_dir_for("sym") / "turnkey_stats.yaml"));
  EXPECT_EQ(stats["batch_size"], 8);
  EXPECT_NEAR(stats["throughput_ips"].get<double>(),
              8 * 1000.0 / stats["mean_latency_ms"].get<double>(), 1e-3);
}

TEST_F(OnnxCli, BadInputsEachGetOneLineAndValidModelStillRuns) {
  linear_relu(dir / "good.onnx");
  write_bytes(dir / "empty.onnx", "");
  std::string noise;
  for (int i = 0; i < 4096; ++i) noise += static_cast<char>((i * 7919 + 13) % 256);
  write_bytes(dir / "random.onnx", noise);
  small_conv_net(dir / "whole.onnx");
  truncated_copy(dir / "whole.onnx", dir / "truncated.onnx", 0.5);
  symbolic_dim(dir / "symbolic.onnx");

  RunResult r = run_turnkey({(dir / "missing.onnx").string(), (dir / "empty.onnx").string(),
                             (dir / "random.onnx").string(), (dir / "truncated.onnx").string(),
                             (dir / "symbolic.onnx").string(), (dir / "good.onnx").string(),
                             "--iterations", "10"},
                            cache());
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_FALSE(looks_like_crash(r)) << r.all();
  // The symbolic model runs with batch 1 (issue 17).
  EXPECT_EQ(count_occurrences(r.out, "Successfully benchmarked"), 2) << r.all();
  const std::string all = r.all();
  // Each bad input is named on exactly one line, together with its reason.
  auto line_with = [&](const std::string& name) {
    std::vector<std::string> lines;
    std::istringstream in(all);
    for (std::string line; std::getline(in, line);) {
      if (line.find(name) != std::string::npos &&
          (line.find("turnkey:") != std::string::npos || line.find("Status:") != std::string::npos)) {
        lines.push_back(line);
      }
    }
    return lines;
  };
  auto expect_reason = [&](const std::string& name, const std::string& reason) {
    auto lines = line_with(name);
    ASSERT_EQ(lines.size(), 1u) << name << "\n" << all;
    EXPECT_NE(lines[0].find(reason), std::string::npos) << lines[0];
  };
  expect_reason("missing.onnx", "not found");
  expect_reason("empty.onnx", "empty file");
  expect_reason("random.onnx", "not an ONNX model");
  expect_reason("truncated.onnx", "not an ONNX model");
  // The symbolic model runs, saying once that its batch dim is 1.
  EXPECT_EQ(line_with("symbolic.onnx").size(), 1u) << all;
  EXPECT_NE(all.find("symbolic dims set to 1: input 'x' [batch]"), std::string::npos) << all;
}

// Issue 17: an export opset outside what the run's torch.onnx writes (torch 1.13: 7-17, torch 2.6:
// 7-20; read from torch/onnx/_constants.py by the interpreter probe) is one usage error, given
// before any script runs, for --opset and for TURNKEY_ONNX_OPSET; ONNX inputs, which are not
// exported, do not care.
TEST_F(OnnxCli, ExportOpsetCheckedAgainstTheRunsTorchBeforeAnyScriptRuns) {
  const fs::path marker = dir / "script_ran";
  const fs::path script = dir / "mlp.py";
  std::ofstream(script) << "import pathlib, torch\npathlib.Path(" << marker << ").touch()\n"
                        << "torch.manual_seed(0)\nm = torch.nn.Linear(4, 2)\nm(torch.rand(1, 4))\n";
  auto expect_refused = [&](const RunResult& r, const std::string& given) {
    EXPECT_EQ(r.exit_code, 2) << r.all();
    EXPECT_FALSE(fs::exists(marker)) << "the script ran before the opset was refused";
    const std::regex line(given + R"(: torch [0-9][^ ]* \([^)]*\) exports ONNX opsets 7 to \d+)");
    EXPECT_TRUE(std::regex_search(r.err, line)) << r.err;
    EXPECT_EQ(count_occurrences(r.err, "\n"), 1) << r.err;
  };
  // 30 is within the tool table's range (7-30) and beyond every torch's exporter.
  expect_refused(run_turnkey({script.string(), "--opset", "30"}, cache()), "--opset 30");
  expect_refused(run_turnkey({"-i", script.string(), "discover", "export-pytorch", "--opset", "30",
                              "benchmark"},
                             cache()),
                 "--opset 30");
  expect_refused(run_turnkey({script.string()}, cache(), {{"TURNKEY_ONNX_OPSET", "30"}}),
                 "TURNKEY_ONNX_OPSET=30");
  // Debian 12's torch 1.13 stops at 17: the documents' `--opset 18` says so.
  RunResult r18 = run_turnkey({script.string(), "--opset", "18"}, cache());
  if (r18.err.find("torch 1.13") != std::string::npos) expect_refused(r18, "--opset 18");

  // Not exported, not checked.
  linear_relu(dir / "m.onnx");
  RunResult onnx = run_turnkey({(dir / "m.onnx").string(), "--iterations", "5"}, cache(),
                               {{"TURNKEY_ONNX_OPSET", "30"}});
  EXPECT_EQ(onnx.exit_code, 0) << onnx.all();
  // Within the range: runs.
  RunResult ok = run_turnkey({script.string(), "--opset", "13", "--iterations", "5"}, cache());
  EXPECT_EQ(ok.exit_code, 0) << ok.all();
  EXPECT_TRUE(fs::exists(marker));
}

TEST_F(OnnxCli, ToolGrammarAndUsageErrors) {
  linear_relu(dir / "m.onnx");
  RunResult ok = run_turnkey({"-i", (dir / "m.onnx").string(), "load-onnx", "benchmark",
                              "--iterations", "5"},
                             cache());
  EXPECT_EQ(ok.exit_code, 0) << ok.all();
  EXPECT_NE(ok.out.find("Successfully benchmarked"), std::string::npos);

  RunResult typo_tool = run_turnkey({"-i", (dir / "m.onnx").string(), "load-onnx", "benchmrk"},
                                    cache());
  EXPECT_EQ(typo_tool.exit_code, 2);
  EXPECT_NE(typo_tool.err.find("did you mean 'benchmark'"), std::string::npos) << typo_tool.err;

  RunResult typo_opt = run_turnkey({(dir / "m.onnx").string(), "--iteratons", "5"}, cache());
  EXPECT_EQ(typo_opt.exit_code, 2);
  EXPECT_NE(typo_opt.err.find("did you mean '--iterations'"), std::string::npos) << typo_opt.err;

  RunResult no_first = run_turnkey({"-i", (dir / "m.onnx").string(), "benchmark"}, cache());
  EXPECT_EQ(no_first.exit_code, 2);
  EXPECT_NE(no_first.err.find("first tool"), std::string::npos) << no_first.err;

  // An unknown runtime is a usage error when the command line is read (issue 15).
  RunResult bad_runtime = run_turnkey({(dir / "m.onnx").string(), "--runtime", "orrt"}, cache());
  EXPECT_EQ(bad_runtime.exit_code, 2);
  EXPECT_NE(bad_runtime.all().find("did you mean 'ort'"), std::string::npos) << bad_runtime.all();

  RunResult absurd = run_turnkey({(dir / "m.onnx").string(), "--iterations", "0"}, cache());
  EXPECT_EQ(absurd.exit_code, 2);
  EXPECT_NE(absurd.all().find("--iterations"), std::string::npos) << absurd.all();
  EXPECT_FALSE(looks_like_crash(absurd));

  RunResult help = run_turnkey({"-h"}, cache());
  EXPECT_EQ(help.exit_code, 0);
  for (const char* s : {"First tools", "Sequence tools", "Management tools", "discover",
                        "load-onnx", "export-pytorch", "benchmark", "system-info"}) {
    EXPECT_NE(help.out.find(s), std::string::npos) << s;
  }
  RunResult tool_help = run_turnkey({"benchmark", "-h"}, cache());
  EXPECT_EQ(tool_help.exit_code, 0);
  EXPECT_NE(tool_help.out.find("--iterations"), std::string::npos);
  EXPECT_NE(tool_help.out.find("ort"), std::string::npos);
}

TEST_F(OnnxCli, CacheDirFlagWinsOverEnvironment) {
  RunResult env_only = run_turnkey({"cache", "location"}, dir / "from-env");
  EXPECT_EQ(env_only.exit_code, 0);
  EXPECT_EQ(env_only.out, (dir / "from-env").string() + "\n");
  RunResult flag = run_turnkey({"cache", "location", "-d", (dir / "from-flag").string()},
                               dir / "from-env");
  EXPECT_EQ(flag.out, (dir / "from-flag").string() + "\n");

  linear_relu(dir / "m.onnx");
  RunResult run = run_turnkey({(dir / "m.onnx").string(), "-d", (dir / "flagcache").string(),
                               "--iterations", "5"},
                              dir / "envcache");
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_TRUE(fs::exists(dir / "flagcache"));
  EXPECT_FALSE(fs::exists(dir / "envcache"));
}

TEST_F(OnnxCli, TextListsAndGlobs) {
  fs::create_directories(dir / "models" / "sub");
  linear_relu(dir / "models" / "a.onnx");
  small_conv_net(dir / "models" / "b.onnx");
  int64_gather(dir / "models" / "sub" / "c.onnx");
  write_bytes(dir / "models" / "list.txt",
              "# a comment\n\na.onnx\n  sub/c.onnx  \nnested.txt\n");
  write_bytes(dir / "models" / "nested.txt", "b.onnx\n");
  RunResult r = run_turnkey({(dir / "models" / "list.txt").string(), "--iterations", "5"}, cache());
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(count_occurrences(r.out, "Successfully benchmarked"), 3) << r.out;

  RunResult g = run_turnkey({(dir / "models" / "*.onnx").string(), "--iterations", "5"}, cache());
  EXPECT_EQ(g.exit_code, 0) << g.all();
  EXPECT_EQ(count_occurrences(g.out, "Successfully benchmarked"), 2) << g.out;

  write_bytes(dir / "models" / "loop.txt", "loop2.txt\n");
  write_bytes(dir / "models" / "loop2.txt", "loop.txt\n");
  RunResult cycle = run_turnkey({(dir / "models" / "loop.txt").string()}, cache(), {}, {}, 60);
  EXPECT_FALSE(cycle.timed_out);
  EXPECT_EQ(cycle.exit_code, 1);
  EXPECT_NE(cycle.err.find("cycle"), std::string::npos) << cycle.all();
}

TEST_F(OnnxCli, SystemInfoNamesCpuAndRuntimes) {
  RunResult r = run_turnkey({"system-info"}, cache(), {}, {}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.all();
  for (const char* s : {"CPU:", "Cores:", "ISA:", "Memory:", "OS:", "ONNX Runtime 1.", "Python:",
                        "ort"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
  // The thread default and what it rests on (issue 18), in the words docs/measurement.md uses.
  EXPECT_TRUE(std::regex_search(
      r.out,
      std::regex(R"(\nDefault threads: +[0-9]+ \([0-9]+ physical cores? of the [0-9]+ CPUs? )")))
      << r.out;
  EXPECT_NE(r.out.find("\nCPU quota:"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace turnkey::test
