// How the user's script ended (DiscoveryResult::script_status, python_side.h). Header-only,
// constants; thread-safe.
#pragma once

namespace turnkey {

// How the user's script ended (DiscoveryResult::script_status): the status of the protocol's
// script_end (docs/protocol.md), or crashed when the Python side ended without one. Not build
// statuses (catalog/status.h): the engine decides those from these.
namespace script_end {
inline constexpr const char* kOk = "ok";
inline constexpr const char* kException = "exception";
inline constexpr const char* kExit = "exit";
inline constexpr const char* kCrashed = "crashed";
}  // namespace script_end

}  // namespace turnkey
