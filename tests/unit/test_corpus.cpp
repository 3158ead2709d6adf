// Corpus-run pieces a user meets directly: --memory-limit sizes and the failure taxonomy.
#include <gtest/gtest.h>

#include <set>

#include "turnkey/common/error.h"
#include "turnkey/engine/corpus.h"
#include "turnkey/engine/status.h"

namespace turnkey {
namespace {

TEST(MemoryLimit, AcceptsSizesWithBinaryUnits) {
  EXPECT_EQ(parse_size("512M"), 512LL << 20);
  EXPECT_EQ(parse_size("4G"), 4LL << 30);
  EXPECT_EQ(parse_size("4GiB"), 4LL << 30);
  EXPECT_EQ(parse_size("1.5g"), 3LL << 29);
  EXPECT_EQ(parse_size("65536K"), 64LL << 20);
  EXPECT_EQ(parse_size("1T"), 1LL << 40);
  EXPECT_EQ(parse_size("33554432"), 32LL << 20);
}

TEST(MemoryLimit, RejectsNonsenseWithTheValueInTheMessage) {
  for (const char* bad : {"", "lots", "4X", "-1G", "0", "G", "1e999G", "10"}) {
    try {
      parse_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
      EXPECT_NE(std::string(e.what()).find(std::string("--memory-limit ") + bad), std::string::npos)
          << e.what();
    }
  }
}

TEST(Taxonomy, EachFailedToolHasItsStatus) {
  EXPECT_EQ(status_for_failed_tool("discover", "ValueError: bad"), "discovery_failed");
  EXPECT_EQ(status_for_failed_tool("discover", "MemoryError"), "out_of_memory");
  EXPECT_EQ(status_for_failed_tool(
                "discover", "the Python side was killed by signal 11 (Segmentation fault) before"),
            "crashed");
  EXPECT_EQ(signal_in("killed by signal 11 (Segmentation fault)"), 11);
  EXPECT_EQ(signal_in("exited with code 3"), 0);
  EXPECT_EQ(status_for_failed_tool("export-pytorch", "Unsupported: op"), "export_failed");
  EXPECT_EQ(status_for_failed_tool("optimize-ort", "x"), "optimization_failed");
  EXPECT_EQ(status_for_failed_tool("convert-fp16", "x"), "fp16_failed");
  EXPECT_EQ(status_for_failed_tool("check-onnx", "x"), "check_failed");
  EXPECT_EQ(status_for_failed_tool("load-onnx", "x"), "invalid_input");
  EXPECT_EQ(status_for_failed_tool("benchmark", "ort: unavailable: no library"),
            "runtime_load_failed");
  EXPECT_EQ(status_for_failed_tool("benchmark", "Non-zero status code returned while running"),
            "runtime_run_failed");
  EXPECT_EQ(status_for_failed_tool("benchmark", "anything", "numeric_mismatch"),
            "numeric_mismatch");
}

TEST(Taxonomy, TableNamesEveryStatusOnceAndSaysWhatFails) {
  std::set<std::string> names;
  for (const StatusInfo& s : status_table()) EXPECT_TRUE(names.insert(s.name).second) << s.name;
  for (const char* n : {"successful", "no_models", "skipped_by_filter"}) {
    EXPECT_FALSE(is_failure_status(n)) << n;
  }
  for (const char* n :
       {"discovery_failed", "export_failed", "optimization_failed", "fp16_failed",
        "runtime_load_failed", "runtime_run_failed", "numeric_mismatch", "timeout", "out_of_memory",
        "crashed", "process_limit", "cancelled", "invalid_input"}) {
    EXPECT_TRUE(find_status(n)) << n;
    EXPECT_TRUE(is_failure_status(n)) << n;
  }
  EXPECT_TRUE(is_failure_status("no such status"));
  EXPECT_EQ(status_display("crashed", 11), "crashed (signal 11)");
  EXPECT_EQ(status_display("timeout", 0), "timeout");
}

}  // namespace
}  // namespace turnkey
