// The tool table (catalog/tools.h) and the pipeline's rows of how each sequence tool runs
// (pipeline/tool_impls.h) name the same tools; a first tool's input kind comes from its row.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "pipeline/first_tool.h"
#include "pipeline/tool_impls.h"
#include "turnkey/cache/fields.h"
#include "turnkey/catalog/tools.h"
#include "turnkey/common/error.h"

namespace turnkey::engine_internal {
namespace {

TEST(ToolImpls, OneRowPerSequenceTool) {
  std::set<std::string> sequence_tools, impls;
  for (const ToolSpec& s : tool_specs()) {
    if (s.group == ToolGroup::Sequence) sequence_tools.insert(s.name);
  }
  for (const ToolImpl& impl : tool_impls()) {
    EXPECT_TRUE(impls.insert(impl.name).second) << impl.name << " has two rows";
    ASSERT_NE(impl.body, nullptr) << impl.name;
    const ToolSpec* spec = find_tool(impl.name);
    ASSERT_NE(spec, nullptr) << impl.name << " is not in the catalog";
    // A tool whose output is reused needs the versions it depends on in its key.
    if (spec->cacheable) {
      EXPECT_NE(impl.versions, nullptr) << impl.name;
    }
  }
  EXPECT_EQ(impls, sequence_tools);
  EXPECT_THROW(tool_impl("no-such-tool"), Error);
}

TEST(ToolTable, FirstToolsSayWhatInputTheyTake) {
  for (const ToolSpec& s : tool_specs()) {
    EXPECT_EQ(s.group == ToolGroup::First, s.input_suffix != nullptr) << s.name;
    EXPECT_EQ(s.input_suffix != nullptr, s.input_what != nullptr) << s.name;
  }
  EXPECT_EQ(first_tool_for_file("m.py")->name, "discover");
  EXPECT_EQ(first_tool_for_file("m.onnx")->name, "load-onnx");
  EXPECT_EQ(first_tool_for_file("m_1234abcd_state.yaml")->name, "load-build");
  EXPECT_EQ(first_tool_for_file("m.txt"), nullptr);
  EXPECT_EQ(failure_status_of_tool("export-pytorch"), Status::ExportFailed);
  EXPECT_EQ(failure_status_of_tool("unknown"), Status::Crashed);
}

TEST(ToolTable, AnInputOfTheWrongKindIsNamedFromTheTable) {
  const std::vector<ToolCall> automatic = {{"auto", {}}};
  EXPECT_EQ(first_tool_for(automatic, "a/b.onnx"), "load-onnx");
  try {
    first_tool_for(automatic, "notes.txt");
    FAIL() << "a .txt input was taken";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "not a Python script (.py), an ONNX file (.onnx) or a build state "
                 "(<build>_state.yaml)");
  }
  try {
    first_tool_for({{"discover", {}}}, "model.onnx");
    FAIL() << "discover took an ONNX file";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "discover needs a Python script (.py)");
  }
}

// Which tools a result's label names comes from the tool rows (the cache's label builder is
// handed the catalog's answer): the tools that change or check the measured ONNX file, so an
// fp16 result and an fp32 result of one build are told apart; the first tools, the export and
// the benchmark are the same for every result of a build and are left out. A name the table
// does not know is shown rather than hidden.
TEST(ToolTable, AResultsLabelNamesTheToolsItsRowsSay) {
  std::set<std::string> labelled;
  for (const ToolSpec& s : tool_specs()) {
    if (s.in_result_label) labelled.insert(s.name);
  }
  EXPECT_EQ(labelled,
            (std::set<std::string>{"optimize-ort", "convert-fp16", "check-onnx", "python-stage"}));
  EXPECT_FALSE(tool_in_result_label("export-pytorch"));
  EXPECT_TRUE(tool_in_result_label("a-tool-of-a-newer-turnkey"));
  const auto value_of = [](const char* field) -> std::string {
    if (std::string(field) == "sequence") {
      return "discover export-pytorch optimize-ort convert-fp16 benchmark";
    }
    return std::string(field) == "threads" ? "2" : "";
  };
  EXPECT_EQ(settings_label(value_of, tool_in_result_label),
            "threads=2 seq=optimize-ort+convert-fp16");
  EXPECT_EQ(settings_label(value_of, [](const std::string&) { return false; }), "threads=2");
}

}  // namespace
}  // namespace turnkey::engine_internal
