// Helpers of the report tests (test_report.cpp, test_report_outputs.cpp): a strict CSV reader,
// rows by cache and name, counting.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "support/text_count.h"
#include "turnkey/report/report.h"

namespace turnkey::report::test_util {

// A strict RFC 4180 reader (CRLF records, quoted fields with doubled quotes), so the tests check
// what a CSV consumer would read back rather than our own string pieces.
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  size_t i = 0;
  bool field_started = false;
  while (i < text.size()) {
    char c = text[i];
    if (c == '"' && field.empty() && !field_started) {
      ++i;
      for (;;) {
        if (i >= text.size()) throw std::runtime_error("unterminated quote");
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += text[i++];
      }
      field_started = true;
      if (i < text.size() && text[i] != ',' && text[i] != '\r') {
        throw std::runtime_error("text after a closing quote");
      }
      continue;
    }
    if (c == ',') {
      record.push_back(field);
      field.clear();
      field_started = false;
      ++i;
    } else if (c == '\r') {
      if (i + 1 >= text.size() || text[i + 1] != '\n') throw std::runtime_error("bare CR");
      record.push_back(field);
      records.push_back(record);
      record.clear();
      field.clear();
      field_started = false;
      i += 2;
    } else if (c == '\n' || c == '"') {
      throw std::runtime_error("bare LF or quote in an unquoted field");
    } else {
      field += c;
      field_started = true;
      ++i;
    }
  }
  if (!record.empty() || !field.empty()) throw std::runtime_error("last record without CRLF");
  return records;
}

inline std::map<std::string, std::string> as_map(const std::vector<std::string>& header,
                                                 const std::vector<std::string>& record) {
  std::map<std::string, std::string> m;
  for (size_t i = 0; i < header.size() && i < record.size(); ++i) m[header[i]] = record[i];
  return m;
}

inline const Row* find_row(const std::vector<Row>& rows, const std::string& cache,
                           const std::string& build) {
  for (const Row& r : rows) {
    if (r.text("cache") == cache && r.text("build_name") == build) return &r;
  }
  return nullptr;
}

inline std::string hash64(char c) { return std::string(64, c); }

using test::count_occurrences;

}  // namespace turnkey::report::test_util
