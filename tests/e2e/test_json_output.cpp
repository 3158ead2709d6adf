// End-to-end: --json (docs/report.md, "One run as JSON"). stdout holds exactly one JSON document
// with a row (and its median) for every result of the run, failed builds with their status and
// error, and every input; everything human, and what a script prints, goes to stderr. Also for a
// corpus run (-j 2), whose parent prints the one document. Cost: about 10 s (one script run with
// torch; the rest are tiny ONNX files).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The document, which must be all of stdout.
json document(const RunResult& r) {
  json doc;
  try {
    doc = json::parse(r.out);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "stdout is not one JSON document: " << e.what() << "\n" << r.out;
    return json::object();
  }
  EXPECT_EQ(doc.value("kind", ""), "turnkey-report");
  EXPECT_TRUE(doc.contains("run")) << r.out;
  return doc;
}

const json* row_of(const json& doc, const std::string& build_prefix) {
  for (const json& row : doc["rows"]) {
    if (row["build_name"].get<std::string>().rfind(build_prefix, 0) == 0) return &row;
  }
  return nullptr;
}

TEST(JsonOutput, EveryResultWithItsMedianFailuresWithTheirErrorAndEveryInput) {
  TempDir dir{"tk-e2e-json"};
  const fs::path a = dir / "lin.onnx", b = dir / "conv.onnx", broken = dir / "broken.onnx";
  linear_relu(a);
  small_conv_net(b);
  // A valid model ONNX Runtime cannot load: an op of a domain it has no kernels for.
  {
    onnx::ModelProto m = new_model();
    auto* domain = m.add_opset_import();
    domain->set_domain("com.example");
    domain->set_version(1);
    onnx::GraphProto* g = m.mutable_graph();
    add_input(g, "x", onnx::TensorProto::FLOAT, {1, 4});
    add_output(g, "y", onnx::TensorProto::FLOAT, {1, 4});
    add_node(g, "Unknown", {"x"}, {"y"})->set_domain("com.example");
    save_model(m, broken);
  }
  const std::string missing = (dir / "missing.onnx").string();
  RunResult r =
      run_turnkey({a.string(), b.string(), broken.string(), missing, "--iterations", "5", "--json"},
                  dir / "cache");
  EXPECT_EQ(r.exit_code, 1) << r.all();
  const json doc = document(r);
  // The human lines went to stderr.
  EXPECT_NE(r.err.find("Successfully benchmarked"), std::string::npos) << r.err;
  // The closing line says what happened (issue 32: it said "Woohoo! ... complete" always).
  EXPECT_NE(r.err.find("Done with failures: 2 of 4 inputs failed"), std::string::npos) << r.err;

  for (const char* name : {"lin_", "conv_"}) {
    const json* row = row_of(doc, name);
    ASSERT_NE(row, nullptr) << name << "\n" << r.out;
    EXPECT_EQ((*row)["status"], "successful");
    EXPECT_GT((*row)["median_latency_ms"].get<double>(), 0) << row->dump();
    EXPECT_EQ((*row)["runtime"], "ort");
    EXPECT_EQ((*row)["samples_ms"].size(), 5u);
  }
  const json* failed = row_of(doc, "broken_");
  ASSERT_NE(failed, nullptr) << r.out;
  EXPECT_NE((*failed)["status"], "successful");
  EXPECT_FALSE((*failed)["error"].get<std::string>().empty()) << failed->dump();
  EXPECT_TRUE((*failed)["median_latency_ms"].is_null());

  const json& inputs = doc["run"]["inputs"];
  ASSERT_EQ(inputs.size(), 4u) << doc["run"].dump();
  EXPECT_EQ(inputs[0]["status"], "successful");
  EXPECT_EQ(inputs[3]["input"], missing);
  EXPECT_EQ(inputs[3]["status"], "invalid_input");
  EXPECT_EQ(inputs[3]["error"], "not found");
  EXPECT_TRUE(inputs[3]["builds"].empty());
  EXPECT_EQ(doc["run"]["exit_code"], 1);
  EXPECT_EQ(doc["columns"].size(), doc["rows"][0].size() - 4);  // + hash_full, samples, profile

  // A second run prints only its own result, not the one the first left in the build.
  RunResult again =
      run_turnkey({a.string(), "--iterations", "5", "--threads", "1", "--json"}, dir / "cache");
  ASSERT_EQ(again.exit_code, 0) << again.all();
  const json second = document(again);
  ASSERT_EQ(second["rows"].size(), 1u) << again.out;
  EXPECT_EQ(second["rows"][0]["threads"], 1);
  EXPECT_EQ(second["rows"][0]["runs"], 1);
}

TEST(JsonOutput, WhatAScriptPrintsGoesToStderrAndTheDocumentStaysWhole) {
  TempDir dir{"tk-e2e-json-script"};
  const fs::path script = dir / "noisy.py";
  write_bytes(script,
              "import os, sys, torch\n"
              "print('{\"not\": \"the document\"}')\n"
              "os.write(1, b'straight to fd 1\\n')\n"
              "class Noisy(torch.nn.Module):\n"
              "    def forward(self, x):\n"
              "        print('forward says hi')\n"
              "        return x * 2\n"
              "Noisy()(torch.arange(6.0).reshape(2, 3))\n"
              "sys.stdout.flush()\n");
  RunResult r = run_turnkey({script.string(), "--iterations", "5", "--json"}, dir / "cache");
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const json doc = document(r);
  ASSERT_EQ(doc["rows"].size(), 1u) << r.out;
  EXPECT_GT(doc["rows"][0]["median_latency_ms"].get<double>(), 0);
  EXPECT_EQ(doc["rows"][0]["correctness"], "within_tolerance");
  for (const char* printed :
       {"{\"not\": \"the document\"}", "straight to fd 1", "forward says hi"}) {
    EXPECT_NE(r.err.find(printed), std::string::npos) << printed << "\n" << r.err;
    EXPECT_EQ(r.out.find(printed), std::string::npos) << printed;
  }
}

TEST(JsonOutput, ACorpusRunPrintsOneDocumentFromTheParent) {
  TempDir dir{"tk-e2e-json-corpus"};
  const fs::path a = dir / "lin.onnx", b = dir / "conv.onnx", bad = dir / "bad.onnx";
  linear_relu(a);
  small_conv_net(b);
  write_bytes(bad, "not a model");
  RunResult r =
      run_turnkey({a.string(), b.string(), bad.string(), "-j", "2", "--iterations", "5", "--json"},
                  dir / "cache");
  EXPECT_EQ(r.exit_code, 1) << r.all();
  const json doc = document(r);
  int measured = 0;
  for (const json& row : doc["rows"]) {
    if (row["status"] == "successful") {
      ++measured;
      EXPECT_GT(row["median_latency_ms"].get<double>(), 0) << row.dump();
    }
  }
  EXPECT_EQ(measured, 2) << r.out;
  const json& inputs = doc["run"]["inputs"];
  ASSERT_EQ(inputs.size(), 3u) << doc["run"].dump();
  int invalid = 0;
  for (const json& in : inputs) invalid += in["status"] == "invalid_input";
  EXPECT_EQ(invalid, 1) << doc["run"].dump();
}

TEST(JsonOutput, AUsageErrorPrintsNoDocument) {
  TempDir dir{"tk-e2e-json-usage"};
  RunResult r =
      run_turnkey({(dir / "x.onnx").string(), "--iterations", "0", "--json"}, dir / "cache");
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(count_occurrences(r.err, "\n"), 1) << r.err;
}

}  // namespace
}  // namespace turnkey::test
