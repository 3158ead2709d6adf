// Both grammars of the run command read into a RunRequest (nothing runs), and every bad option
// value refused when the command line is read.
#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.h"
#include "turnkey/cli/grammar.h"
#include "turnkey/catalog/tools.h"

namespace turnkey {
namespace {

using nlohmann::json;

RunRequest tool_grammar(const std::vector<std::string>& args) {
  std::optional<RunRequest> r = parse_tool_grammar(args, "turnkey ...");
  EXPECT_TRUE(r.has_value());
  return r.value_or(RunRequest{});
}

RunRequest classic(const std::vector<std::string>& args) {
  std::optional<RunRequest> r = parse_classic_grammar(args, "turnkey ...");
  EXPECT_TRUE(r.has_value());
  return r.value_or(RunRequest{});
}

std::vector<std::string> names(const RunRequest& r) {
  std::vector<std::string> out;
  for (const ToolCall& c : r.sequence) out.push_back(c.name);
  return out;
}

// The usage error a command line gives ("" when it parses).
template <typename Parse>
std::string usage_error(Parse parse, const std::vector<std::string>& args) {
  try {
    parse(args, "turnkey ...");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::string classic_error(const std::vector<std::string>& args) {
  return usage_error(parse_classic_grammar, args);
}
std::string tool_error(const std::vector<std::string>& args) {
  return usage_error(parse_tool_grammar, args);
}

TEST(ToolGrammar, SplitsGlobalOptionsAndToolsWithTheirOptions) {
  EXPECT_TRUE(is_tool_grammar({"-i", "a.py", "discover"}));
  EXPECT_TRUE(is_tool_grammar({"--input-files=a.py", "discover"}));
  EXPECT_FALSE(is_tool_grammar({"a.py", "--iterations", "5"}));
  RunRequest r = tool_grammar({"-i", "a.py", "b.onnx", "-d", "/tmp/c", "--rebuild", "always",
                               "discover", "--max-depth", "1", "export-pytorch", "--opset", "16",
                               "benchmark", "--iterations", "7", "--rt-args", "threads=1"});
  EXPECT_EQ(r.global.inputs, (std::vector<std::string>{"a.py", "b.onnx"}));
  EXPECT_EQ(r.global.cache_dir, "/tmp/c");
  EXPECT_EQ(r.global.rebuild, "always");
  EXPECT_EQ(names(r), (std::vector<std::string>{"discover", "export-pytorch", "benchmark"}));
  EXPECT_EQ(r.sequence[0].options, json({{"max_depth", 1}}));
  EXPECT_EQ(r.sequence[1].options, json({{"opset", 16}}));
  // Only what the user gave: defaults come from the table when the engine runs.
  EXPECT_EQ(r.sequence[2].options, json({{"iterations", 7}, {"rt_args", {"threads=1"}}}));
}

// The tool-sequence guide's `turnkey -i FILES` with no tool runs what `turnkey FILES` runs.
TEST(ToolGrammar, InputsWithoutAToolRunTheClassicDefault) {
  RunRequest r = tool_grammar({"-i", "a.py", "b.onnx"});
  EXPECT_EQ(names(r), names(classic({"a.py", "b.onnx"})));
  EXPECT_EQ(r.global.inputs, (std::vector<std::string>{"a.py", "b.onnx"}));
}

TEST(ToolGrammar, RefusesBadSequencesAndNamesTheMistake) {
  EXPECT_NE(tool_error({"--cache-dir", "c"}).find("no tool given"), std::string::npos);
  EXPECT_NE(tool_error({"-i", "a.py", "benchmark"}).find("cannot start a sequence"),
            std::string::npos);
  // The tool that makes what is needed from what the build has, never the tool itself.
  EXPECT_EQ(tool_error({"-i", "a.py", "discover", "convert-fp16"}),
            "convert-fp16 needs an ONNX model: put export-pytorch before it");
  EXPECT_EQ(tool_error({"-i", "a.py", "discover", "--iteratons", "5"}),
            "discover: unknown option '--iteratons'");
  EXPECT_EQ(tool_error({"-i", "a.py", "discover", "benchmark", "--iteratons", "5"}),
            "benchmark: unknown option '--iteratons' (did you mean '--iterations'?)");
  EXPECT_EQ(tool_error({"-i", "benchmrk", "discover"}),
            "unknown tool 'benchmrk' (did you mean 'benchmark'?)");
}

TEST(ToolGrammar, ChecksEveryToolsValuesBeforeAnyWork) {
  EXPECT_EQ(tool_error({"-i", "a.py", "discover", "benchmark", "--iterations", "-5"}),
            "--iterations -5: expected a whole number from 1 to 100000000");
  EXPECT_EQ(tool_error({"-i", "a.py", "discover", "export-pytorch", "--opset", "99"}),
            "--opset 99: expected a whole number from 7 to 30");
  EXPECT_EQ(tool_error({"-i", "a.onnx", "load-onnx", "optimize-ort", "--level", "extnded"}),
            "--level 'extnded': not one of basic, extended, layout, all (did you mean "
            "'extended'?)");
  EXPECT_NE(tool_error({"-i", "a.onnx", "load-onnx", "--input-shapes", "x"}).find(
                "--input-shapes 'x'"),
            std::string::npos);
  EXPECT_EQ(tool_error({"-i", "a.py", "--process-isolation", "--use-slurm", "discover"})
                .rfind("--process-isolation and --use-slurm exclude each other", 0),
            0u);
}

TEST(ClassicGrammar, MapsOntoAutoFirstToolExportAndBenchmark) {
  RunRequest r = classic({"a.py", "--iterations", "5", "--opset", "16", "--max-depth", "1"});
  EXPECT_EQ(r.global.inputs, (std::vector<std::string>{"a.py"}));
  EXPECT_EQ(names(r), (std::vector<std::string>{"auto", "discover", "load-onnx", "export-pytorch",
                                                "benchmark"}));
  EXPECT_EQ(r.sequence[1].options, json({{"max_depth", 1}}));
  EXPECT_EQ(r.sequence[3].options, json({{"opset", 16}}));
  EXPECT_EQ(r.sequence[4].options, json({{"iterations", 5}}));
  // `benchmark` as the first word is the same grammar.
  EXPECT_EQ(names(classic({"benchmark", "a.py"})), names(classic({"a.py"})));
  EXPECT_EQ(names(classic({"a.py", "--sequence", "optimize-fp16", "--build-only"})),
            (std::vector<std::string>{"auto", "discover", "load-onnx", "export-pytorch",
                                      "optimize-ort", "convert-fp16"}));
  EXPECT_EQ(names(classic({"a.py", "--analyze-only"})),
            (std::vector<std::string>{"auto", "discover", "load-onnx"}));
  // A torch runtime starts from the live model: no export.
  EXPECT_EQ(names(classic({"a.py", "--runtime", "torch-eager"})),
            (std::vector<std::string>{"auto", "discover", "load-onnx", "benchmark"}));
}

TEST(ClassicGrammar, ReadsASequenceFileAndChecksItsValues) {
  test::TempDir dir;
  const std::string good = (dir / "good.yaml").string();
  std::ofstream(good) << "- export-pytorch\n- optimize-ort: {level: extended}\n";
  RunRequest r = classic({"a.py", "--sequence-file", good});
  EXPECT_EQ(names(r), (std::vector<std::string>{"auto", "discover", "load-onnx", "export-pytorch",
                                                "optimize-ort", "benchmark"}));
  EXPECT_EQ(r.sequence[4].options, json({{"level", "extended"}}));
  const std::string bad = (dir / "bad.yaml").string();
  std::ofstream(bad) << "- export-pytorch\n- benchmark: {iterations: many}\n";
  EXPECT_EQ(classic_error({"a.py", "--sequence-file", bad}),
            "--sequence-file " + bad + ": --iterations many: expected a whole number");
  const std::string missing = (dir / "missing.yaml").string();
  EXPECT_EQ(classic_error({"a.py", "--sequence-file", missing}).rfind(
                "--sequence-file " + missing + ": cannot read", 0),
            0u)
      << classic_error({"a.py", "--sequence-file", missing});
  const std::string unknown = (dir / "unknown.yaml").string();
  std::ofstream(unknown) << "- export-pytorch: {opsett: 16}\n";
  EXPECT_EQ(classic_error({"a.py", "--sequence-file", unknown}),
            "--sequence-file " + unknown + ": export-pytorch has no option 'opsett'");
}

// Issue 17: the reference tool's stage names, and a file for ONNX inputs that starts with
// load-onnx (the first tool the input gives anyway) and has no export.
TEST(ClassicGrammar, SequenceFileAliasesAndALeadingFirstTool) {
  test::TempDir dir;
  const std::string onnx = (dir / "onnx.yaml").string();
  std::ofstream(onnx) << "- load-onnx\n- optimize_onnx\n- fp16_conversion\n- set_success\n";
  EXPECT_EQ(names(classic({"m.onnx", "--sequence-file", onnx})),
            (std::vector<std::string>{"auto", "discover", "load-onnx", "optimize-ort",
                                      "convert-fp16", "benchmark"}));
  const std::string late = (dir / "late.yaml").string();
  std::ofstream(late) << "- export_pytorch\n- discover\n";
  const std::string error = classic_error({"a.py", "--sequence-file", late});
  EXPECT_NE(error.find("'discover' is not a sequence tool (the first tool comes from the input"),
            std::string::npos)
      << error;
}

// The values of issue 15: refused when the command line is read, also when --analyze-only
// leaves the benchmark out.
TEST(ClassicGrammar, RefusesEveryBadValueAlsoWithAnalyzeOnly) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--iterations", "-5"}, "--iterations -5: expected a whole number from 1 to 100000000"},
      {{"--runtime", "tensorrt"}, "--runtime 'tensorrt': not one of "},
      {{"--adaptive", "--duration", "1"}, "--adaptive and --duration exclude each other"},
      {{"--device", "tpu"}, "--device 'tpu': not one of x86, nvidia"},
      {{"--duration", "0"}, "--duration 0: expected a number more than 0 and at most 86400"},
      {{"--adaptive", "--ci-target", "0"}, "--ci-target 0: expected a number more than 0"},
      {{"--min-iterations", "50", "--max-iterations", "10"}, "need min <= max"},
      {{"--warmup", "-1"}, "--warmup -1: expected a whole number from 0"},
      {{"--threads", "5000"}, "--threads 5000: expected a whole number from 0 to 4096"},
      {{"--max-rel-error", "-1"}, "--max-rel-error -1: expected a number at least 0"},
      {{"--min-cosine", "1.5"}, "--min-cosine 1.5: expected a number from -1 to 1"},
      {{"--pin", "1-0"}, "--pin '1-0'"},
      {{"--rt-args", "threads"}, "--rt-args 'threads': expected key=value"},
      {{"--opset", "3"}, "--opset 3: expected a whole number from 7 to 30"},
      {{"--max-depth", "-1"}, "--max-depth -1: expected a whole number at least 0"},
      {{"--build-name", "../x"}, "--build-name '../x': not a usable directory name"},
      {{"--script-args", "'unclosed"}, "--script-args ''unclosed': no closing quotation"},
      {{"--input-shapes", "x:1xq"}, "--input-shapes 'x:1xq'"},
      {{"--memory-limit", "lots"}, "--memory-limit lots: expected a size such as 512M or 4G"},
      {{"--iterations", "five"}, "--iterations"},
      {{"--rebuild", "alway"},
       "--rebuild 'alway': not one of if_needed, always, never (did you mean 'always'?)"},
      {{"--iterations", "2", "--iterations", "3"}, "--iterations was given 2 times: give it once"},
  };
  for (const auto& [options, message] : cases) {
    for (bool analyze_only : {false, true}) {
      std::vector<std::string> args = {"a.py"};
      args.insert(args.end(), options.begin(), options.end());
      if (analyze_only) args.push_back("--analyze-only");
      const std::string error = classic_error(args);
      EXPECT_NE(error.find(message), std::string::npos)
          << "args: " << ::testing::PrintToString(args) << "\nerror: " << error;
    }
  }
  // A check's own message names its option once (CLI11 put the name before it again).
  const std::string error = classic_error({"a.py", "--memory-limit", "lots"});
  EXPECT_EQ(error.find("--memory-limit: --memory-limit"), std::string::npos) << error;
}

// Issue 20: sweeps in both grammars. --concurrency and --batch-sizes read as lists of numbers,
// --input-shapes once per use (a positional input after it stays an input), and each refused
// with one line when the command line is read.
TEST(Sweeps, BothGrammarsReadTheSweepOptions) {
  RunRequest r = classic({"m.onnx", "--concurrency", "1,2", "--batch-sizes", "1, 4",
                          "--input-shapes", "x:1x16", "--input-shapes", "x:2x16", "n.onnx"});
  EXPECT_EQ(r.global.inputs, (std::vector<std::string>{"m.onnx", "n.onnx"}));
  EXPECT_EQ(r.sequence[4].options["concurrency"], json({1, 2}));
  // --batch-sizes goes to both first tools: the input's kind picks which applies.
  EXPECT_EQ(r.sequence[1].options["batch_sizes"], json({1, 4}));
  EXPECT_EQ(r.sequence[2].options["batch_sizes"], json({1, 4}));
  EXPECT_EQ(r.sequence[2].options["input_shapes"], json({"x:1x16", "x:2x16"}));
  // One use stays a string, as before the option could be repeated.
  EXPECT_EQ(classic({"m.onnx", "--input-shapes", "x:1x16"}).sequence[2].options["input_shapes"],
            "x:1x16");
  RunRequest t = tool_grammar(
      {"-i", "m.onnx", "load-onnx", "--batch-sizes", "2", "benchmark", "--concurrency", "4"});
  EXPECT_EQ(t.sequence[0].options["batch_sizes"], json({2}));
  EXPECT_EQ(t.sequence[1].options["concurrency"], json({4}));
  EXPECT_EQ(tool_grammar(
                {"-i", "a.py", "discover", "--batch-sizes", "1,8", "export-pytorch", "benchmark"})
                .sequence[0]
                .options["batch_sizes"],
            json({1, 8}));
  // The default: one request at a time.
  EXPECT_EQ(default_tool_options(*find_tool("benchmark"))["concurrency"], 1);
}

TEST(Sweeps, RefusesBadValuesWithOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--concurrency", "0"}, "--concurrency 0: expected whole numbers from 1 to 1024"},
      {{"--concurrency", "2000"}, "--concurrency 2000: expected whole numbers from 1 to 1024"},
      {{"--concurrency", "1,1"}, "--concurrency 1,1: 1 is given twice"},
      {{"--concurrency", "two"}, "--concurrency two: expected whole numbers separated by commas"},
      {{"--concurrency", "1,,2"}, "--concurrency 1,,2: expected whole numbers separated by commas"},
      {{"--concurrency", "2", "--adaptive"},
       "--concurrency 2: --adaptive stops on one request's median"},
      {{"--concurrency", "1,2", "--runtime", "torch-eager"},
       "--concurrency 2: torch-eager cannot serve concurrent requests: it times its calls in one "
       "loop of the script's Python process"},
      {{"--concurrency", "2", "--runtime", "torch-compiled"},
       "--concurrency 2: torch-compiled cannot serve concurrent requests"},
      {{"--batch-sizes", "0"}, "--batch-sizes 0: expected whole numbers from 1 to 1000000"},
      {{"--batch-sizes", "4,2,4"}, "--batch-sizes 4,2,4: 4 is given twice"},
      {{"--batch-sizes", "2", "--script-args", "--batch_size 3"},
       "--batch-sizes and --script-args '--batch_size 3' both set the batch size"},
      {{"--input-shapes", "x:1x16", "--input-shapes", "x:0x16"}, "--input-shapes 'x:0x16'"},
  };
  for (const auto& [options, message] : cases) {
    std::vector<std::string> args = {"a.py"};
    args.insert(args.end(), options.begin(), options.end());
    const std::string error = classic_error(args);
    EXPECT_EQ(error.rfind(message, 0), 0u)
        << "args: " << ::testing::PrintToString(args) << "\nerror: " << error;
  }
  // A concurrency of 1 is the single-request loop: every runtime serves it.
  EXPECT_EQ(classic_error({"a.py", "--concurrency", "1", "--runtime", "torch-eager"}), "");
  EXPECT_EQ(
      tool_error({"-i", "a.py", "discover", "--batch-sizes", "1", "--attach", "0,1", "benchmark"})
          .rfind("--batch-sizes runs the script once per size", 0),
      0u);
  // The values of a sequence file: a number or a list.
  EXPECT_NO_THROW(validate_tool_options(*find_tool("benchmark"), {{"concurrency", 2}}));
  EXPECT_NO_THROW(validate_tool_options(*find_tool("benchmark"), {{"concurrency", {1, 2}}}));
  EXPECT_THROW(validate_tool_options(*find_tool("benchmark"), {{"concurrency", json::array()}}),
               Error);
  EXPECT_THROW(validate_tool_options(*find_tool("benchmark"), {{"concurrency", "1,2"}}), Error);
}

TEST(ToolTable, DefaultsAndHelpComeFromTheTable) {
  const ToolSpec& bench = *find_tool("benchmark");
  const json defaults = default_tool_options(bench);
  EXPECT_EQ(defaults["iterations"], 100);
  EXPECT_EQ(defaults["warmup"], 10);
  EXPECT_EQ(defaults["ci_target_pct"], 2.0);
  EXPECT_FALSE(defaults.contains("duration_s"));
  const json resolved = tool_options_with_defaults(bench, {{"iterations", 3}});
  EXPECT_EQ(resolved["iterations"], 3);
  EXPECT_EQ(resolved["runtime"], "ort");
  for (const OptionSpec& o : bench.options) {
    if (o.key == "iterations") {
      EXPECT_NE(option_help(o).find("(from 1 to 100000000; default: 100)"), std::string::npos)
          << option_help(o);
    }
  }
}

}  // namespace
}  // namespace turnkey
