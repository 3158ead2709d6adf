// Counting a needle's non-overlapping occurrences in a test's output (unit and end-to-end tests).
#pragma once

#include <string>

namespace turnkey::test {

inline int count_occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

}  // namespace turnkey::test
