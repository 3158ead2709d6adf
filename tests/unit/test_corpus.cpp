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

}  // namespace
}  // namespace turnkey
