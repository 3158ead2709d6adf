// The self-contained HTML report. Charts are SVG strings built here; the only script sorts tables
// and marks the page as loaded (data-report-ready on <body>), which the browser test checks.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "html_parts.h"
#include "turnkey/catalog/status.h"
#include "turnkey/common/version.h"

namespace turnkey::report {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace html;

namespace {

const char* kStyle = R"CSS(
:root { --fg: #1d2430; --muted: #5b6575; --line: #d9dee7; --bg-alt: #f5f7fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       margin: 0 auto; padding: 20px 28px 40px; max-width: 1240px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 6px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
p.meta, .note { color: var(--muted); margin: 2px 0; }
code { font: 12px ui-monospace, "SFMono-Regular", Menlo, monospace; background: var(--bg-alt);
       padding: 1px 4px; border-radius: 3px; word-break: break-all; }
.counts { display: flex; gap: 10px; flex-wrap: wrap; margin: 14px 0 4px; padding: 0; }
.counts li { list-style: none; border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px;
             min-width: 96px; }
.counts b { display: block; font-size: 20px; }
.counts .failed b, .counts .unreadable b { color: #c0392b; }
svg.chart { max-width: 100%; height: auto; display: block; margin-top: 6px; }
svg text { font: 12px system-ui, sans-serif; fill: var(--fg); }
svg text.tick, svg text.axis-title { fill: var(--muted); font-size: 11px; }
svg line.grid { stroke: var(--line); stroke-width: 1; }
svg .whisker line { stroke: #1d2430; stroke-width: 1.2; }
svg text.value { font-size: 11px; fill: var(--muted); }
.table-wrap { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 12.5px; margin-top: 6px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) { background: var(--bg-alt); }
table.sortable th { cursor: pointer; user-select: none; white-space: nowrap; position: sticky; top: 0;
                    background: #fff; }
table.sortable th::after { content: " \2195"; color: #b3bac6; }
table.sortable th[aria-sort=ascending]::after { content: " \25B2"; color: var(--fg); }
table.sortable th[aria-sort=descending]::after { content: " \25BC"; color: var(--fg); }
td { white-space: nowrap; }
td.wrap { white-space: normal; min-width: 120px; max-width: 210px; overflow-wrap: anywhere; }
td.error { white-space: normal; min-width: 300px; max-width: 520px; overflow-wrap: anywhere;
           color: #7a2e24; }
.status { padding: 1px 6px; border-radius: 8px; font-size: 11.5px; white-space: nowrap; }
.status-successful { background: #e3f4e8; color: #1e6b37; }
.status-failed, .status-unreadable { background: #fbe4e1; color: #9b2c1f; }
.status-incomplete { background: #fdf1d8; color: #7a5300; }
.dup { font-size: 10.5px; background: #eceff4; color: var(--muted); border-radius: 6px; padding: 0 5px;
       margin-left: 4px; }
table.matrix td.cell { text-align: right; font-variant-numeric: tabular-nums; }
h3 { font-size: 14.5px; margin: 18px 0 2px; }
.share-bar { display: inline-block; height: 9px; background: #4f7cac; margin-right: 6px;
             vertical-align: middle; }
.faster { background: #e3f4e8; } .slower { background: #fbe4e1; }
)CSS";

const char* kScript = R"JS(
(function () {
  'use strict';
  window.addEventListener('error', function (e) {
    document.body.setAttribute('data-report-error', String(e.message));
  });
  function empty(v) { return v === null || v === ''; }
  function sortTable(table, col, dir) {
    var head = table.tHead.rows[0];
    var numeric = head.cells[col].getAttribute('data-type') === 'num';
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col].getAttribute('data-v'), y = b.cells[col].getAttribute('data-v');
      if (empty(x)) return empty(y) ? 0 : 1;  // missing values last, either direction
      if (empty(y)) return -1;
      var c = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
      return dir === 'ascending' ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(head.cells, function (h) { h.removeAttribute('aria-sort'); });
    head.cells[col].setAttribute('aria-sort', dir);
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.tabIndex = 0;
      function go() {
        sortTable(table, i, th.getAttribute('aria-sort') === 'ascending' ? 'descending' : 'ascending');
      }
      th.addEventListener('click', go);
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); go(); }
      });
    });
    var initial = table.getAttribute('data-initial-sort');
    if (initial !== null) sortTable(table, parseInt(initial, 10), 'ascending');
  });
  document.body.setAttribute('data-report-ready', '1');
})();
)JS";

}  // namespace

namespace {

// The page head and its header: when, by what, on which machine, from which caches.
std::string page_header(const Report& report, const Provenance& provenance) {
  const json& m = provenance.machine;
  auto mtext = [&](const char* key) {
    return m.is_object() && m.contains(key) ? cell_text(m[key]) : std::string();
  };

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
       "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += fmt::format("<title>turnkey report {}</title>\n", html_escape(provenance.generated_utc));
  h += "<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n<header>\n";
  h += "<h1>turnkey report</h1>\n";
  h += fmt::format(
      "<p class=\"meta\">Generated {} by turnkey {} on {} ({} cores, {} logical CPUs; machine "
      "fingerprint <code>{}</code>).</p>\n",
      html_escape(provenance.generated_utc), html_escape(kVersion), html_escape(mtext("cpu_model")),
      html_escape(mtext("physical_cores")), html_escape(mtext("logical_cpus")),
      html_escape(mtext("fingerprint")));
  h += fmt::format("<p class=\"meta\">Command: <code>{}</code></p>\n",
                   html_escape(provenance.command_line));
  h += "<p class=\"meta\">Caches: ";
  for (size_t i = 0; i < report.caches.size(); ++i) {
    const CacheSummary& c = report.caches[i];
    h += fmt::format("{}<code>{}</code> ({} build dir{}{})", i ? "; " : "", html_escape(c.label),
                     c.builds, c.builds == 1 ? "" : "s",
                     c.unreadable ? fmt::format(", {} unreadable", c.unreadable) : "");
  }
  h += "</p>\n</header>\n";
  return h;
}

// The counts line: results, one count per status group, duplicates.
std::string counts_list(const Report& report) {
  const std::vector<Row>& rows = report.rows;
  std::string h;
  h += "<ul class=\"counts\" id=\"counts\">";
  // Rows are results (a build dir holds one per runtime and setting), so the count says results:
  // the caches line above counts build dirs.
  h += fmt::format("<li><b>{}</b>results</li>", rows.size());
  // One count per status group of the status table: they add up to the results.
  std::vector<std::string> statuses;
  for (const Row& r : rows) statuses.push_back(r.text("status"));
  const auto counts = count_by_group(statuses);
  for (size_t g = 0; g < kStatusGroups.size(); ++g) {
    const StatusGroup group = kStatusGroups[g];
    if (counts[g] == 0 && group != StatusGroup::Success && group != StatusGroup::Failure) continue;
    h += fmt::format("<li class=\"{0}\"><b>{1}</b>{0}</li>", group_label(group), counts[g]);
  }
  if (report.duplicate_rows) {
    h += fmt::format("<li><b>{}</b>duplicates</li>", report.duplicate_rows);
  }
  h += "</ul>\n";
  if (report.duplicate_rows) {
    h += "<p class=\"note\">A duplicate is a row with the same model (content hash), runtime and "
         "device as an earlier row; every row is kept and marked.</p>\n";
  }

  return h;
}

}  // namespace

std::string to_html(const Report& report, const Provenance& provenance) {
  const std::vector<Row>& rows = report.rows;
  const bool several_caches = report.caches.size() > 1;
  std::string h = page_header(report, provenance);
  h += counts_list(report);

  h += "<section id=\"latency\">\n<h2>Median latency</h2>\n";
  std::string chart = latency_chart_svg(rows, several_caches);
  if (chart.empty()) {
    h += "<p class=\"note\">No successful benchmarks to chart.</p>\n";
  } else {
    h += "<p class=\"note\">Bars: median latency per model and runtime; whiskers: 95% confidence "
         "interval of the median (distribution-free). Hover a bar for its numbers.</p>\n";
    h += chart;
  }
  h += "</section>\n";

  if (const std::string sweeps = sweeps_section(rows); !sweeps.empty()) {
    h += "<section id=\"sweeps\">\n<h2>Sweeps: batch sizes and requests in flight</h2>\n" + sweeps +
         "</section>\n";
  }
  h += "<section id=\"speedup\">\n<h2>Runtime versus runtime</h2>\n" + speedup_section(rows) +
       "</section>\n";
  h += "<section id=\"failures\">\n<h2>Failures by stage</h2>\n" + failures_section(rows) +
       "</section>\n";
  h += "<section id=\"results\">\n<h2>All builds</h2>\n<p class=\"note\">Click a column header to "
       "sort. Columns and units: docs/report.md.</p>\n";
  h += results_table(rows);
  h += "</section>\n";
  h += profiles_section(rows);
  h += "<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return h;
}

}  // namespace turnkey::report
