// Internal to the HTML report: helpers its parts share (html_chart.cpp, html_tables.cpp,
// html_report.cpp). Pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "turnkey/report/html_report.h"

namespace turnkey::report::html {

// Colour-blind-friendly categorical palette (Observable 10).
inline constexpr const char* kPalette[] = {"#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951",
                                           "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e", "#9498a0"};

// An axis: values to positions between x0 and x1 (x1 < x0 draws upwards), linear or log.
struct Scale {
  bool log = false;
  double lo = 0, hi = 1;
  double x0 = 0, x1 = 1;
  double x(double v) const {
    if (log) {
      v = std::max(v, lo);
      return x0 + (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (x1 - x0);
    }
    return x0 + (std::max(v, 0.0) - lo) / (hi - lo) * (x1 - x0);
  }
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log) {
      for (double v = lo; v <= hi * 1.0001; v *= 10) t.push_back(v);
      return t;
    }
    double raw = (hi - lo) / 5;
    double mag = std::pow(10, std::floor(std::log10(raw)));
    double step = raw / mag <= 1   ? mag
                  : raw / mag <= 2 ? 2 * mag
                  : raw / mag <= 5 ? 5 * mag
                                   : 10 * mag;
    for (double v = 0; v <= hi * 1.0001; v += step) t.push_back(v);
    return t;
  }
};

struct ChartUnit {
  const char* name;
  double per_ms;  // values in this unit = milliseconds * per_ms
};

ChartUnit chart_unit(double vmax_ms);
// Linear from 0 to a round value above vmax; log (decades) when vmin > 0 and vmax / vmin > 30.
Scale make_scale(double vmin, double vmax, double x0, double x1);

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
// Results of one model that differ by batch size, concurrency or input shapes (html_sweeps.cpp):
// a table and a chart of throughput against latency per model; "" when there are none.
std::string sweeps_section(const std::vector<Row>& rows);

}  // namespace turnkey::report::html
