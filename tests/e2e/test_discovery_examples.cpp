// Discovery acceptance tests (issue 3), written from the user's side: the tutorial scripts (examples/cli/scripts): every field, hash filters, stable hashes, --max-depth, the tool-sequence forms.
// The runs several tests share and the report readers are in discovery_support.h.
#include "discovery_support.h"

namespace turnkey::test {
namespace {

TEST(DiscoveryExamples, AnalyzeOnlyListsEveryModelWithEveryField) {
  const RunResult& r = examples_analyze_only();
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_FALSE(looks_like_crash(r)) << r.all();

  struct Expected {
    std::string script, model, class_name, call, parameters, input_shape;
  };
  const std::vector<Expected> expected = {
      {"hello_world.py", "pytorch_model", "SmallModel", "pytorch_model(**inputs)", "55 (220.0 B)",
       "'x': (10,)"},
      {"two_models.py", "pytorch_model", "SmallModel", "pytorch_model(**inputs)", "55 (220.0 B)",
       "'x': (10,)"},
      {"two_models.py", "another_pytorch_model", "SmallModel",
       "another_pytorch_model(**more_inputs)", "510 (1.99 KB)", "'x': (50,)"},
      {"max_depth.py", "pytorch_model", "TwoLayerModel", "pytorch_model(**inputs)", "85 (340.0 B)",
       "'x': (10,)"},
  };
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.script + " " + e.model);
    const std::string block = script_block(r.out, e.script);
    ASSERT_FALSE(block.empty()) << r.out;
    const std::string model = model_block(block, e.model);
    ASSERT_FALSE(model.empty()) << block;
    // Executed count and the time of the first call, as the reference prints them.
    EXPECT_TRUE(
        std::regex_match(title_of(model), std::regex(e.model + R"( \(executed 1x - \d+\.\d\ds\))")))
        << title_of(model);
    EXPECT_EQ(field(model, "Model Type"), "Pytorch (torch.nn.Module)");
    const std::string stem = e.script.substr(0, e.script.size() - 3);
    EXPECT_EQ(field(model, "Class"),
              e.class_name + " (<class '" + stem + "." + e.class_name + "'>)");
    const fs::path file = kExamples / e.script;
    EXPECT_EQ(field(model, "Location"),
              file.string() + ", line " + std::to_string(line_of(file, e.call)));
    EXPECT_EQ(field(model, "Parameters"), e.parameters);
    EXPECT_EQ(field(model, "Input Shape"), e.input_shape);
    EXPECT_TRUE(is_hash8(field(model, "Hash"))) << model;
  }

  // One module called with two input shapes: one entry per signature, grouped under the model.
  const std::string multi =
      model_block(script_block(r.out, "multiple_invocations.py"), "pytorch_model");
  EXPECT_EQ(title_of(multi), "pytorch_model") << multi;
  EXPECT_EQ(field(multi, "Class"), "SmallModel (<class 'multiple_invocations.SmallModel'>)");
  EXPECT_EQ(field(multi, "Parameters"), "65 (260.0 B)");
  EXPECT_NE(multi.find("With input shape 1 (executed 2x)"), std::string::npos) << multi;
  EXPECT_NE(multi.find("With input shape 2 (executed 1x)"), std::string::npos) << multi;
  EXPECT_EQ(fields(multi, "Input Shape"),
            (std::vector<std::string>{"'x': (1, 12)", "'x': (2, 12)"}));
  std::vector<std::string> hashes = fields(multi, "Hash");
  ASSERT_EQ(hashes.size(), 2u) << multi;
  EXPECT_NE(hashes[0], hashes[1]);

  // The two models of two_models.py differ, so do their hashes.
  EXPECT_NE(example_hash("two_models.py", "pytorch_model"),
            example_hash("two_models.py", "another_pytorch_model"));
  // Without --max-depth, sub-modules are not listed.
  EXPECT_EQ(count_titles(script_block(r.out, "max_depth.py"), "fc"), 0) << r.out;

  // Nothing built, nothing benchmarked, nothing in the cache.
  EXPECT_EQ(r.out.find("Build dir:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Status:"), std::string::npos) << r.out;
  EXPECT_TRUE(build_dirs(cache_of("examples-analyze")).empty());

  // Each script's own output comes before its results.
  EXPECT_LT(r.out.find("batch of 2: pytorch_outputs"), r.out.find("\nmultiple_invocations.py:\n"));
  EXPECT_LT(r.out.find("more_pytorch_outputs: tensor("), r.out.find("\ntwo_models.py:\n"));
}

// Acceptance 2: `turnkey two_models.py::<hash>`, with the hash another run printed.
const RunResult& hash_filter_run() {
  std::vector<std::string> args = {example("two_models.py") +
                                   "::" + example_hash("two_models.py", "another_pytorch_model")};
  args.insert(args.end(), kFastBenchmark.begin(), kFastBenchmark.end());
  // Another PYTHONHASHSEED than the analyze-only run: hashes must not depend on it.
  return run_once("hash-filter", args, {{"PYTHONHASHSEED", "4242"}});
}

TEST(DiscoveryExamples, HashFilterBenchmarksOnlyThatModel) {
  const std::string wanted = example_hash("two_models.py", "another_pytorch_model");
  ASSERT_TRUE(is_hash8(wanted));
  const RunResult& r = hash_filter_run();
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const std::string block = script_block(r.out, "two_models.py");
  const std::string other = model_block(block, "pytorch_model");
  const std::string chosen = model_block(block, "another_pytorch_model");
  ASSERT_FALSE(other.empty()) << r.out;  // still listed...
  ASSERT_FALSE(chosen.empty()) << r.out;
  EXPECT_TRUE(field(other, "Build dir").empty()) << other;  // ...but neither built...
  EXPECT_FALSE(benchmarked(other)) << other;                // ...nor benchmarked
  EXPECT_TRUE(benchmarked(chosen)) << chosen;
  EXPECT_EQ(count_occurrences(r.out, "Successfully benchmarked"), 1) << r.out;

  // Its build: <script stem>_<hash>, with the exported model, its inputs and PyTorch's outputs.
  std::vector<fs::path> builds = build_dirs(cache_of("hash-filter"));
  ASSERT_EQ(builds.size(), 1u);
  const fs::path build = builds.front();
  EXPECT_EQ(build.filename().string(), "two_models_" + wanted);
  EXPECT_EQ(fs::path(field(chosen, "Build dir")), build);
  json stats = stats_of(build);
  EXPECT_EQ(stats["hash"], wanted);
  ASSERT_TRUE(stats["hash_full"].is_string());
  EXPECT_EQ(stats["hash_full"].get<std::string>().size(), 64u);
  EXPECT_EQ(stats["hash_full"].get<std::string>().substr(0, 8), wanted);
  EXPECT_EQ(stats["model_name"], "another_pytorch_model");
  // The default opset: the TorchScript exporter's 17, the dynamo exporter's 18 (torch >= 2.9).
  EXPECT_EQ(stats["onnx_opset"], torch2_run() ? 18 : 17);
  EXPECT_GT(stats.value("mean_latency_ms", 0.0), 0.0);
  EXPECT_EQ(state_of(build)["build_status"], "successful");

  std::vector<fs::path> onnx_files = files_in(build / "onnx", ".onnx");
  ASSERT_EQ(onnx_files.size(), 1u);
  onnx::ModelProto model = read_model(onnx_files.front());
  ASSERT_EQ(model.graph().input_size(), 1);
  ASSERT_TRUE(fs::exists(build / "io" / "input_0.pb"));
  ASSERT_TRUE(fs::exists(build / "io" / "output_0.pb"));
  onnx::TensorProto in = read_tensor(build / "io" / "input_0.pb");
  onnx::TensorProto out = read_tensor(build / "io" / "output_0.pb");
  EXPECT_EQ(in.name(), model.graph().input(0).name());
  ASSERT_EQ(in.dims_size(), 1);
  EXPECT_EQ(in.dims(0), 50);
  ASSERT_EQ(out.dims_size(), 1);
  EXPECT_EQ(out.dims(0), 10);  // PyTorch's outputs for the same inputs
  EXPECT_EQ(out.data_type(), onnx::TensorProto::FLOAT);
  EXPECT_FALSE(build_logs(build).empty());
}

TEST(DiscoveryExamples, HashesAreStableAcrossRuns) {
  const RunResult& again = hash_filter_run();
  const std::string block = script_block(again.out, "two_models.py");
  for (const char* model : {"pytorch_model", "another_pytorch_model"}) {
    EXPECT_EQ(field(model_block(block, model), "Hash"), example_hash("two_models.py", model))
        << model;
  }
  // The same model (class code, seed, weights, input) in another script has the same hash.
  EXPECT_EQ(
      field(model_block(script_block(analyzed_scripts().out, "hash_variants.py"), "same_as_hello"),
            "Hash"),
      example_hash("hello_world.py", "pytorch_model"));
}

TEST(DiscoveryExamples, SeveralHashFiltersAndOneThatMatchesNothing) {
  const std::string h1 = example_hash("two_models.py", "pytorch_model");
  const std::string h2 = example_hash("two_models.py", "another_pytorch_model");
  const RunResult& r =
      run_once("hash-filters", {example("two_models.py") + "::" + h1 + "," + h2,
                                example("hello_world.py") + "::deadbeef", "--build-only"});
  EXPECT_EQ(r.exit_code, 1) << r.all();  // a filter that selects nothing is the user's mistake
  EXPECT_FALSE(looks_like_crash(r)) << r.all();
  std::set<std::string> built;
  for (const fs::path& b : build_dirs(cache_of("hash-filters"))) built.insert(b.filename());
  EXPECT_EQ(built, (std::set<std::string>{"two_models_" + h1, "two_models_" + h2}));
  EXPECT_NE(r.all().find("deadbeef"), std::string::npos) << r.all();
  // The script still ran; its model is listed, not built.
  const std::string hello = model_block(script_block(r.out, "hello_world.py"), "pytorch_model");
  EXPECT_EQ(field(hello, "Hash"), example_hash("hello_world.py", "pytorch_model")) << r.out;
  EXPECT_TRUE(field(hello, "Build dir").empty());
}

TEST(DiscoveryExamples, MaxDepthOneListsAndBenchmarksFcAndFc2) {
  std::vector<std::string> args = {example("max_depth.py"), script("shared_submodule.py"),
                                   "--max-depth", "1"};
  args.insert(args.end(), kFastBenchmark.begin(), kFastBenchmark.end());
  const RunResult& r = run_once("max-depth", args);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const std::string block = script_block(r.out, "max_depth.py");
  const std::string parent = model_block(block, "pytorch_model");
  const std::string fc = model_block(block, "fc");
  const std::string fc2 = model_block(block, "fc2");
  ASSERT_FALSE(fc.empty()) << r.out;
  ASSERT_FALSE(fc2.empty()) << r.out;
  // Nested under their parent: inside its block, indented deeper.
  EXPECT_NE(parent.find(fc), std::string::npos) << parent;
  EXPECT_NE(parent.find(fc2), std::string::npos) << parent;
  EXPECT_GT(title_indent(block, "fc"), title_indent(block, "pytorch_model"));
  EXPECT_TRUE(std::regex_match(title_of(fc), std::regex(R"(fc \(executed 2x.*\))"))) << fc;
  EXPECT_TRUE(std::regex_match(title_of(fc2), std::regex(R"(fc2 \(executed 2x.*\))"))) << fc2;
  EXPECT_EQ(field(fc, "Class"), "Linear (<class 'torch.nn.modules.linear.Linear'>)");
  EXPECT_EQ(field(fc, "Parameters"), "55 (220.0 B)");
  EXPECT_EQ(field(fc2, "Parameters"), "30 (120.0 B)");
  EXPECT_EQ(field(fc, "Input Shape"), "'input': (10,)");
  EXPECT_EQ(field(fc2, "Input Shape"), "'input': (5,)");
  // Each with its own hash and build, each benchmarked.
  std::set<std::string> hashes = {field(parent, "Hash"), field(fc, "Hash"), field(fc2, "Hash")};
  EXPECT_EQ(hashes.size(), 3u);
  for (const std::string* m : {&parent, &fc, &fc2}) {
    EXPECT_TRUE(benchmarked(*m)) << *m;
    fs::path build = build_dir_of(*m);
    EXPECT_EQ(files_in(build / "onnx", ".onnx").size(), 1u) << build;
    EXPECT_GT(stats_of(build).value("mean_latency_ms", 0.0), 0.0) << build;
  }
  json fc_stats = stats_of(build_dir_of(fc));
  EXPECT_EQ(fc_stats["depth"], 1);
  EXPECT_EQ(fc_stats["model_name"], "fc");

  // A sub-module shared by two models is one entry (called under both: executed 2x), listed
  // under the parent of its first call; each parent's own sub-module is listed under it.
  const std::string shared_block = script_block(r.out, "shared_submodule.py");
  EXPECT_EQ(count_titles(shared_block, "body"), 1) << shared_block;
  EXPECT_EQ(count_titles(shared_block, "extra"), 2) << shared_block;
  const std::string first = model_block(shared_block, "first");
  const std::string second = model_block(shared_block, "second");
  EXPECT_TRUE(std::regex_search(first, std::regex(R"(body \(executed 2x)"))) << first;
  EXPECT_NE(field(model_block(first, "extra"), "Hash"),
            field(model_block(second, "extra"), "Hash"));
  EXPECT_EQ(count_occurrences(shared_block, "Successfully benchmarked"), 5) << shared_block;
}

TEST(DiscoveryExamples, ToolSequenceForms) {
  // `turnkey -i s.py discover` is --analyze-only.
  const RunResult& d = run_once("seq-discover", {"-i", example("hello_world.py"), "discover"});
  ASSERT_EQ(d.exit_code, 0) << d.all();
  const std::string hello = model_block(script_block(d.out, "hello_world.py"), "pytorch_model");
  EXPECT_EQ(field(hello, "Hash"), example_hash("hello_world.py", "pytorch_model")) << d.out;
  EXPECT_EQ(field(hello, "Location"),
            example("hello_world.py") + ", line " +
                std::to_string(line_of(kExamples / "hello_world.py", "pytorch_model(**inputs)")));
  EXPECT_TRUE(build_dirs(cache_of("seq-discover")).empty());

  // `turnkey -i s.py discover export-pytorch` is --build-only, here with sub-modules and an opset.
  const RunResult& b =
      run_once("seq-export", {"-i", example("max_depth.py"), "discover", "--max-depth", "1",
                              "export-pytorch", "--opset", "13"});
  ASSERT_EQ(b.exit_code, 0) << b.all();
  EXPECT_EQ(b.out.find("benchmarked"), std::string::npos) << b.out;
  std::vector<fs::path> builds = build_dirs(cache_of("seq-export"));
  EXPECT_EQ(builds.size(), 3u);  // pytorch_model, fc, fc2
  for (const fs::path& build : builds) {
    SCOPED_TRACE(build.string());
    std::vector<fs::path> onnx_files = files_in(build / "onnx", ".onnx");
    ASSERT_EQ(onnx_files.size(), 1u);
    onnx::ModelProto model = read_model(onnx_files.front());
    ASSERT_GE(model.opset_import_size(), 1);
    EXPECT_EQ(model.opset_import(0).version(), 13);
    EXPECT_TRUE(fs::exists(build / "io" / "input_0.pb"));
    EXPECT_TRUE(fs::exists(build / "io" / "output_0.pb"));
    json stats = stats_of(build);
    EXPECT_EQ(stats["onnx_opset"], 13);
    EXPECT_FALSE(stats.contains("mean_latency_ms"));
    EXPECT_EQ(state_of(build)["build_status"], "successful");
  }
  for (const std::string& status : fields(b.out, "Status")) {
    EXPECT_NE(status.find("built"), std::string::npos) << status;
  }
}

}  // namespace
}  // namespace turnkey::test
