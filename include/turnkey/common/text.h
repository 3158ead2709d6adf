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

// `text` without leading and trailing characters from `chars` (default: blanks and line ends).
std::string trim(std::string_view text, std::string_view chars = " \t\r\n");

// A POSIX sh word for `word`: unchanged when it is made only of characters the shell takes
// literally (letters, digits and _./:=,@%+-~), else in single quotes ('it'\''s'). "" -> ''.
std::string shell_quote(std::string_view word);

// "2024-05-01T12:34:56.789Z": UTC with milliseconds.
std::string iso_utc_timestamp(std::chrono::system_clock::time_point when);
std::string iso_utc_timestamp_now();

}  // namespace turnkey
