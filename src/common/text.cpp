#include "turnkey/common/text.h"

#include <ctime>

#include <fmt/format.h>

#include "turnkey/common/error.h"

namespace turnkey {

std::string one_line(std::string_view text, size_t max_chars) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return "";
  const std::string line = first_line(text);  // the one first-line rule (error.h)
  if (line.size() <= max_chars) return line;
  return line.substr(0, max_chars) + "...";
}

std::string trim(std::string_view text, std::string_view chars) {
  const size_t begin = text.find_first_not_of(chars);
  if (begin == std::string_view::npos) return "";
  const size_t end = text.find_last_not_of(chars);
  return std::string(text.substr(begin, end - begin + 1));
}

std::string shell_quote(std::string_view word) {
  constexpr std::string_view kLiteral = "_./:=,@%+-~";
  bool plain = !word.empty();
  for (char c : word) {
    const auto u = static_cast<unsigned char>(c);
    const bool alnum = (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z');
    if (!alnum && kLiteral.find(c) == std::string_view::npos) {
      plain = false;
      break;
    }
  }
  if (plain) return std::string(word);
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string iso_utc_timestamp(std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms.count()));
}

std::string iso_utc_timestamp_now() { return iso_utc_timestamp(std::chrono::system_clock::now()); }

}  // namespace turnkey
