// The schema of every message the Python side sends (docs/protocol.md), checked before any field
// is used. The Python side runs the user's script, which can reach the event pipe and write any
// bytes to it (docs/reliability.md): a message is used only once its type is known, each field
// has its row's type, range and size, and it came when that type may come. Pure functions;
// thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "turnkey/common/error.h"

namespace turnkey::protocol {

// The longest line the core reads from the event pipe; a longer one is refused once this many
// bytes have come, never buffered whole.
inline constexpr size_t kMaxLineBytes = size_t{16} << 20;
// The most models one script may report (entries of (module, signature)), and the most discovery
// warnings kept, in number and in bytes (more are counted and dropped, not failed: a script may
// warn a lot; what is kept is copied into the discover log of each of the script's builds).
inline constexpr size_t kMaxModels = 100000;
inline constexpr size_t kMaxWarnings = 1000;
inline constexpr size_t kMaxWarningBytes = size_t{1} << 20;

// A message that breaks the protocol: forged, malformed, too large, or out of turn. The input
// fails with this one line ("the Python side broke the protocol: ..."); the run goes on.
class ProtocolError : public Error {
 public:
  explicit ProtocolError(const std::string& reason)
      : Error(ErrorKind::Script, "the Python side broke the protocol: " + reason) {}
};

// The message of one line, checked against the row of its `type`: returns it with only the fields
// that row names (unknown fields are ignored, as the protocol says; null counts as absent).
// Throws ProtocolError naming the type and field for a wrong `v`, an unknown type, a field of
// another type, out of range or too long, a required field missing.
nlohmann::json validate(const nlohmann::json& message);

// Whether validate(message) would return `message` unchanged.
bool conforms(const nlohmann::json& message);

// `text` for a one-line message: at most `max_bytes` bytes, control characters and bytes that are
// not ASCII as \xNN (whatever a hostile line holds, the message stays one line of valid UTF-8).
std::string excerpt(std::string_view text, size_t max_bytes = 120);

}  // namespace turnkey::protocol
