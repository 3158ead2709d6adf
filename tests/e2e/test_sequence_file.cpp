// End-to-end: --sequence-file as a Python file defining a Sequence (the reference tool's
// extras/example_sequence.py), its stage-name aliases, custom stages written in Python
// (python-stage, docs/sequences.md), and sequence files for ONNX inputs.
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

// A custom stage that stamps the model's metadata; KEY and VALUE are replaced per test.
constexpr const char* kStampSequence = R"(from turnkeyml.build.stage import Sequence, Stage


class Stamp(Stage):
    def __init__(self):
        super().__init__(unique_name="stamp", value="VALUE")

    def fire(self, input_onnx, output_onnx):
        import onnx
        model = onnx.load(input_onnx)
        entry = model.metadata_props.add()
        entry.key, entry.value = "stamp", self.options["value"]
        print("stamped", self.options["value"])
        try:
            open(input_onnx + ".beside", "w").close()
            print("stage wrote beside its input")
        except OSError:
            print("stage denied beside its input")
        onnx.save(model, output_onnx)


class Broken(Stage):
    def fire(self, input_onnx, output_onnx):
        raise RuntimeError("this stage always fails")


sequence = Sequence("stamped", stages=[STAGES])
)";

class SequenceFile : public ::testing::Test {
 protected:
  TempDir dir{"tk-e2e-seqfile"};
  fs::path cache() const { return dir.path() / "cache"; }
  void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  fs::path stamp_file(const std::string& value, const std::string& stages) {
    std::string text = kStampSequence;
    text.replace(text.find("VALUE"), 5, value);
    text.replace(text.find("STAGES"), 6, stages);
    fs::path p = dir / "stamp_sequence.py";
    write(p, text);
    return p;
  }
  std::vector<fs::path> builds() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(cache())) {
      if (fs::exists(e.path() / "turnkey_stats.yaml") ||
          fs::exists(e.path() / (e.path().filename().string() + "_state.yaml"))) {
        out.push_back(e.path());
      }
    }
    return out;
  }
  static json state_of(const fs::path& build) {
    return json_from_yaml(slurp(build / (build.filename().string() + "_state.yaml")));
  }
};

TEST_F(SequenceFile, YamlSequenceForAnOnnxInputMayStartWithLoadOnnx) {
  linear_relu(dir / "m.onnx");
  write(dir / "plain.yaml", "- optimize-ort\n");
  write(dir / "first.yaml", "- load-onnx\n- optimize_onnx\n- set_success\n");
  write(dir / "first.py",
        "from turnkeyml.build.stage import Sequence\n"
        "sequence = Sequence('onnx_only', stages=['load-onnx', 'optimize_onnx', 'set_success'])\n");
  for (const char* file : {"plain.yaml", "first.yaml", "first.py"}) {
    RunResult r = run_turnkey(
        {(dir / "m.onnx").string(), "--sequence-file", (dir / file).string(), "--iterations", "3"},
        cache());
    ASSERT_EQ(r.exit_code, 0) << file << "\n" << r.all();
    EXPECT_EQ(state_of(builds().front())["sequence"],
              json({"load-onnx", "optimize-ort", "benchmark"}))
        << file;
  }
  // A first tool anywhere else is named as such, and the did-you-mean never offers the word.
  write(dir / "late.yaml", "- optimize-ort\n- load-onnx\n");
  RunResult late = run_turnkey(
      {(dir / "m.onnx").string(), "--sequence-file", (dir / "late.yaml").string()}, cache());
  EXPECT_EQ(late.exit_code, 2);
  EXPECT_NE(late.err.find("'load-onnx' is not a sequence tool (the first tool comes from the "
                          "input"),
            std::string::npos)
      << late.err;
  EXPECT_EQ(late.err.find("did you mean 'load-onnx'"), std::string::npos) << late.err;
  write(dir / "typo.yaml", "- export_pytorh\n");
  RunResult typo = run_turnkey(
      {(dir / "m.onnx").string(), "--sequence-file", (dir / "typo.yaml").string()}, cache());
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("did you mean 'export_pytorch'"), std::string::npos) << typo.err;
}

TEST_F(SequenceFile, PythonCustomStageRunsCachesAndLogs) {
  linear_relu(dir / "m.onnx");
  const fs::path seq = stamp_file("one", "\"optimize_onnx\", Stamp()");
  std::vector<std::string> args = {(dir / "m.onnx").string(), "--sequence-file", seq.string(),
                                   "--iterations", "3"};
  RunResult r = run_turnkey(args, cache());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  ASSERT_EQ(builds().size(), 1u);
  const fs::path b = builds().front();
  json st = state_of(b);
  EXPECT_EQ(st["sequence"], json({"load-onnx", "optimize-ort", "stamp", "benchmark"}));
  EXPECT_EQ(st["tools"][2]["name"], "python-stage");
  EXPECT_EQ(st["tools"][2]["stage"], "stamp");
  EXPECT_NE(st["onnx_path"].get<std::string>().find("-stamp.onnx"), std::string::npos);
  EXPECT_NE(slurp(b / "log_stamp.txt").find("stamped one"), std::string::npos);
  EXPECT_NE(slurp(st["onnx_path"].get<std::string>()).find("stamp"), std::string::npos);

  // Unchanged: reused from the cache. A changed parameter (its source): run again.
  RunResult again = run_turnkey(args, cache());
  ASSERT_EQ(again.exit_code, 0) << again.all();
  EXPECT_EQ(state_of(b)["tools"][2].value("reused", false), true) << state_of(b).dump();
  stamp_file("two", "\"optimize_onnx\", Stamp()");
  RunResult changed = run_turnkey(args, cache());
  ASSERT_EQ(changed.exit_code, 0) << changed.all();
  EXPECT_FALSE(state_of(b)["tools"][2].value("reused", false));
  EXPECT_NE(slurp(b / "log_stamp.txt").find("stamped two"), std::string::npos);

  // --sandbox: the stage runs sandboxed, its output taken from a staging folder; the build dir is
  // read-only to it.
  stamp_file("three", "\"optimize_onnx\", Stamp()");
  args.push_back("--sandbox");
  RunResult boxed = run_turnkey(args, cache());
  ASSERT_EQ(boxed.exit_code, 0) << boxed.all();
  const std::string log = slurp(b / "log_stamp.txt");
  EXPECT_NE(log.find("stamped three"), std::string::npos) << log;
  EXPECT_NE(log.find("stage denied beside its input"), std::string::npos) << log;
  EXPECT_NE(slurp(state_of(b)["onnx_path"].get<std::string>()).find("three"), std::string::npos);
  EXPECT_FALSE(fs::exists(cache() / ".staging"));
}

TEST_F(SequenceFile, FailingCustomStageFailsItsBuildWithOneLine) {
  linear_relu(dir / "m.onnx");
  const fs::path seq = stamp_file("x", "Broken()");
  RunResult r = run_turnkey({(dir / "m.onnx").string(), "--sequence-file", seq.string()}, cache());
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_NE(r.out.find("Failed at broken: RuntimeError: this stage always fails"),
            std::string::npos)
      << r.all();
  json st = state_of(builds().front());
  EXPECT_EQ(st["status"], "stage_failed");
  EXPECT_NE(slurp(builds().front() / "log_broken.txt").find("Traceback"), std::string::npos);
}

TEST_F(SequenceFile, UnusablePythonSequenceFilesAreUsageErrors) {
  linear_relu(dir / "m.onnx");
  write(dir / "syntax.py", "def broken(:\n");
  write(dir / "none.py", "x = 1\n");
  write(dir / "badstage.py",
        "from turnkeyml.build.stage import Sequence\nsequence = Sequence('s', "
        "stages=['optimise_onnx'])\n");
  for (const auto& [file, expected] : std::vector<std::pair<std::string, std::string>>{
           {"syntax.py", "SyntaxError"},
           {"none.py", "defines no Sequence"},
           {"badstage.py", "'optimise_onnx' is not a build tool"}}) {
    RunResult r =
        run_turnkey({(dir / "m.onnx").string(), "--sequence-file", (dir / file).string()}, cache());
    EXPECT_EQ(r.exit_code, 2) << file << "\n" << r.all();
    EXPECT_NE(r.err.find(expected), std::string::npos) << file << "\n" << r.err;
    EXPECT_EQ(count_occurrences(r.err, "\n"), 1) << r.err;  // one line
  }
}

TEST_F(SequenceFile, TheDocumentsExampleSequenceOnTheHelloWorldScript) {
  // benchit benchmark scripts/hello_world.py --sequence-file extras/example_sequence.py
  //   --build-only, from examples/cli as the tutorial says.
  const fs::path examples = fs::path(TURNKEY_SOURCE_DIR) / "examples" / "cli";
  RunResult r = run_turnkey({"benchmark", "scripts/hello_world.py", "--sequence-file",
                             "extras/example_sequence.py", "--build-only"},
                            cache(), {}, examples);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  ASSERT_EQ(builds().size(), 1u);
  json st = state_of(builds().front());
  EXPECT_EQ(st["sequence"], json({"discover", "export-pytorch", "add-metadata"}));
  EXPECT_EQ(st["build_status"], "successful");
  const std::string onnx = slurp(st["onnx_path"].get<std::string>());
  EXPECT_NE(onnx.find("built_with"), std::string::npos);
  EXPECT_NE(slurp(builds().front() / "log_add-metadata.txt").find("metadata built_with = turnkey"),
            std::string::npos);
}

}  // namespace
}  // namespace turnkey::test
