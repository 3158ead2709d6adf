#pragma once

namespace turnkey {
// Major.minor change when cached builds become incompatible.
inline constexpr const char* kVersion = "0.1.0";
}  // namespace turnkey
