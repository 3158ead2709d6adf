// Discovery acceptance tests (issue 3), written from the user's side: the seeded scripts of tests/data/scripts: nesting, containers, dtypes, odd calls, failures and their tracebacks, the script's own output and arguments.
// The runs several tests share and the report readers are in discovery_support.h.
#include "discovery_support.h"

namespace turnkey::test {
namespace {

TEST(DiscoveryScripts, MaxDepthTwoNestsEachLevelUnderItsParent) {
  const RunResult& r = run_once("deep", {"-i", script("deep.py"), "discover", "--max-depth", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const std::string block = script_block(r.out, "deep.py");
  const std::string top = model_block(block, "deep");
  const std::string first = model_block(block, "blocks.0");
  const std::string second = model_block(block, "blocks.1");
  ASSERT_FALSE(first.empty()) << block;
  ASSERT_FALSE(second.empty()) << block;
  EXPECT_NE(top.find(first), std::string::npos);
  EXPECT_NE(top.find(second), std::string::npos);
  const size_t level0 = title_indent(block, "deep");
  const size_t level1 = title_indent(block, "blocks.0");
  const size_t level2 = title_indent(block, "fc");
  EXPECT_LT(level0, level1);
  EXPECT_LT(level1, level2);
  // Each block's own Linear, under it, with its own weights and so its own hash.
  const std::string fc0 = model_block(first, "fc");
  const std::string fc1 = model_block(second, "fc");
  ASSERT_FALSE(fc0.empty()) << first;
  ASSERT_FALSE(fc1.empty()) << second;
  EXPECT_NE(field(fc0, "Hash"), field(fc1, "Hash"));
  EXPECT_EQ(count_titles(block, "act"), 2) << block;  // two ReLU objects, two entries
  EXPECT_EQ(field(fc0, "Class"), "Linear (<class 'torch.nn.modules.linear.Linear'>)");
  EXPECT_TRUE(build_dirs(cache_of("deep")).empty());
}

TEST(DiscoveryScripts, ModelsInFunctionsDictsAndListsWithKeywordAndDictInputs) {
  const RunResult& r = benchmarked_scripts();
  const std::string block = script_block(r.out, "containers.py");
  ASSERT_FALSE(block.empty()) << r.out;
  const fs::path file = kScripts / "containers.py";
  const auto location = [&](const std::string& call) {
    return file.string() + ", line " + std::to_string(line_of(file, call));
  };
  const std::string encoder = model_block(block, "models['encoder']");
  const std::string decoder = model_block(block, "decoder");
  const std::string layer = model_block(block, "layers[1]");
  const std::string anonymous = model_block(block, "Tiny");  // nothing holds it: class name
  ASSERT_FALSE(encoder.empty()) << block;
  ASSERT_FALSE(decoder.empty()) << block;
  ASSERT_FALSE(layer.empty()) << block;
  ASSERT_FALSE(anonymous.empty()) << block;
  EXPECT_EQ(field(encoder, "Class"), "Encoder (<class 'containers.Encoder'>)");
  EXPECT_EQ(field(encoder, "Location"), location("models[\"encoder\"](x=x"));
  EXPECT_EQ(field(decoder, "Location"), location("decoder({"));
  EXPECT_EQ(field(layer, "Location"), location("layers[1](out)"));
  // Keyword arguments and tensors inside dicts and lists, by name.
  EXPECT_EQ(field(encoder, "Input Shape"), "'x': (1, 6), \"scale['s']\": (1, 4)");
  EXPECT_EQ(field(decoder, "Input Shape"),
            "\"features['a']\": (1, 4), \"features['b'][0]\": (1, 4), \"features['b'][1]\": (1, 4)");
  EXPECT_EQ(field(anonymous, "Input Shape"), "'x': (2, 7)");
  for (const std::string* m : {&encoder, &decoder, &layer, &anonymous}) {
    EXPECT_TRUE(benchmarked(*m)) << *m;
  }
  // The encoder returns a tuple: both tensors are graph outputs, with PyTorch's values saved.
  const fs::path build = build_dir_of(encoder);
  json stats = stats_of(build);
  EXPECT_EQ(stats["onnx_inputs"].size(), 2u) << stats.dump();
  EXPECT_EQ(stats["onnx_outputs"].size(), 2u) << stats.dump();
  EXPECT_TRUE(fs::exists(build / "io" / "output_0.pb"));
  EXPECT_TRUE(fs::exists(build / "io" / "output_1.pb"));
  EXPECT_EQ(stats_of(build_dir_of(decoder))["onnx_inputs"].size(), 3u);
  EXPECT_NE(r.out.find("containers done (1, 2) (2, 2)"), std::string::npos);
}

TEST(DiscoveryScripts, DictOutputInt64EmbeddingAndBoolMaskAreExportedAndBenchmarked) {
  const RunResult& r = benchmarked_scripts();
  const std::string model = model_block(script_block(r.out, "dict_output.py"), "text_model");
  ASSERT_FALSE(model.empty()) << r.out;
  EXPECT_EQ(field(model, "Parameters"), "187 (748.0 B)");
  EXPECT_TRUE(benchmarked(model)) << model;
  const fs::path build = build_dir_of(model);
  json stats = stats_of(build);
  // The captured inputs, with their dtypes, in the stats.
  ASSERT_EQ(stats["inputs"].size(), 2u) << stats.dump();
  EXPECT_EQ(stats["inputs"][0]["name"], "input_ids");
  EXPECT_EQ(stats["inputs"][0]["dtype"], "int64");
  EXPECT_EQ(stats["inputs"][0]["shape"], json({2, 5}));
  EXPECT_EQ(stats["inputs"][1]["name"], "attention_mask");
  EXPECT_EQ(stats["inputs"][1]["dtype"], "bool");
  EXPECT_EQ(stats["onnx_outputs"].size(), 2u);  // the dict's two tensors
  onnx::TensorProto ids = read_tensor(build / "io" / "input_0.pb");
  onnx::TensorProto mask = read_tensor(build / "io" / "input_1.pb");
  EXPECT_EQ(ids.data_type(), onnx::TensorProto::INT64);
  EXPECT_EQ(mask.data_type(), onnx::TensorProto::BOOL);
  // The benchmark fed the script's own tensors (real token ids, the real mask).
  EXPECT_EQ(stats["input_source"], "captured from the script");
  EXPECT_TRUE(fs::exists(build / "io" / "output_1.pb"));
}

// The issue asks for input names, shapes AND dtypes of every model. On screen only shapes are
// shown today, so an int64 or bool input cannot be told from a float one without the cache.
TEST(DiscoveryScripts, InputDtypesAreListedOnScreen) {
  const RunResult& r = benchmarked_scripts();
  const std::string model = model_block(script_block(r.out, "dict_output.py"), "text_model");
  ASSERT_FALSE(model.empty()) << r.out;
  EXPECT_NE(model.find("int64"), std::string::npos) << model;
  EXPECT_NE(model.find("bool"), std::string::npos) << model;
}

TEST(DiscoveryScripts, OddCallsAreDiscoveredExportedAndBenchmarked) {
  const RunResult& r = benchmarked_scripts();
  const std::string block = script_block(r.out, "odd_calls.py");
  ASSERT_FALSE(block.empty()) << r.out;
  for (const char* name :
       {"varargs", "inference", "double", "in_place", "norm", "hidden", "threaded", "scalar"}) {
    SCOPED_TRACE(name);
    const std::string m = model_block(block, name);
    ASSERT_FALSE(m.empty()) << block;
    EXPECT_TRUE(benchmarked(m)) << m;
  }
  // *args by position, a keyword int (listed with its type, baked into the export), **kwargs.
  const std::string varargs = model_block(block, "varargs");
  EXPECT_EQ(field(varargs, "Input Shape"),
            "'xs[0]': (1, 3), 'xs[1]': (1, 3), 'scale': int, 'bias': (3,)");
  json varargs_stats = stats_of(build_dir_of(varargs));
  EXPECT_EQ(varargs_stats["onnx_inputs"].size(), 3u) << varargs_stats.dump();
  EXPECT_EQ(varargs_stats["onnx_outputs"].size(), 2u) << varargs_stats.dump();  // the tensors
  EXPECT_EQ(field(model_block(block, "double"), "Parameters"), "8 (64.0 B)");
  EXPECT_EQ(field(model_block(block, "scalar"), "Input Shape"), "'input': ()");
  // The input saved for a forward that writes into it is the tensor as the script passed it.
  const fs::path in_place = build_dir_of(model_block(block, "in_place"));
  EXPECT_EQ(floats_of(read_tensor(in_place / "io" / "input_0.pb")), (std::vector<float>{0, 0}));
  EXPECT_EQ(floats_of(read_tensor(in_place / "io" / "output_0.pb")), (std::vector<float>{2, 2}));
  EXPECT_NE(r.out.find("odd_calls done [1.0, 1.0]"), std::string::npos);
}

// turnkeyml.trials.trial_call (how corpus_inputs tries a layout for real) is not an execution: a
// refused try does not fail the model, a taken one is neither counted nor its input captured.
TEST(DiscoveryScripts, TrialCallsAreNotExecutions) {
  const RunResult& r = run_once("trials", {"--analyze-only", script("trial_calls.py")});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const std::string block = script_block(r.out, "trial_calls.py");
  const std::string m = model_block(block, "model");
  ASSERT_FALSE(m.empty()) << r.out;
  EXPECT_EQ(count_titles(block, "model"), 1) << block;
  EXPECT_TRUE(std::regex_match(title_of(m), std::regex(R"(model \(executed 1x - .*\))"))) << m;
  EXPECT_EQ(field(m, "Input Shape"), "'input': (1, 3)") << m;
  EXPECT_EQ(m.find("Not built"), std::string::npos) << m;
  EXPECT_NE(r.out.find("trial_calls done (1, 2)"), std::string::npos) << r.out;
}

TEST(DiscoveryScripts, ScriptNamedLikeALibraryIsRunOnceAndExported) {
  const RunResult& r = benchmarked_scripts();
  EXPECT_EQ(count_occurrences(r.out, "shadow script body runs as"), 1) << r.out;
  EXPECT_NE(r.out.find("shadow script body runs as __main__"), std::string::npos);
  EXPECT_TRUE(benchmarked(model_block(script_block(r.out, "onnx.py"), "shadow_model"))) << r.out;
}

TEST(DiscoveryScripts, ExportFailureIsReportedOnItsModelAndOthersAreBenchmarked) {
  const RunResult& r = benchmarked_scripts();
  const std::string block = script_block(r.out, "unexportable.py");
  const std::string good = model_block(block, "exportable");
  const std::string bad = model_block(block, "svd_model");
  ASSERT_FALSE(bad.empty()) << r.out;
  EXPECT_TRUE(benchmarked(good)) << good;
  const std::string status = field(bad, "Status");
  EXPECT_NE(status.find("linalg_svd"), std::string::npos) << bad;  // the reason, on one line
  EXPECT_FALSE(benchmarked(bad));
  EXPECT_EQ(status.find(kTraceback), std::string::npos);
  // The full traceback is in the build's log.
  const fs::path build = build_dir_of(bad);
  const std::string logs = build_logs(build);
  EXPECT_NE(logs.find(kTraceback), std::string::npos) << logs;
  EXPECT_NE(logs.find("linalg_svd"), std::string::npos) << logs;
  EXPECT_NE(state_of(build)["build_status"], "successful");
  EXPECT_FALSE(stats_of(build).contains("mean_latency_ms"));
  EXPECT_NE(r.out.find("unexportable: both called"), std::string::npos);
}

TEST(DiscoveryScripts, FailingScriptsReportTheModelsFoundSoFar) {
  const RunResult& r = benchmarked_scripts();
  EXPECT_EQ(r.exit_code, 1) << r.all();
  // With TURNKEY_TRACEBACK=False no Python traceback on the terminal either.
  EXPECT_FALSE(looks_like_crash(r)) << r.all();

  // The script-level Status: the last Status line of the block, at the model titles' indent.
  const auto script_status = [&](const std::string& name) {
    std::string status;
    for (const std::string& line : lines_of(script_block(r.out, name))) {
      if (indent_of(line) == 8 && trim(line).rfind("Status:", 0) == 0) {
        status = trim(trim(line).substr(7));
      }
    }
    return status;
  };

  // Raises before any model: no model, a one-line reason.
  EXPECT_NE(script_status("fail_before.py").find("RuntimeError: fail_before: broken configuration"),
            std::string::npos)
      << script_block(r.out, "fail_before.py");

  // Raises after a model: the model is reported and still built and benchmarked.
  const std::string after = script_block(r.out, "fail_after.py");
  EXPECT_TRUE(benchmarked(model_block(after, "found_model"))) << after;
  EXPECT_NE(script_status("fail_after.py").find("ZeroDivisionError: division by zero"),
            std::string::npos)
      << after;
  EXPECT_LT(r.out.find("fail_after: about to fail"), r.out.find("\nfail_after.py:\n"));

  // A forward that raises: the model before it is benchmarked, the raising one is reported
  // (its export fails the same way), and the script's Status names the error.
  const std::string forward = script_block(r.out, "fail_in_forward.py");
  EXPECT_TRUE(benchmarked(model_block(forward, "good_model"))) << forward;
  const std::string bad = model_block(forward, "bad_model");
  ASSERT_FALSE(bad.empty()) << forward;
  EXPECT_FALSE(benchmarked(bad));
  EXPECT_NE(script_status("fail_in_forward.py").find("mat1 and mat2 shapes cannot be multiplied"),
            std::string::npos)
      << forward;
  EXPECT_EQ(r.out.find("never printed"), std::string::npos);

  // sys.exit(3) after a model: reported and benchmarked; the script counts as failed.
  const std::string exited = script_block(r.out, "exit_code.py");
  EXPECT_TRUE(benchmarked(model_block(exited, "exiting_model"))) << exited;
  EXPECT_TRUE(std::regex_search(script_status("exit_code.py"), std::regex(R"(exit.*\b3\b)")))
      << exited;

  // Killed by a signal after a model: the model is still reported; it cannot be built.
  const std::string killed = script_block(r.out, "killed.py");
  const std::string doomed = model_block(killed, "doomed");
  ASSERT_FALSE(doomed.empty()) << r.out;
  EXPECT_EQ(field(doomed, "Location"),
            script("killed.py") + ", line " +
                std::to_string(line_of(kScripts / "killed.py", "doomed(torch.rand")));
  EXPECT_FALSE(field(doomed, "Status").empty()) << killed;
  EXPECT_FALSE(benchmarked(doomed));
  EXPECT_NE(script_status("killed.py").find("signal"), std::string::npos) << killed;

  // A syntax error: one line that says so, with the line.
  EXPECT_NE(script_status("syntax_error.py").find("SyntaxError"), std::string::npos)
      << script_block(r.out, "syntax_error.py");

  // Inputs after the failing ones still ran.
  EXPECT_TRUE(benchmarked(model_block(script_block(r.out, "containers.py"), "decoder")));
}

TEST(DiscoveryScripts, ScriptTracebacksGoToLogsWithoutTurnkeyFrames) {
  const RunResult& r = benchmarked_scripts();
  // Each failed script's block points at a log holding the full traceback.
  for (const char* name :
       {"fail_before.py", "fail_after.py", "fail_in_forward.py", "syntax_error.py"}) {
    SCOPED_TRACE(name);
    std::vector<std::string> logs = fields(script_block(r.out, name), "Log");
    ASSERT_FALSE(logs.empty()) << script_block(r.out, name);
    const std::string text = slurp(logs.back());
    EXPECT_NE(text.find(std::string(name)), std::string::npos) << text;
    if (std::string(name) != "syntax_error.py") {
      EXPECT_NE(text.find(kTraceback), std::string::npos) << text;
    }
  }
  // The traceback of an error inside a model's forward starts at the script and goes straight
  // into torch: the hook between them is not the user's business.
  const std::string text = slurp(fields(script_block(r.out, "fail_in_forward.py"), "Log").back());
  EXPECT_NE(text.find("fail_in_forward.py\", line 8"), std::string::npos) << text;
  EXPECT_EQ(text.find("turnkeyml"), std::string::npos) << text;
  EXPECT_NE(text.find("torch/nn/modules/linear.py"), std::string::npos) << text;
}

TEST(DiscoveryScripts, TurnkeyTracebackShowsTracebacksOnTheTerminalByDefault) {
  // fail_in_forward.py's model call raises, and the script with it: since issue 32 that is
  // reported once, as the script's (its model is not exported again to fail a second time).
  // TURNKEY_TRACEBACK unset: the documents' default, tracebacks on the terminal.
  const RunResult& r = run_once("traceback", {script("fail_in_forward.py"), "--build-only"},
                                {{"TURNKEY_TRACEBACK", ""}});
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_EQ(count_occurrences(r.all(), kTraceback), 1) << r.all();
  EXPECT_NE(r.all().find("fail_in_forward.py\", line 8"), std::string::npos) << r.all();
  // torch 2.x names the kernel: "RuntimeError: addmm: mat1 and mat2 shapes cannot be ...".
  EXPECT_TRUE(std::regex_search(r.all(),
                                std::regex("RuntimeError: (addmm: )?mat1 and mat2 shapes cannot be "
                                           "multiplied")))
      << r.all();
}

TEST(DiscoveryScripts, SysExitZeroAndOsExitAfterAModelAreNormalEnds) {
  const RunResult& r =
      run_once("clean-exits", {script("exit_zero.py"), script("hard_exit.py"), "--build-only"});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_FALSE(looks_like_crash(r)) << r.all();
  // os._exit skips everything, yet the model called before it is reported and built.
  for (const auto& [name, model] : std::vector<std::pair<std::string, std::string>>{
           {"exit_zero.py", "quitter"}, {"hard_exit.py", "hard_model"}}) {
    SCOPED_TRACE(name);
    const std::string block = script_block(r.out, name);
    const std::string m = model_block(block, model);
    ASSERT_FALSE(m.empty()) << r.out;
    EXPECT_NE(field(m, "Status").find("built"), std::string::npos) << m;
    EXPECT_EQ(files_in(build_dir_of(m) / "onnx", ".onnx").size(), 1u);
  }
  EXPECT_NE(r.out.find("hard_exit: leaving"), std::string::npos);
  EXPECT_EQ(r.out.find("Script failed"), std::string::npos) << r.out;
}

TEST(DiscoveryScripts, ModelsHeldByAttributesLoopsAndSiblingModules) {
  const RunResult& r = analyzed_scripts();
  ASSERT_EQ(r.exit_code, 0) << r.all();
  // A class attribute, and a model called as self.head(x) from a method of `pipeline`.
  const std::string attrs = script_block(r.out, "class_attr.py");
  EXPECT_FALSE(model_block(attrs, "Registry.model").empty()) << attrs;
  EXPECT_FALSE(model_block(attrs, "pipeline.head").empty()) << attrs;

  // Called three times in a loop with one signature: one entry, executed 3x.
  const std::string loop = script_block(r.out, "loop_three.py");
  const std::string net = model_block(loop, "net");
  EXPECT_TRUE(std::regex_match(title_of(net), std::regex(R"(net \(executed 3x - \d+\.\d\ds\))")))
      << loop;
  EXPECT_EQ(count_occurrences(loop, "Hash:"), 1) << loop;
  EXPECT_EQ(field(net, "Class"), "Sequential (<class 'torch.nn.modules.container.Sequential'>)");

  // A class imported from the script's folder; the script's own torch.jit.trace and
  // torch.onnx.export of it are not executions.
  const std::string sibling = model_block(script_block(r.out, "imports_sibling.py"), "sibling");
  EXPECT_TRUE(std::regex_match(title_of(sibling), std::regex(R"(sibling \(executed 1x.*\))")))
      << sibling;
  EXPECT_EQ(field(sibling, "Class"), "SiblingNet (<class 'helpers.sibling_models.SiblingNet'>)");
  const fs::path file = kScripts / "imports_sibling.py";
  EXPECT_EQ(field(sibling, "Location"),
            file.string() + ", line " + std::to_string(line_of(file, "sibling(x)")));
  EXPECT_NE(r.out.find("imports_sibling __main__ True"), std::string::npos) << r.out;
}

TEST(DiscoveryScripts, HashFollowsContent) {
  const std::string block = script_block(analyzed_scripts().out, "hash_variants.py");
  const std::string same = model_block(block, "same_as_hello");
  std::vector<std::string> same_hashes = fields(same, "Hash");  // two input shapes
  ASSERT_EQ(same_hashes.size(), 2u) << block;
  std::vector<std::string> all = {same_hashes[0], same_hashes[1]};
  for (const char* name : {"reseeded", "plus_one", "plus_two"}) {
    all.push_back(field(model_block(block, name), "Hash"));
  }
  for (const std::string& h : all) EXPECT_TRUE(is_hash8(h)) << block;
  // Other weights, other forward code, other input shape: all different.
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size()) << block;
  // Another object with the same content: the same hash.
  EXPECT_EQ(field(model_block(block, "twin"), "Hash"), same_hashes[0]);
}

TEST(DiscoveryScripts, DiscoveryLeavesUserObjectsAlone) {
  const RunResult& r = analyzed_scripts();
  EXPECT_NE(r.out.find("integrity: OK"), std::string::npos) << r.out;
}

TEST(DiscoveryScripts, ScriptOutputReachesTheTerminalUnchangedAndFirst) {
  const RunResult& r = analyzed_scripts();  // noisy.py is its first input
  std::string expected;
  for (int i = 0; i < 2000; ++i) {
    char line[32];
    std::snprintf(line, sizeof line, "noisy line %04d\n", i);
    expected += line;
  }
  const std::string fake =
      "{\"v\": 3, \"type\": \"model\", \"id\": 7, \"name\": \"fake_model\", \"hash\": \"" +
      std::string(64, '0') + "\"}\n";
  expected += fake;
  expected +=
      "{\"v\": 3, \"type\": \"script_end\", \"status\": \"exception\", \"error\": \"fake "
      "error\"}\n";
  expected += "noisy last line";
  ASSERT_GE(r.out.size(), expected.size());
  EXPECT_TRUE(r.out.compare(0, expected.size(), expected) == 0)
      << r.out.substr(0, std::min<size_t>(r.out.size(), 300));
  EXPECT_GT(r.out.find("\nnoisy.py:\n"), expected.size());
  size_t at = 0;
  for (const char* line : {"noisy stderr 0000\n", "noisy stderr 0500\n", "noisy stderr 1000\n",
                           "noisy stderr 1500\n"}) {
    size_t found = r.err.find(line, at);
    ASSERT_NE(found, std::string::npos) << line << r.err;
    at = found;
  }
  EXPECT_NE(r.err.find(fake), std::string::npos);
  // Lines that look like turnkey's protocol are the script's output, nothing more.
  const std::string block = script_block(r.out, "noisy.py");
  EXPECT_FALSE(model_block(block, "model").empty()) << r.out;
  EXPECT_EQ(count_occurrences(block, "Hash:"), 1) << block;
  EXPECT_EQ(block.find("fake"), std::string::npos) << block;
  EXPECT_EQ(block.find("Status:"), std::string::npos) << block;
}

TEST(DiscoveryScripts, ScriptArgsAreSplitLikeAShellAndParseReadsThem) {
  const RunResult& r =
      run_once("script-args", {script("own_argparse.py"), script("parse_standard.py"),
                               "--script-args", "--batch_size 4 --name 'a b'", "--analyze-only"});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("own_argparse name=<a b> batch_size=4"), std::string::npos) << r.out;
  EXPECT_EQ(field(model_block(script_block(r.out, "own_argparse.py"), "model"), "Input Shape"),
            "'input': (4, 8)");
  // parse() takes the standard arguments it is asked for and leaves the others alone.
  EXPECT_NE(r.out.find("parse_standard batch_size=4 max_seq_length=128 pretrained=False"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(field(model_block(script_block(r.out, "parse_standard.py"), "model"), "Input Shape"),
            "'input': (4, 128)");

  // Quotes that do not close: refused when the command line is read (a usage error), so the
  // script does not run, and says why in one line.
  const RunResult& bad =
      run_once("script-args-unbalanced",
               {script("own_argparse.py"), "--script-args", "--name 'a b", "--analyze-only"});
  EXPECT_EQ(bad.exit_code, 2) << bad.all();
  EXPECT_FALSE(looks_like_crash(bad)) << bad.all();
  EXPECT_EQ(bad.out.find("own_argparse name="), std::string::npos);
  EXPECT_NE(bad.all().find("no closing quotation"), std::string::npos) << bad.all();

  // The same script runs without turnkey.
  RunResult plain = run_command(
      {torch_python(), script("parse_standard.py"), "--batch_size", "8", "--pretrained", "true"},
      {{"PYTHONPATH", (fs::path(TURNKEY_SOURCE_DIR) / "python").string()}});
  EXPECT_EQ(plain.exit_code, 0) << plain.all();
  EXPECT_NE(plain.out.find("parse_standard batch_size=8 max_seq_length=128 pretrained=True"),
            std::string::npos)
      << plain.all();
  EXPECT_NE(plain.out.find("output shape (8, 2)"), std::string::npos);
}

}  // namespace
}  // namespace turnkey::test
