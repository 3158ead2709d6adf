#include "turnkey/common/text.h"

#include <ctime>

#include <fmt/format.h>

#include "turnkey/common/error.h"

namespace turnkey {

std::string one_line(std::string_view text, size_t max_chars) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return "";
  const std::string line = first_line(text);  // the one first-line rule (error.h)
  if (line.size() <= max_chars) return line;
  return line.substr(0, utf8_prefix_bytes(line, max_chars)) + "...";
}

namespace {

// Bytes of the well-formed UTF-8 sequence at text[at], or 0 when none starts there.
size_t utf8_sequence_bytes(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;  // overlong
    if (b0 == 0xed) hi = 0x9f;  // surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;  // overlong
    if (b0 == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (text.size() - at < n || byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return n;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const size_t n = utf8_sequence_bytes(text, at);
    if (n == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++at;
    } else {
      out.append(text.substr(at, n));
      at += n;
    }
  }
  return out;
}

size_t utf8_prefix_bytes(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text.size();
  size_t cut = max_bytes;
  // Back off over continuation bytes to the start of the sequence the cut falls in.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return cut;
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
