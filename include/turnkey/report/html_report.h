// The HTML report: one self-contained file (inline CSS, inline vanilla JS, inline SVG charts made
// here; no network, enforced by a Content-Security-Policy). Every text from a cache is escaped.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "turnkey/report/report.h"

namespace turnkey::report {

// Escapes & < > " ' for HTML text and attribute values (also valid inside inline SVG).
std::string html_escape(std::string_view text);

// Horizontal bar chart of median latency, one <rect class="bar"> per row that has a median and
// status "successful", with 95% CI whiskers; log scale when values span more than 30x.
// Returns "" when there is nothing to draw.
std::string latency_chart_svg(const std::vector<Row>& rows, bool several_caches);

// How many bars latency_chart_svg draws for `rows`.
int latency_chart_bar_count(const std::vector<Row>& rows);

std::string to_html(const Report& report, const Provenance& provenance);

}  // namespace turnkey::report
