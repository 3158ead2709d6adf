// Corpus-run pieces a user meets directly: --memory-limit sizes and the failure taxonomy; and
// the request a corpus parent hands its workers (a JSON round trip).
#include <gtest/gtest.h>

#include <set>

#include "corpus_internal.h"
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

// What a worker (or a Slurm job) needs of the request survives the trip through the request
// file; the parent-only fields (inputs, scheduling) are not written; a second trip is stable
// (the request's key is a hash of this JSON).
TEST(CorpusRequest, RoundTripKeepsWhatTheWorkersNeed) {
  RunRequest r;
  r.global.inputs = {"a.py", "b.onnx"};
  r.global.cache_dir = "/tmp/cache";
  r.global.labels = {"author::x", "task::y"};
  r.global.rebuild = "always";
  r.global.lean_cache = true;
  r.global.python = "/usr/bin/python3";
  r.global.jobs = 4;
  r.global.timeout_s = 12.5;
  r.global.memory_limit = "2G";
  r.global.max_processes = 64;
  r.sequence = {{"auto", nlohmann::json::object()},
                {"discover", {{"max_depth", 1}, {"script_args", "--n 2 'a b'"}}},
                {"export-pytorch", {{"opset", 16}}},
                {"benchmark", {{"iterations", 7}, {"rt_args", {"threads=1"}}, {"adaptive", true}}}};
  r.command_line = "turnkey a.py b.onnx -j 4";
  const nlohmann::json j = engine_internal::request_to_json(r);
  const RunRequest back = engine_internal::request_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.global.cache_dir, r.global.cache_dir);
  EXPECT_EQ(back.global.labels, r.global.labels);
  EXPECT_EQ(back.global.rebuild, r.global.rebuild);
  EXPECT_EQ(back.global.lean_cache, r.global.lean_cache);
  EXPECT_EQ(back.global.python, r.global.python);
  EXPECT_EQ(back.global.timeout_s, r.global.timeout_s);
  EXPECT_EQ(back.global.memory_limit, r.global.memory_limit);
  EXPECT_EQ(back.global.max_processes, r.global.max_processes);
  ASSERT_EQ(back.sequence.size(), r.sequence.size());
  for (size_t i = 0; i < r.sequence.size(); ++i) {
    EXPECT_EQ(back.sequence[i].name, r.sequence[i].name);
    EXPECT_EQ(back.sequence[i].options, r.sequence[i].options) << r.sequence[i].name;
  }
  EXPECT_EQ(back.command_line, r.command_line);
  // Parent-only: the worker runs one input and is itself the isolation.
  EXPECT_TRUE(back.global.inputs.empty());
  EXPECT_EQ(back.global.jobs, 1);
  EXPECT_EQ(engine_internal::request_to_json(back), j);
}

TEST(CorpusRequest, InputItemsRoundTrip) {
  InputItem item;
  item.given = "models/x.py::abc12345";
  item.path = "/abs/models/x.py";
  item.hashes = {"abc12345"};
  const InputItem back = engine_internal::item_from_json(
      nlohmann::json::parse(engine_internal::item_to_json(item).dump()));
  EXPECT_EQ(back.given, item.given);
  EXPECT_EQ(back.path, item.path);
  EXPECT_EQ(back.hashes, item.hashes);
}

}  // namespace
}  // namespace turnkey
