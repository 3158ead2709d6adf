// The status table: every status once, in enum order, each in one headline group; a failure's
// status comes from where it happened (StatusError, the error's kind, the tool), never from its
// wording; and the HTML report's headline counts, taken from the table, add up to the builds.
#include <gtest/gtest.h>

#include <new>
#include <regex>
#include <set>

#include "support/fake_cache.h"
#include "support/temp_dir.h"
#include "turnkey/catalog/status.h"
#include "turnkey/catalog/tools.h"
#include "turnkey/common/error.h"
#include "turnkey/report/html_report.h"
#include "turnkey/report/report.h"

namespace turnkey {
namespace {

TEST(StatusTable, NamesEveryStatusOnceInEnumOrder) {
  std::set<std::string> names;
  for (size_t i = 0; i < status_table().size(); ++i) {
    const StatusInfo& s = status_table()[i];
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_EQ(static_cast<size_t>(s.status), i) << s.name;
    EXPECT_EQ(parse_status(s.name), s.status);
    EXPECT_STREQ(status_name(s.status), s.name);
  }
  EXPECT_FALSE(parse_status("no such status"));
}

TEST(StatusTable, SaysWhatFailsAndKeepsTheNamesUsersSee) {
  for (const char* n : {"successful", "no_models", "skipped_by_filter"}) {
    EXPECT_FALSE(is_failure_status(n)) << n;
  }
  for (const char* n : {"discovery_failed",
                        "export_failed",
                        "optimization_failed",
                        "fp16_failed",
                        "check_failed",
                        "runtime_load_failed",
                        "runtime_run_failed",
                        "numeric_mismatch",
                        "timeout",
                        "out_of_memory",
                        "crashed",
                        "process_limit",
                        "cancelled",
                        "node_failed",
                        "slurm_unreachable",
                        "invalid_input",
                        "failed",
                        "incomplete",
                        "running",
                        "unreadable"}) {
    EXPECT_TRUE(find_status(n)) << n;
    EXPECT_TRUE(is_failure_status(n)) << n;
  }
  EXPECT_TRUE(is_failure_status("no such status"));
  EXPECT_TRUE(is_success("successful"));
  // Inputs that never had a fair run run again when a corpus run resumes; a plain failure not.
  for (const char* n : {"cancelled", "node_failed", "slurm_unreachable"}) {
    EXPECT_TRUE(find_status(n)->rerun) << n;
  }
  for (const char* n : {"timeout", "crashed", "export_failed", "successful"}) {
    EXPECT_FALSE(find_status(n)->rerun) << n;
  }
  EXPECT_FALSE(is_success("numeric_mismatch"));
  EXPECT_EQ(status_display("crashed", 11), "crashed (signal 11)");
  EXPECT_EQ(status_display("timeout", 0), "timeout");
}

TEST(StatusTable, GroupCountsAddUpToTheNumberOfStatuses) {
  std::vector<std::string> names = {"successful",     "numeric_mismatch", "failed",
                                    "incomplete",     "unreadable",       "running",
                                    "no such status", "export_failed"};
  auto counts = count_by_group(names);
  int total = 0;
  for (int n : counts) total += n;
  EXPECT_EQ(total, static_cast<int>(names.size()));
  EXPECT_EQ(counts[static_cast<size_t>(StatusGroup::Success)], 1);
  EXPECT_EQ(counts[static_cast<size_t>(StatusGroup::Failure)], 4);
  EXPECT_EQ(counts[static_cast<size_t>(StatusGroup::Unfinished)], 2);
  EXPECT_EQ(counts[static_cast<size_t>(StatusGroup::Unreadable)], 1);
}

TEST(FailureStatus, ComesFromWhereItHappenedNotFromTheWording) {
  // The tool's row says the status unless the error names its own.
  auto of = [](const std::string& tool, const std::exception& e) {
    return status_of_failure(failure_status_of_tool(tool), e);
  };
  // The wording that used to decide it ("mismatch", "load", "unavailable") no longer does.
  EXPECT_EQ(of("benchmark", Error(ErrorKind::Runtime, "ort: unavailable: x")),
            Status::RuntimeLoadFailed);
  EXPECT_EQ(of("benchmark", StatusError(Status::RuntimeRunFailed, ErrorKind::Runtime,
                                        "session load says mismatch")),
            Status::RuntimeRunFailed);
  EXPECT_EQ(of("benchmark", Error(ErrorKind::NumericMismatch, "outputs differ")),
            Status::NumericMismatch);
  EXPECT_EQ(of("benchmark", Error(ErrorKind::Runtime, "numeric mismatch")),
            Status::RuntimeLoadFailed);
  EXPECT_EQ(of("check-onnx", Error(ErrorKind::Timeout, "x")), Status::Timeout);
  EXPECT_EQ(of("optimize-ort", std::bad_alloc()), Status::OutOfMemory);
  EXPECT_EQ(of("optimize-ort", Error(ErrorKind::Io, "out of memory")), Status::OptimizationFailed);
  EXPECT_EQ(of("export-pytorch", Error(ErrorKind::Export, "Unsupported: op")),
            Status::ExportFailed);
  EXPECT_EQ(of("convert-fp16", std::runtime_error("x")), Status::Fp16Failed);
  EXPECT_EQ(of("check-onnx", Error(ErrorKind::Io, "x")), Status::CheckFailed);
  EXPECT_EQ(of("load-onnx", Error(ErrorKind::Io, "x")), Status::InvalidInput);
  EXPECT_EQ(of("load-build", Error(ErrorKind::Io, "x")), Status::InvalidInput);
  EXPECT_EQ(of("discover", Error(ErrorKind::Script, "ValueError: bad")), Status::DiscoveryFailed);
}

// An exception that does not say where it arose (a std::bad_alloc, a library's error) is named
// with the step the tool was at; turnkey's own Error says it already and keeps its line.
TEST(FailureStatus, AReasonNamesTheStepWhereTheExceptionDoesNot) {
  const std::string step = "reading ort's outputs";
  EXPECT_EQ(failure_reason(std::bad_alloc(), step),
            "out of memory while reading ort's outputs (std::bad_alloc)");
  EXPECT_EQ(failure_reason(std::bad_alloc(), ""), "out of memory (std::bad_alloc)");
  EXPECT_EQ(failure_reason(std::runtime_error("[json.exception] bad\nmore"), step),
            "internal error while reading ort's outputs: [json.exception] bad");
  const std::filesystem::filesystem_error fs_error(
      "cannot copy", std::make_error_code(std::errc::no_space_on_device));
  EXPECT_EQ(
      failure_reason(fs_error, "taking the exported files")
          .rfind("file system while taking the exported files: filesystem error: cannot copy", 0),
      0u);
  EXPECT_EQ(failure_reason(Error(ErrorKind::Runtime, "ONNX Runtime: Failed to allocate"), step),
            "ONNX Runtime: Failed to allocate");
}

TEST(FailureStatus, PythonSideEndsFromTheProtocolsFieldsNotTheMessage) {
  // The status the Python side gave the error, else a signal from the wait status.
  EXPECT_EQ(python_end_status("out_of_memory", 0), Status::OutOfMemory);
  EXPECT_EQ(python_end_status("", 11), Status::Crashed);
  EXPECT_EQ(python_end_status("out_of_memory", 9), Status::OutOfMemory);
  EXPECT_EQ(python_end_status("", 0), std::nullopt);
  EXPECT_EQ(python_end_status("no_such_status", 0), std::nullopt);
  // Messages that name a MemoryError or a signal decide nothing.
  for (const char* tool : {"discover", "export-pytorch"}) {
    EXPECT_EQ(
        status_of_failure(failure_status_of_tool(tool), Error(ErrorKind::Script, "MemoryError: x")),
        failure_status_of_tool(tool));
    EXPECT_EQ(status_of_failure(failure_status_of_tool(tool),
                                Error(ErrorKind::Export, "ValueError: killed by signal 9")),
              failure_status_of_tool(tool));
    EXPECT_EQ(signal_of_failure(Error(ErrorKind::Export, "killed by signal 9")), 0);
  }
  // A crash carries its signal from where it was seen.
  const StatusError crash(Status::Crashed, Error(ErrorKind::Export, "the Python side ended"), 9);
  EXPECT_EQ(status_of_failure(Status::ExportFailed, crash), Status::Crashed);
  EXPECT_EQ(signal_of_failure(crash), 9);
  EXPECT_EQ(crash.kind(), ErrorKind::Export);
}

TEST(HtmlCounts, AddUpToTheBuildsWithANumericMismatchInTheCache) {
  test::TempDir dir("tk-status-html");
  const auto cache = dir / "cache";
  int i = 0;
  for (const char* status : {"successful", "failed", "numeric_mismatch", "incomplete"}) {
    test::FakeBuild b;
    b.build_name = std::string("model_") + status + "_" + std::to_string(10000000 + i++);
    b.status = status;
    b.failed_tool = "benchmark";
    b.error = "x";
    b.samples_ms = test::fake_latencies(1.0, 20, 7);
    test::write_fake_build(cache, b);
  }
  std::filesystem::create_directories(cache / "broken_12345678");
  std::ofstream(cache / "broken_12345678" / "broken_12345678_state.yaml") << "{{{";
  report::Report r = report::read_caches({cache.string()});
  ASSERT_EQ(r.rows.size(), 5u);
  const std::string html = report::to_html(r, {"2026-11-23T00:00:00Z", "turnkey report", {}});
  const size_t start = html.find("<ul class=\"counts\"");
  ASSERT_NE(start, std::string::npos);
  const std::string counts = html.substr(start, html.find("</ul>", start) - start);
  std::map<std::string, int> shown;
  std::regex item("<li(?: class=\"([a-z]+)\")?><b>([0-9]+)</b>([a-z]+)</li>");
  for (auto it = std::sregex_iterator(counts.begin(), counts.end(), item);
       it != std::sregex_iterator(); ++it) {
    shown[(*it)[3]] = std::stoi((*it)[2]);
  }
  // Issue 32: the rows are results (a build dir holds one per runtime and setting), so the
  // header counts results.
  EXPECT_EQ(shown["results"], 5) << counts;
  EXPECT_EQ(shown["successful"], 1) << counts;
  EXPECT_EQ(shown["failed"], 2) << counts;  // failed + numeric_mismatch
  EXPECT_EQ(shown["incomplete"], 1) << counts;
  EXPECT_EQ(shown["unreadable"], 1) << counts;
  EXPECT_EQ(shown["successful"] + shown["failed"] + shown["incomplete"] + shown["unreadable"] +
                shown["skipped"],
            shown["results"])
      << counts;
}

}  // namespace
}  // namespace turnkey
