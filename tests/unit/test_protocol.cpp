// The protocol as a boundary (protocol_schema.h, docs/reliability.md): each message checked
// against its schema and its turn before use, a line over the limit refused unread, and the session
// cut off with one line. ScriptSession runs in attach mode on a file of the lines (no process).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "support/temp_dir.h"
#include "turnkey/discovery/protocol_schema.h"
#include "turnkey/discovery/python_side.h"

namespace turnkey {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string refusal(const json& message) {
  try {
    protocol::validate(message);
  } catch (const protocol::ProtocolError& e) {
    return e.what();
  }
  return "accepted";
}

const std::string kHash(64, 'a');

TEST(ProtocolSchema, AGoodMessageKeepsItsKnownFieldsOnly) {
  const json m = protocol::validate({{"v", 3}, {"type", "model"}, {"id", 0}, {"hash", kHash},
                                     {"parent_id", nullptr}, {"later_field", "x"},
                                     {"inputs", {{{"name", "x"}, {"shape", {1, 4}},
                                                  {"dtype", "float32"}, {"extra", 1}}}}});
  EXPECT_EQ(m, json({{"v", 3}, {"type", "model"}, {"id", 0}, {"hash", kHash},
                     {"inputs", {{{"name", "x"}, {"shape", {1, 4}}, {"dtype", "float32"}}}}}));
  EXPECT_TRUE(protocol::conforms(m));
}

TEST(ProtocolSchema, ForgedFieldsAreRefusedInOneLineNamingTypeAndField) {
  const std::string prefix = "the Python side broke the protocol: ";
  EXPECT_EQ(refusal({{"v", 3}, {"type", "model"}, {"id", "zero"}, {"hash", kHash}}),
            prefix + "'model' message: field 'id' is not an integer in [0, 99999]");
  EXPECT_EQ(refusal({{"v", 3}, {"type", "model"}, {"id", 1}}),
            prefix + "'model' message lacks its field 'hash'");
  EXPECT_EQ(refusal({{"v", 3}, {"type", "model"}, {"id", 1}, {"hash", "xyz"}}),
            prefix + "'model' message: field 'hash' is not 64 hex digits");
  EXPECT_EQ(refusal({{"v", 3}, {"type", "model"}, {"id", 1}, {"hash", kHash},
                     {"inputs", {{{"shape", {"a"}}}}}}),
            prefix + "'model' message: field 'inputs': field 'shape' holds an item that is not a "
                     "number in [0, 4611686018427387904]");
  EXPECT_EQ(refusal({{"v", 3}, {"type", "counts"}, {"counts", {{"0", 1e300}}}}),
            prefix + "'counts' message: field 'counts' holds a value that is not a number in [0, "
                     "4611686018427387904]");
  EXPECT_EQ(refusal({{"v", 3}, {"type", "script_end"}, {"status", "fine"}}),
            prefix + "'script_end' message: field 'status' is 'fine', not one of ok|exception|exit");
  EXPECT_EQ(refusal({{"v", "3"}, {"type", "ready"}}),
            prefix + "protocol version mismatch: core speaks 3, the line says \"3\"");
  EXPECT_EQ(refusal({{"v", 3}, {"type", "launch\n"}}),
            prefix + "unknown message type 'launch\\x0a'");
  EXPECT_EQ(refusal(json::array()), prefix + "sent a line that is not a JSON object");
  EXPECT_NE(refusal({{"v", 3}, {"type", "warning"}, {"message", std::string(70000, 'w')}})
                .find("field 'message' is longer than 65536 bytes"),
            std::string::npos);
}

TEST(ProtocolSchema, AVersionNestedMillionsDeepIsRefusedWithoutPrintingIt) {
  // A line within the 16 MiB limit can nest 8 million arrays: printing it recursed that deep.
  // Parsed as the core parses a line (a copy of the value would recurse as deep).
  const json message = json::parse("{\"type\": \"ready\", \"v\": " +
                                   std::string(8'000'000, '[') + std::string(8'000'000, ']') + "}");
  EXPECT_EQ(refusal(message), "the Python side broke the protocol: protocol version mismatch: "
                              "core speaks 3, the line says an array");
  EXPECT_EQ(refusal({{"v", {{"a", 1}}}, {"type", "ready"}}),
            "the Python side broke the protocol: protocol version mismatch: core speaks 3, the "
            "line says an object");
}

TEST(ProtocolSchema, AnExcerptIsOneLineOfAscii) {
  EXPECT_EQ(protocol::excerpt("a\nb\xff", 120), "a\\x0ab\\xff");
  EXPECT_EQ(protocol::excerpt(std::string(10, 'x'), 4), "xxxx...");
}

// A session on `lines` in attach mode; the reply of one `bench_run` when discovery got ready.
struct Replay {
  DiscoveryResult discovered;
  std::string request_error;
  json reply;
};

Replay replay(const std::string& lines) {
  test::TempDir dir("tk-protocol");
  const fs::path events = dir.path() / "events.jsonl";
  std::ofstream(events, std::ios::binary) << lines;
  ScriptOptions o;
  o.attach_event_fd = ::open(events.c_str(), O_RDONLY | O_CLOEXEC);
  o.attach_command_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  ScriptSession s(o);
  Replay r;
  r.discovered = s.discover();
  if (!r.discovered.ready) return r;
  try {
    r.reply = s.request({{"type", "bench_run"}, {"n", 2}}, "bench_samples", ErrorKind::Runtime);
  } catch (const Error& e) {
    r.request_error = e.what();
  }
  return r;
}

const std::string kDiscovery =
    R"({"v": 3, "type": "hello", "python": "3.11"})" "\n"
    R"({"v": 3, "type": "model", "id": 0, "hash": ")" + kHash + R"("})" "\n"
    R"({"v": 3, "type": "script_end", "status": "ok"})" "\n"
    R"({"v": 3, "type": "counts", "counts": {"0": 3}})" "\n"
    R"({"v": 3, "type": "ready"})" "\n";

TEST(ProtocolSession, AGoodSessionGetsItsReply) {
  const Replay r = replay(kDiscovery + R"({"v": 3, "type": "bench_samples", "ok": true, )"
                                       R"("samples_ns": [10, 20]})" "\n");
  ASSERT_TRUE(r.discovered.ready) << r.discovered.error;
  ASSERT_EQ(r.discovered.models.size(), 1u);
  EXPECT_EQ(r.discovered.models[0].executed, 3);
  EXPECT_EQ(r.request_error, "");
  EXPECT_EQ(r.reply["samples_ns"], json({10, 20}));
}

TEST(ProtocolSession, MessagesOutOfTurnEndTheSession) {
  const std::string prefix = "the Python side broke the protocol: ";
  EXPECT_EQ(replay(R"({"v": 3, "type": "ready"})" "\n").discovered.error,
            prefix + "'ready' before 'hello'");
  EXPECT_EQ(replay(kDiscovery.substr(0, kDiscovery.find("{\"v\": 3, \"type\": \"script_end")) +
                   R"({"v": 3, "type": "ready"})" "\n")
                .discovered.error,
            prefix + "'ready' before 'script_end'");
  EXPECT_EQ(replay(R"({"v": 3, "type": "hello"})" "\n"
                   R"({"v": 3, "type": "model", "id": 1, "parent_id": 0, "hash": ")" + kHash +
                   "\"}\n")
                .discovered.error,
            prefix + "model 1 names parent 0, which it never reported");
  const Replay wrong = replay(kDiscovery + R"({"v": 3, "type": "traced", "ok": true})" "\n");
  EXPECT_EQ(wrong.request_error, prefix + "a 'traced' message in reply to 'bench_run'");
}

TEST(ProtocolSession, ALineOverTheLimitIsRefusedAndNotJsonSaysSo) {
  const Replay big = replay(std::string(protocol::kMaxLineBytes + (1 << 17), 'x'));
  EXPECT_EQ(big.discovered.error, "the Python side broke the protocol: sent a line longer than 16 MiB");
  EXPECT_EQ(big.discovered.script_status, "crashed");
  EXPECT_EQ(replay("\xff{oops\n").discovered.error,
            "the Python side broke the protocol: sent a line that is not JSON: \\xff{oops");
}

TEST(ProtocolSession, AHelloNamingAnotherProcessIsForged) {
  // Attach mode: the Python side is a process above this one; pid 1 is above every process.
  EXPECT_EQ(replay(R"({"v": 3, "type": "hello", "pid": 1})" "\n").discovered.error,
            "the Python side broke the protocol: 'hello' names process 1, which is not the "
            "Python side");
  const std::string parent = std::to_string(getppid());
  // (The lines end after the hello: the session fails for that, not for the pid.)
  EXPECT_EQ(replay(R"({"v": 3, "type": "hello", "pid": )" + parent + "}\n")
                .discovered.error.find("names process"),
            std::string::npos);
}

}  // namespace
}  // namespace turnkey
