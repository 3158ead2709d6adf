// Small text helpers used across layers, so each is written once: one-line reasons, trimming,
// POSIX shell quoting and the ISO-8601 UTC timestamps of logs and reports. Pure functions,
// thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace turnkey {

// first_line(text) (error.h: the first non-blank line, trimmed) cut to `max_chars` characters
// plus "..." when longer, "" when there is none: for error lines on a terminal and in report
// cells.
inline constexpr size_t kOneLineMaxChars = 400;
std::string one_line(std::string_view text, size_t max_chars = kOneLineMaxChars);

// `text` with every byte that is not part of a well-formed UTF-8 sequence (RFC 3629: no overlong
// forms, surrogates or code points above U+10FFFF) replaced by U+FFFD: what a JSON writer takes
// from bytes another process wrote (nlohmann::json's dump() throws on malformed UTF-8).
std::string valid_utf8(std::string_view text);
// The length of the longest prefix of `text` of at most `max_bytes` bytes that does not end inside
// a UTF-8 sequence (a cut there keeps valid UTF-8 valid).
size_t utf8_prefix_bytes(std::string_view text, size_t max_bytes);

// `text` without leading and trailing characters from `chars` (default: blanks and line ends).
std::string trim(std::string_view text, std::string_view chars = " \t\r\n");

// A POSIX sh word for `word`: unchanged when it is made only of characters the shell takes
// literally (letters, digits and _./:=,@%+-~), else in single quotes ('it'\''s'). "" -> ''.
std::string shell_quote(std::string_view word);

// "2024-05-01T12:34:56.789Z": UTC with milliseconds.
std::string iso_utc_timestamp(std::chrono::system_clock::time_point when);
std::string iso_utc_timestamp_now();

}  // namespace turnkey
