// End-to-end (issues 18, 28): the correctness verdicts a runtime's result carries, through the
// built binary: outputs without signal checked on an intermediate tensor or inconclusive, a
// mismatch and the exporter's warning of it, a model that amplifies float32 rounding judged
// against float64, and scores tied in their order.
#include <gtest/gtest.h>

#include <regex>

#include "runtimes_fixture.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource = TURNKEY_SOURCE_DIR;

// Issue 18: a comparison of outputs that carry no signal is no pass. A zero-initialised head
// (torchvision's ViTs) is checked on the input of its last layer, named as such; an empty output
// whose only layer reads the graph input, and a torch runtime (no ONNX graph to add outputs to),
// are inconclusive with their latency kept; a runtime that gets an intermediate wrong is not
// passed either.
TEST_F(Runtimes, OutputsWithoutSignalAreCheckedOnAnIntermediateTensorOrInconclusive) {
  const fs::path scripts = kSource / "tests" / "data" / "scripts";
  RunResult r = run_turnkey({(scripts / "zero_head.py").string(), "--iterations", "10"}, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  // The ONNX value is named by the exporter: the TorchScript exporter's scope (torch 1.13), the
  // dynamo exporter's FX name (torch 2.15's default), found through its name_scopes metadata.
  const std::string value = torch2_run() ? "relu" : "/act/Relu_output_0";
  EXPECT_NE(r.out.find("Correctness:    within tolerance on intermediate tensors (the outputs "
                       "carry no signal: every output is all zeros): the input of 'head' (ONNX "
                       "value '" +
                       value + "')"),
            std::string::npos)
      << r.out;
  json s = stats_of("zero_head");
  EXPECT_EQ(s["correctness"]["verdict"], "within_tolerance_on_intermediates");
  EXPECT_EQ(s["correctness"]["signal"], false);
  EXPECT_EQ(s["correctness"]["compared"], "intermediate tensors");
  ASSERT_EQ(s["correctness"]["intermediates"].size(), 1u);
  EXPECT_EQ(s["correctness"]["intermediates"][0]["module"], "head");
  EXPECT_TRUE(s["correctness"]["intermediates"][0]["within"].get<bool>());
  // The report's correctness column carries the verdict word.
  RunResult report = run_turnkey({"report", "-r", (dir / "r").string()}, cache());
  ASSERT_EQ(report.exit_code, 0) << report.all();
  for (const auto& e : fs::directory_iterator(dir / "r")) {
    if (e.path().extension() != ".csv") continue;
    EXPECT_NE(slurp(e.path()).find(",within_tolerance_on_intermediates,"), std::string::npos);
  }

  // A second run reuses the export and its intermediate tensors (it once read as a damaged
  // state and exported again) and checks them the same way.
  r = run_turnkey({(scripts / "zero_head.py").string(), "--iterations", "10"}, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(r.all().find("damaged"), std::string::npos) << r.all();
  std::string export_log;
  for (const auto& e : fs::directory_iterator(cache())) {
    if (e.path().filename().string().rfind("zero_head_", 0) == 0) {
      export_log = slurp(e.path() / "log_export-pytorch.txt");
    }
  }
  EXPECT_NE(export_log.find("reused from cache"), std::string::npos) << export_log;
  EXPECT_EQ(stats_of("zero_head")["correctness"]["verdict"], "within_tolerance_on_intermediates");

  // The same build benchmarked on torch-eager: the PyTorch model has no ONNX graph here.
  r = run_turnkey(
      {(scripts / "zero_head.py").string(), "--iterations", "10", "--runtime", "torch-eager"},
      cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("Correctness:    inconclusive: outputs carry no signal (every output is "
                       "all zeros); torch-eager runs the PyTorch model"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Mean Latency:"), std::string::npos) << r.out;  // latency kept

  r = run_turnkey({(scripts / "no_boxes.py").string(), "--iterations", "10"}, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("Correctness:    inconclusive: outputs carry no signal (every output is "
                       "empty); the export found no intermediate tensor with signal"),
            std::string::npos)
      << r.out;
  s = stats_of("no_boxes");
  EXPECT_EQ(s["correctness"]["verdict"], "inconclusive");
  EXPECT_EQ(s["correctness"]["compared"], "nothing with signal");
  EXPECT_GT(s["median_latency_ms"].get<double>(), 0);
}

TEST_F(Runtimes, AnAlteredExportIsANumericMismatchAndNotAResult) {
  const fs::path script = kSource / "tests" / "data" / "scripts" / "altered_export.py";
  RunResult r = run_turnkey({script.string(), "--iterations", "20"}, cache());
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(std::regex_search(
      r.out,
      std::regex(
          R"(Status:\s+Numeric mismatch \(benchmark\): ort outputs differ from PyTorch's: outside tolerance: max abs error)")))
      << r.out;
  EXPECT_EQ(r.out.find("Mean Latency:"), std::string::npos) << "a mismatch shows no latency";
  json s = stats_of("altered_export");
  EXPECT_EQ(s["build_status"], "numeric_mismatch");
  EXPECT_FALSE(s["correctness"]["within"].get<bool>());
  EXPECT_GT(s["max_rel_error"].get<double>(), 0.1);

  // The report keeps the row, says why, and leaves its latency empty.
  RunResult rep =
      run_turnkey({"report", "-d", cache().string(), "-r", (dir.path() / "rep").string()}, cache());
  ASSERT_EQ(rep.exit_code, 0) << rep.all();
  fs::path csv;
  for (const auto& e : fs::directory_iterator(dir.path() / "rep")) {
    if (e.path().extension() == ".csv") csv = e.path();
  }
  const std::string text = slurp(csv);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(altered_export_[0-9a-f]{8},[^\n]*)")))
      << text;
  EXPECT_NE(m.str().find(",numeric_mismatch,"), std::string::npos) << m.str();
  EXPECT_EQ(m.str().find(s["median_latency_ms"].dump()), std::string::npos) << m.str();

  // torch-eager runs the live model, which is what PyTorch computes: no mismatch.
  RunResult eager =
      run_turnkey({script.string(), "--runtime", "torch-eager", "--iterations", "20"}, cache());
  EXPECT_EQ(eager.exit_code, 0) << eager.all();

  // A user who knows the model's outputs may widen the tolerance: then it is a result, and the
  // stats say which tolerance it met.
  const double rel = s["max_rel_error"].get<double>();
  RunResult loose = run_turnkey({script.string(), "--iterations", "5", "--max-rel-error",
                                 std::to_string(rel * 2), "--min-cosine", "0"},
                                cache());
  EXPECT_EQ(loose.exit_code, 0) << loose.all();
  s = stats_of("altered_export");
  EXPECT_EQ(s["correctness"]["verdict"], "within_tolerance");
  EXPECT_DOUBLE_EQ(s["correctness"]["tolerance_min_cosine"].get<double>(), 0);
}

// A mismatch the exporter warned of: the TorchScript exporter's advanced indexing with negative
// indices (what broke Longformer in the transformers corpus). The line names the warning, the
// stats keep it.
TEST_F(Runtimes, AMismatchTheExporterWarnedOfNamesTheWarning) {
  const fs::path script = kSource / "tests" / "data" / "scripts" / "negative_indices.py";
  RunResult r =
      run_turnkey({script.string(), "--exporter", "torchscript", "--iterations", "5"}, cache());
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(Status:\s+Numeric mismatch \(benchmark\): ort outputs differ from )"
                        R"(PyTorch's: outside tolerance: .*: not float32 rounding\) )"
                        R"(\(the exporter warned: UserWarning: )"
                        R"(Exporting aten::index operator of advanced indexing)")))
      << r.out;
  json s = stats_of("negative_indices");
  EXPECT_NE(s.value("exporter_warning", "").find("will produce incorrect results"),
            std::string::npos)
      << s.dump();
  // A mismatch the runtime repeats call after call is not the runtime disagreeing with itself.
  EXPECT_TRUE(s["correctness"]["repeat"]["within"].get<bool>()) << s.dump();
  EXPECT_EQ(r.out.find("nondeterministic"), std::string::npos) << r.out;
  // A faithful export carries no warning (the field is empty).
  const fs::path quiet = kSource / "tests" / "data" / "scripts" / "altered_export.py";
  RunResult q = run_turnkey({quiet.string(), "--iterations", "5"}, cache());
  EXPECT_EQ(q.out.find("the exporter warned"), std::string::npos) << q.out;
  EXPECT_EQ(stats_of("altered_export").value("exporter_warning", ""), "");
}

// A model that amplifies float32 rounding beyond the tolerance (a random 24-layer EmbeddingGemma 2:
// PyTorch's own float32 outputs 12% from its float64 ones) is no runtime's mismatch: the runtime
// is judged against PyTorch's float64 outputs, with 3 times PyTorch's own error as the tolerance
// (9 times its 1 - cosine: ONNX Runtime's own float32 error, drawn anew per model, reaches 2.6
// times PyTorch's on `drifting` on some CPUs);
// where float32 cannot compute the model at all, the verdict is inconclusive. A mismatch of a
// well-conditioned model stays one, and says so (above: "not float32 rounding").
TEST_F(Runtimes, AModelThatAmplifiesFloat32RoundingIsJudgedAgainstFloat64) {
  const fs::path script = kSource / "tests" / "data" / "scripts" / "amplified_rounding.py";
  RunResult r = run_turnkey({script.string(), "--iterations", "5"}, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("Correctness:    within tolerance of PyTorch's float64 outputs, the model "
                       "amplifying float32 rounding beyond the tolerance (PyTorch's own float32 "
                       "outputs against its float64 ones: "),
            std::string::npos)
      << r.out;
  json drifting = stats_of_model("drifting")["correctness"];
  EXPECT_EQ(drifting["verdict"], "within_tolerance_of_float64") << drifting.dump();
  EXPECT_EQ(drifting["compared"], "outputs, against float64");
  EXPECT_TRUE(drifting["within"].get<bool>());
  const json& f64 = drifting["float64"];
  EXPECT_TRUE(f64["amplifies_float32_rounding"].get<bool>());
  const double own_cosine = f64["pytorch_float32"]["cosine"].get<double>();
  EXPECT_LT(own_cosine, 0.9999);  // outside the tolerance ...
  EXPECT_GT(own_cosine, 0.99);    // ... yet still resembling the float64 outputs
  // 1 - cosine grows with the square of an error; the YAML keeps 10 digits.
  EXPECT_NEAR(f64["tolerance_min_cosine"].get<double>(), 1 - 9 * (1 - own_cosine), 1e-9);
  EXPECT_NE(r.out.find("the tolerance 3 times PyTorch's own error"), std::string::npos) << r.out;

  json lost = stats_of_model("lost")["correctness"];
  EXPECT_EQ(lost["verdict"], "inconclusive") << lost.dump();
  EXPECT_LT(lost["float64"]["pytorch_float32"]["cosine"].get<double>(), 0.99);
  EXPECT_NE(r.out.find("Correctness:    inconclusive: float32 arithmetic cannot compute this "
                       "model's outputs (PyTorch's own float32 outputs against its float64 ones: "),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("Numeric mismatch"), std::string::npos) << r.out;
  // Made on demand: not by the export, but asked of the script's process by the judge, both
  // models' outputs being outside the tolerance of the float32 ones (the last model's too: its
  // process was kept for it).
  for (const char* model : {"drifting", "lost"}) {
    const fs::path build = build_of_model(model);
    EXPECT_EQ(slurp(build / "log_export-pytorch.txt").find("float64 reference outputs in"),
              std::string::npos)
        << model;
    const std::string log = slurp(build / "log_benchmark.txt");
    EXPECT_NE(log.find("outside the tolerance of PyTorch's float32 outputs: its float64 outputs "
                       "asked for\nfloat64 reference outputs in "),
              std::string::npos)
        << model << ": " << log;
  }

  // A float64 run that cannot be made (here: past its time budget) leaves a mismatch that says
  // why rounding was not checked, as a field too.
  r = run_turnkey({script.string(), "--iterations", "5"}, cache(),
                  {{"TURNKEY_FLOAT64_BUDGET_S", "0"}});
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_NE(r.out.find("(no float64 check: over its 0 s budget (TURNKEY_FLOAT64_BUDGET_S))"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(stats_of_model("drifting")["float64_left_out"],
            "over its 0 s budget (TURNKEY_FLOAT64_BUDGET_S)");

  // Without the float64 run (its cost is one more forward), the same model is a mismatch.
  r = run_turnkey({script.string(), "--iterations", "5", "--no-float64-reference"}, cache());
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_EQ(stats_of_model("drifting")["correctness"]["verdict"], "outside_tolerance");
  EXPECT_FALSE(stats_of_model("drifting")["correctness"].contains("float64"));
  EXPECT_EQ(r.out.find("no float64 check"), std::string::npos) << "not asked for: nothing to say";
}

// The float64 rule forgives rounding, not export errors: the same amplifying network exported
// with one layer's weights off by 1e-3 is a mismatch, beyond the rule's tolerance, and says so.
TEST_F(Runtimes, AnExportErrorInAModelThatAmplifiesRoundingStaysAMismatch) {
  const fs::path script = kSource / "tests" / "data" / "scripts" / "amplified_miscompiled.py";
  RunResult r = run_turnkey({script.string(), "--iterations", "5"}, cache());
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_NE(r.out.find("Status:         Numeric mismatch (benchmark): ort outputs differ from "
                       "PyTorch's: outside tolerance: "),
            std::string::npos)
      << r.out;
  json s = stats_of_model("miscompiled");
  EXPECT_EQ(s["correctness"]["verdict"], "outside_tolerance") << s.dump();
  const json& f64 = s["correctness"]["float64"];
  EXPECT_TRUE(f64["amplifies_float32_rounding"].get<bool>()) << f64.dump();
  EXPECT_LT(f64["runtime"]["cosine"].get<double>(), f64["tolerance_min_cosine"].get<double>());
  EXPECT_NE(s.value("error", "")
                .find("(the model amplifies float32 rounding: PyTorch's own "
                      "float32 outputs against its float64 ones: "),
            std::string::npos)
      << s.value("error", "");
  // The one-line error is cut; the benchmark log keeps the whole verdict.
  const std::string log = slurp(build_of_model("miscompiled") / "log_benchmark.txt");
  EXPECT_NE(log.find("more than 3 times PyTorch's own error)"), std::string::npos) << log;
}

// Rows sorted by score where scores tie: another order is the same result; another row of the
// same score is inconclusive (reported, with its latency); both are in the stats and the report.
TEST_F(Runtimes, TiedScoresAreMatchedUpToTheirOrderAndOtherTiedRowsAreInconclusive) {
  const fs::path script = kSource / "tests" / "data" / "scripts" / "tied_scores.py";
  RunResult r = run_turnkey({script.string(), "--iterations", "5"}, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("4 of 7 rows in another order among tied scores"), std::string::npos)
      << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("Correctness:    inconclusive: [^\n]*1 of 6 rows other than the "
                        "reference's, with tied scores")))
      << r.out;
  const json whole = stats_of_model("whole_groups"), cut = stats_of_model("cut_in_group");
  EXPECT_EQ(whole["correctness"]["verdict"], "within_tolerance_up_to_ties");
  EXPECT_EQ(cut["correctness"]["verdict"], "inconclusive");
  EXPECT_GT(cut.value("median_latency_ms", 0.0), 0);  // an inconclusive check keeps its latency

  r = run_turnkey({"report", "-r", (dir.path() / "rep").string()}, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  std::string csv;
  for (const auto& e : fs::directory_iterator(dir.path() / "rep")) {
    if (e.path().extension() == ".csv") csv = slurp(e.path());
  }
  EXPECT_NE(csv.find(",successful,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",within_tolerance_up_to_ties,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",inconclusive,"), std::string::npos) << csv;
}

}  // namespace
}  // namespace turnkey::test
