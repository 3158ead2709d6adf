// The reuse policy (src/pipeline/reuse_policy.h): when a tool's earlier result stands in for
// running it again, what makes a previous state damaged, and how a missing, truncated or changed
// artifact sends the build back to the tool that made it.
#include <gtest/gtest.h>

#include <fstream>

#include "pipeline/reuse_policy.h"
#include "support/temp_dir.h"
#include "turnkey/common/files.h"

namespace turnkey::engine_internal {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ReusePolicy : public ::testing::Test {
 protected:
  test::TempDir dir{"tk-reuse"};
  fs::path onnx, input_pb;
  json state;

  void SetUp() override {
    onnx = dir / "model.onnx";
    input_pb = dir / "input_0.pb";
    write_file_atomic(onnx, std::string(1000, 'm'));
    write_file_atomic(input_pb, "pb");
    Build build;
    build.onnx_path = onnx;
    build.input_pbs = {input_pb};
    ToolStep step;
    step.name = "export-pytorch";
    step.status = "successful";
    step.key = "k1";
    record_outputs(build, step);
    const json export_entry = step.to_json();
    state = {{"build_name", "b"},
             {"turnkey_version", "0.1.0"},
             {"tools", json::array({{{"name", "discover"}, {"status", "successful"}},
                                    export_entry,
                                    {{"name", "benchmark"}, {"status", "failed"}}})}};
    ASSERT_EQ(state_damage(state), "");
  }
};

TEST_F(ReusePolicy, AnUnchangedResultIsReused) {
  ReuseCheck c = check_reuse(state, 1, "export-pytorch", "k1", "if_needed");
  ASSERT_NE(c.entry, nullptr);
  EXPECT_EQ(c.entry, &state["tools"][1]);
  EXPECT_EQ(c.reason, "");
  EXPECT_FALSE(c.key_changed);
}

TEST_F(ReusePolicy, RebuildAlwaysNeverReusesAndGivesNoReason) {
  ReuseCheck c = check_reuse(state, 1, "export-pytorch", "k1", "always");
  EXPECT_EQ(c.entry, nullptr);
  EXPECT_EQ(c.reason, "");
}

TEST_F(ReusePolicy, AChangedKeyIsStaleUnlessRebuildNever) {
  ReuseCheck c = check_reuse(state, 1, "export-pytorch", "k2", "if_needed");
  EXPECT_EQ(c.entry, nullptr);
  EXPECT_TRUE(c.key_changed);
  c = check_reuse(state, 1, "export-pytorch", "k2", "never");
  EXPECT_NE(c.entry, nullptr);
  EXPECT_FALSE(c.key_changed);
}

TEST_F(ReusePolicy, AnUnfinishedOrOtherToolIsNotReused) {
  ReuseCheck c = check_reuse(state, 2, "benchmark", "k1", "if_needed");
  EXPECT_EQ(c.entry, nullptr);
  EXPECT_EQ(c.reason, "its previous benchmark did not finish");
  c = check_reuse(state, 1, "optimize-ort", "k1", "if_needed");  // another sequence
  EXPECT_EQ(c.entry, nullptr);
  EXPECT_EQ(c.reason, "");
  c = check_reuse(state, 7, "export-pytorch", "k1", "if_needed");
  EXPECT_EQ(c.entry, nullptr);
  EXPECT_EQ(check_reuse(nullptr, 1, "export-pytorch", "k1", "if_needed").entry, nullptr);
}

TEST_F(ReusePolicy, AMissingArtifactIsRebuiltEvenWithRebuildNever) {
  fs::remove(onnx);
  ReuseCheck c = check_reuse(state, 1, "export-pytorch", "k1", "never");
  EXPECT_EQ(c.entry, nullptr);
  EXPECT_EQ(c.reason, "model.onnx is gone (lean cache or deleted)");
}

TEST_F(ReusePolicy, ATruncatedArtifactIsRebuiltFromTheToolThatMadeIt) {
  fs::resize_file(onnx, 100);
  ReuseCheck c = check_reuse(state, 1, "export-pytorch", "k1", "never");
  EXPECT_EQ(c.entry, nullptr);
  EXPECT_EQ(c.reason, "model.onnx changed since export-pytorch made it (100 bytes, recorded 1000)");
}

TEST_F(ReusePolicy, AChangedArtifactOfTheSameSizeIsCaughtByItsDigest) {
  write_file_atomic(input_pb, "PB");
  ReuseCheck c = check_reuse(state, 1, "export-pytorch", "k1", "if_needed");
  EXPECT_EQ(c.entry, nullptr);
  EXPECT_EQ(c.reason, "input_0.pb changed since export-pytorch made it (SHA-256 differs)");
}

TEST_F(ReusePolicy, EntriesFromBeforeArtifactRecordsAreCheckedForExistenceOnly) {
  state["tools"][1].erase("artifacts");
  ASSERT_EQ(state_damage(state), "");
  fs::resize_file(onnx, 10);
  EXPECT_NE(check_reuse(state, 1, "export-pytorch", "k1", "if_needed").entry, nullptr);
  fs::remove(onnx);
  EXPECT_EQ(check_reuse(state, 1, "export-pytorch", "k1", "if_needed").reason,
            "model.onnx is gone (lean cache or deleted)");
}

TEST_F(ReusePolicy, OutputsComeBackIntoTheBuild) {
  Build build;
  restore_outputs(build, state["tools"][1]);
  EXPECT_EQ(build.onnx_path, onnx);
  ASSERT_EQ(build.input_pbs.size(), 1u);
  EXPECT_EQ(build.input_pbs[0], input_pb);
  EXPECT_TRUE(build.output_pbs.empty());
  const json& a = state["tools"][1]["artifacts"][0];
  EXPECT_EQ(a["size_bytes"], 1000);
  EXPECT_EQ(a["sha256"].get<std::string>().size(), 64u);
}

// An export that captured intermediate tensors (outputs without signal) is reused like any
// other: a rerun of vit_h_14's script re-exported 2.5 GB because its state read as damaged.
TEST_F(ReusePolicy, AnExportWithIntermediateTensorsIsReusedAndBringsThemBack) {
  const fs::path mid = dir / "intermediate_0.pb";
  write_file_atomic(mid, "mid");
  Build build;
  build.onnx_path = onnx;
  build.input_pbs = {input_pb};
  build.intermediates = {{"heads.head", "/Gather_output_0", mid}};
  ToolStep step;
  step.name = "export-pytorch";
  step.status = "successful";
  step.key = "k1";
  record_outputs(build, step);
  state["tools"][1] = step.to_json();
  ASSERT_EQ(state_damage(state), "");
  ReuseCheck c = check_reuse(state, 1, "export-pytorch", "k1", "if_needed");
  ASSERT_NE(c.entry, nullptr) << c.reason;
  Build back;
  restore_outputs(back, *c.entry);
  ASSERT_EQ(back.intermediates.size(), 1u);
  EXPECT_EQ(back.intermediates[0].module, "heads.head");
  EXPECT_EQ(back.intermediates[0].tensor, "/Gather_output_0");
  EXPECT_EQ(back.intermediates[0].pb, mid);
  // Without its artifact records, the intermediate tensor's file is still checked for existence.
  state["tools"][1].erase("artifacts");
  fs::remove(mid);
  EXPECT_EQ(check_reuse(state, 1, "export-pytorch", "k1", "if_needed").reason,
            "intermediate_0.pb is gone (lean cache or deleted)");
  EXPECT_EQ(
      state_damage(
          {{"tools",
            json::array({{{"outputs", {{"intermediates", json::array({{{"path", 1}}})}}}}})}}),
      "tools[0].outputs.intermediates is not a path list");
}

TEST(DamagedState, EachDamageIsNamedInOneLine) {
  EXPECT_EQ(state_damage(nullptr), "empty");
  EXPECT_EQ(state_damage(json::array({1, 2})), "not a mapping");
  EXPECT_EQ(state_damage("text"), "not a mapping");
  EXPECT_EQ(state_damage({{"build_name", 5}}), "build_name is not a string");
  EXPECT_EQ(state_damage({{"input", json::array({1})}}), "input is not a string");
  EXPECT_EQ(state_damage({{"chain_key", json::object()}}), "chain_key is not a string");
  EXPECT_EQ(state_damage({{"tools", "abc"}}), "tools is not a list");
  EXPECT_EQ(state_damage({{"tools", json::array({5})}}), "tools[0] is not a mapping");
  EXPECT_EQ(state_damage({{"tools", json::array({{{"name", 3}}})}}),
            "tools[0].name is not a string");
  EXPECT_EQ(state_damage({{"tools", json::array({{{"status", json::array()}}})}}),
            "tools[0].status is not a string");
  EXPECT_EQ(state_damage({{"tools", json::array({{{"outputs", 5}}})}}),
            "tools[0].outputs is not a mapping");
  EXPECT_EQ(state_damage({{"tools", json::array({{{"outputs", {{"inputs", json::array({1})}}}}})}}),
            "tools[0].outputs.inputs is not a path list");
  EXPECT_EQ(
      state_damage({{"tools", json::array({{{"artifacts", json::array({{{"path", "x"}}})}}})}}),
      "tools[0].artifacts has a malformed record");
  EXPECT_EQ(state_damage(json::object()), "");
  EXPECT_EQ(state_damage({{"tools", json::array()}}), "");
}

}  // namespace
}  // namespace turnkey::engine_internal
