// Corpus-run pieces a user meets directly: --memory-limit sizes (the statuses: test_status.cpp); and
// the request a corpus parent hands its workers (a JSON round trip).
#include <gtest/gtest.h>

#include <set>

#include "corpus/corpus_internal.h"
#include "turnkey/common/error.h"
#include "turnkey/corpus/corpus.h"

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

// An input's outcome travels as the status enum; its name is written only in the progress file's
// JSON (and read back from it). A name the status table does not know reads as no status, which
// the corpus records then treat as a worker that reported nothing (crashed).
TEST(InputOutcome, TheStatusIsTheEnumAndItsNameOnlyInTheJson) {
  engine_internal::InputOutcome o;
  EXPECT_FALSE(o.status.has_value());
  o.status = Status::Timeout;
  o.stage = "benchmark";
  o.signal = 0;
  const nlohmann::json j = o.to_json();
  EXPECT_EQ(j["status"], "timeout");
  const engine_internal::InputOutcome back = engine_internal::InputOutcome::from_json(j);
  ASSERT_TRUE(back.status.has_value());
  EXPECT_EQ(*back.status, Status::Timeout);
  EXPECT_EQ(back.stage, "benchmark");
  nlohmann::json newer = j;
  newer["status"] = "a_status_of_a_newer_turnkey";
  EXPECT_FALSE(engine_internal::InputOutcome::from_json(newer).status.has_value());
  newer["status"] = 3;
  EXPECT_FALSE(engine_internal::InputOutcome::from_json(newer).status.has_value());
  EXPECT_EQ(engine_internal::InputOutcome{}.to_json()["status"], "");
  // Rendered at the edges from the table.
  EXPECT_EQ(status_display(Status::Crashed, 9), "crashed (signal 9)");
  EXPECT_EQ(status_display(Status::Timeout, 9), "timeout");
  EXPECT_TRUE(is_failure_status(Status::NodeFailed));
  EXPECT_FALSE(is_failure_status(Status::SkippedByFilter));
}

}  // namespace
}  // namespace turnkey
