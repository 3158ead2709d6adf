// Internal to the HTML report: helpers its parts share (html_chart.cpp, html_tables.cpp,
// html_report.cpp). Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "turnkey/report/html_report.h"

namespace turnkey::report::html {

std::string fmt_ms(double v);  // 4 significant digits, "" when not finite
// Label text cut to `max_chars` code points' worth of bytes (UTF-8 safe), with an ellipsis.
std::string shorten(const std::string& s, size_t max_chars);
bool is_measured(const Row& r);  // successful with a finite, non-negative median
std::string model_title(const Row& r);

std::string td_text(const std::string& v, const char* cls = nullptr);
std::string td_num(double v, const std::string& shown);
std::string status_badge(const std::string& status);

// The page's sections.
std::string results_table(const std::vector<Row>& rows);
std::string speedup_section(const std::vector<Row>& rows);
std::string failures_section(const std::vector<Row>& rows);
// The --profile tables of the rows that have one (html_profile.cpp); "" when none has.
std::string profiles_section(const std::vector<Row>& rows);

}  // namespace turnkey::report::html
