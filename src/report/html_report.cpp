// The self-contained HTML report. Charts are SVG strings built here; the only script sorts tables
// and marks the page as loaded (data-report-ready on <body>), which the browser test checks.
#include "turnkey/report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "turnkey/common/version.h"
#include "turnkey/engine/status.h"

namespace turnkey::report {

namespace fs = std::filesystem;
using nlohmann::json;

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// Colour-blind-friendly categorical palette (Observable 10).
constexpr const char* kPalette[] = {"#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951",
                                    "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e", "#9498a0"};

std::string fmt_ms(double v) {
  if (!std::isfinite(v)) return "";
  return fmt::format("{:.4g}", v);
}

// Label text cut to `max_chars` code points' worth of bytes (UTF-8 safe), with an ellipsis.
std::string shorten(const std::string& s, size_t max_chars) {
  size_t chars = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (chars == max_chars) break;
      ++chars;
    }
  }
  if (i >= s.size()) return s;
  size_t cut = i;
  // Leave room for the ellipsis: drop one more code point.
  while (cut > 0 && (static_cast<unsigned char>(s[cut - 1]) & 0xC0) == 0x80) --cut;
  if (cut > 0) --cut;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "\u2026";
}

bool is_measured(const Row& r) {
  return is_success(r.text("status")) && std::isfinite(r.number("median_latency_ms")) &&
         r.number("median_latency_ms") >= 0;
}

// A short name per cache for chart labels: the last path component, or the whole label when two
// caches share it.
std::map<std::string, std::string> short_cache_names(const std::vector<Row>& rows) {
  std::map<std::string, std::set<std::string>> by_short;
  for (const Row& r : rows) {
    std::string label = r.text("cache");
    std::string s = fs::path(label).filename().string();
    by_short[s.empty() ? label : s].insert(label);
  }
  std::map<std::string, std::string> out;
  for (const auto& [s, labels] : by_short) {
    for (const std::string& l : labels) out[l] = labels.size() == 1 ? s : l;
  }
  return out;
}

std::string model_title(const Row& r) {
  std::string name = r.text("model_name");
  std::string build = r.text("build_name");
  if (name.empty()) return build;
  return build.empty() ? name : name + " (" + build + ")";
}

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

Scale make_scale(double vmin, double vmax, double x0, double x1) {
  Scale s;
  s.x0 = x0;
  s.x1 = x1;
  if (vmax <= 0) vmax = 1;
  if (vmin > 0 && vmax / vmin > 30) {
    s.log = true;
    s.lo = std::pow(10, std::floor(std::log10(vmin)));
    s.hi = std::pow(10, std::ceil(std::log10(vmax)));
    if (s.hi <= s.lo) s.hi = s.lo * 10;
    return s;
  }
  double raw = vmax / 5;
  double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = raw / mag <= 1   ? mag
                : raw / mag <= 2 ? 2 * mag
                : raw / mag <= 5 ? 5 * mag
                                 : 10 * mag;
  s.lo = 0;
  s.hi = std::ceil(vmax / step - 1e-9) * step;
  if (s.hi <= 0) s.hi = step;
  return s;
}

// Rows with a median, grouped by model (first appearance order), then runtime, then cache order.
std::vector<const Row*> chart_rows(const std::vector<Row>& rows) {
  std::vector<const Row*> out;
  std::map<std::string, size_t> group_order;
  for (const Row& r : rows) {
    if (!is_measured(r)) continue;
    group_order.emplace(r.model_key() + "|" + r.text("device"), group_order.size());
    out.push_back(&r);
  }
  std::stable_sort(out.begin(), out.end(), [&](const Row* a, const Row* b) {
    size_t ga = group_order[a->model_key() + "|" + a->text("device")];
    size_t gb = group_order[b->model_key() + "|" + b->text("device")];
    if (ga != gb) return ga < gb;
    return a->text("runtime") < b->text("runtime");
  });
  return out;
}

std::map<std::string, std::string> runtime_colours(const std::vector<Row>& rows) {
  std::set<std::string> runtimes;
  for (const Row& r : rows) {
    if (is_measured(r)) runtimes.insert(r.text("runtime"));
  }
  std::map<std::string, std::string> out;
  size_t i = 0;
  for (const std::string& rt : runtimes) out[rt] = kPalette[i++ % std::size(kPalette)];
  return out;
}

}  // namespace

int latency_chart_bar_count(const std::vector<Row>& rows) {
  return static_cast<int>(chart_rows(rows).size());
}

std::string latency_chart_svg(const std::vector<Row>& rows, bool several_caches) {
  std::vector<const Row*> items = chart_rows(rows);
  if (items.empty()) return "";
  auto colours = runtime_colours(rows);
  auto cache_names = short_cache_names(rows);

  const double width = 1100, label_w = 360, value_w = 120, top = 44, pitch = 22, bar_h = 14,
               group_gap = 10;
  double vmin = INFINITY, vmax = 0;
  for (const Row* r : items) {
    double m = r->number("median_latency_ms");
    double lo = r->number("median_ci_low_ms"), hi = r->number("median_ci_high_ms");
    double low = std::isfinite(lo) && lo > 0 ? std::min(lo, m) : m;
    if (low > 0) vmin = std::min(vmin, low);
    vmax = std::max({vmax, m, std::isfinite(hi) ? hi : 0.0});
  }
  if (!std::isfinite(vmin)) vmin = vmax;
  Scale sc = make_scale(vmin, vmax, label_w, width - value_w);

  // Vertical positions: a gap between models.
  std::vector<double> ys;
  double y = top;
  std::string prev_group;
  for (const Row* r : items) {
    std::string g = r->model_key() + "|" + r->text("device");
    if (!prev_group.empty() && g != prev_group) y += group_gap;
    prev_group = g;
    ys.push_back(y);
    y += pitch;
  }
  const double height = y + 12;

  std::string svg = fmt::format(
      "<svg class=\"chart\" id=\"latency-chart\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" "
      "height=\"{1}\" role=\"img\" aria-label=\"Median latency per model and runtime\">\n",
      width, height);
  // Legend: one swatch per runtime.
  double lx = label_w;
  for (const auto& [rt, colour] : colours) {
    svg += fmt::format(
        "<rect class=\"legend-swatch\" x=\"{}\" y=\"4\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text class=\"legend\" x=\"{}\" y=\"14\">{}</text>\n",
        lx, colour, lx + 16, html_escape(rt));
    lx += 24 + 8.0 * static_cast<double>(rt.size()) + 16;
  }
  svg += fmt::format(
      "<text class=\"axis-title\" x=\"{}\" y=\"14\" text-anchor=\"end\">"
      "median latency, ms ({} scale)</text>\n",
      width - 4, sc.log ? "log" : "linear");
  for (double t : sc.ticks()) {
    double tx = sc.x(t);
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>"
        "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        tx, top - 6, height - 8, top - 10, html_escape(fmt::format("{:g}", t)));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const Row& r = *items[i];
    const double yy = ys[i];
    const double m = r.number("median_latency_ms");
    const double lo = r.number("median_ci_low_ms"), hi = r.number("median_ci_high_ms");
    std::string label = r.text("build_name") + " \u00b7 " + r.text("runtime");
    if (several_caches) label += " \u00b7 " + cache_names[r.text("cache")];
    std::string tip = fmt::format("{} on {} {}: median {} ms", model_title(r), r.text("runtime"),
                                  r.text("device"), fmt_ms(m));
    if (std::isfinite(lo) && std::isfinite(hi)) {
      tip += fmt::format(" [95% CI {}, {}]", fmt_ms(lo), fmt_ms(hi));
    }
    if (several_caches) tip += " \u2014 cache " + r.text("cache");
    const double bx = sc.x(m);
    svg += fmt::format(
        "<text class=\"bar-label\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}"
        "<title>{}</title></text>\n",
        label_w - 8, yy + bar_h - 3, html_escape(shorten(label, 52)), html_escape(label));
    svg += fmt::format(
        "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" "
        "data-runtime=\"{}\" data-build=\"{}\"><title>{}</title></rect>\n",
        sc.x0, yy, std::max(bx - sc.x0, 1.0), bar_h, colours[r.text("runtime")],
        html_escape(r.text("runtime")), html_escape(r.text("build_name")), html_escape(tip));
    double text_x = bx;
    if (std::isfinite(lo) && std::isfinite(hi) && hi >= lo) {
      const double wl = sc.x(lo), wh = sc.x(hi), cy = yy + bar_h / 2;
      svg += fmt::format(
          "<g class=\"whisker\"><line x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{1:.1f}\" y2=\"{2:.1f}\"/>"
          "<line x1=\"{0:.1f}\" y1=\"{3:.1f}\" x2=\"{0:.1f}\" y2=\"{4:.1f}\"/>"
          "<line x1=\"{1:.1f}\" y1=\"{3:.1f}\" x2=\"{1:.1f}\" y2=\"{4:.1f}\"/></g>\n",
          wl, wh, cy, cy - 4, cy + 4);
      text_x = std::max(text_x, wh);
    }
    svg += fmt::format("<text class=\"value\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", text_x + 6,
                       yy + bar_h - 3, html_escape(fmt_ms(m)));
  }
  svg += "</svg>\n";
  return svg;
}

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
td.error { white-space: normal; min-width: 300px; max-width: 520px; overflow-wrap: anywhere;
           color: #7a2e24; }
.status { padding: 1px 6px; border-radius: 8px; font-size: 11.5px; white-space: nowrap; }
.status-successful { background: #e3f4e8; color: #1e6b37; }
.status-failed, .status-unreadable { background: #fbe4e1; color: #9b2c1f; }
.status-incomplete { background: #fdf1d8; color: #7a5300; }
.dup { font-size: 10.5px; background: #eceff4; color: var(--muted); border-radius: 6px; padding: 0 5px;
       margin-left: 4px; }
table.matrix td.cell { text-align: right; font-variant-numeric: tabular-nums; }
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

std::string td_text(const std::string& v, const char* cls = nullptr) {
  return fmt::format("<td{} data-v=\"{}\">{}</td>", cls ? fmt::format(" class=\"{}\"", cls) : "",
                     html_escape(v), html_escape(v));
}

std::string td_num(double v, const std::string& shown) {
  if (!std::isfinite(v)) return "<td class=\"num\"></td>";
  return fmt::format("<td class=\"num\" data-v=\"{}\">{}</td>", fmt::format("{}", v),
                     html_escape(shown));
}

std::string status_badge(const std::string& status) {
  std::string cls = status;
  for (char& c : cls) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
  }
  return fmt::format("<span class=\"status status-{}\">{}</span>", html_escape(cls),
                     html_escape(status));
}

std::string results_table(const std::vector<Row>& rows) {
  struct Col {
    const char* title;
    bool num;
  };
  const std::vector<Col> cols = {
      {"cache", false},        {"build", false},      {"model", false},
      {"class", false},        {"runtime", false},    {"device", false},
      {"iterations", true},    {"median ms", true},   {"95% CI of median ms", false},
      {"mean ms", true},       {"p90 ms", true},      {"p99 ms", true},
      {"throughput /s", true}, {"parameters", true},  {"status", false},
      {"correctness", false},  {"last stage", false}, {"error", false}};
  std::string h =
      "<div class=\"table-wrap\"><table id=\"results-table\" class=\"sortable\" "
      "data-initial-sort=\"1\">\n<thead><tr>";
  for (const Col& c : cols) {
    h += fmt::format("<th scope=\"col\"{}>{}</th>", c.num ? " class=\"num\" data-type=\"num\"" : "",
                     html_escape(c.title));
  }
  h += "</tr></thead>\n<tbody>\n";
  for (const Row& r : rows) {
    std::string build = html_escape(r.text("build_name"));
    if (r.has("duplicate_of")) {
      build += fmt::format(
          "<span class=\"dup\" title=\"same model, runtime and device as {}\">"
          "duplicate</span>",
          html_escape(r.text("duplicate_of")));
    }
    h += "<tr>";
    h += td_text(r.text("cache"));
    h += fmt::format("<td data-v=\"{}\">{}</td>", html_escape(r.text("build_name")), build);
    h += td_text(r.text("model_name"));
    h += td_text(r.text("class"));
    h += td_text(r.text("runtime"));
    h += td_text(r.text("device"));
    h += td_num(r.number("iterations"), cell_text(r.cells.value("iterations", json())));
    h += td_num(r.number("median_latency_ms"), fmt_ms(r.number("median_latency_ms")));
    double lo = r.number("median_ci_low_ms"), hi = r.number("median_ci_high_ms");
    std::string ci = std::isfinite(lo) && std::isfinite(hi)
                         ? fmt::format("{} \u2013 {}", fmt_ms(lo), fmt_ms(hi))
                         : "";
    h += fmt::format("<td class=\"num\" data-v=\"{}\">{}</td>", html_escape(ci), html_escape(ci));
    h += td_num(r.number("mean_latency_ms"), fmt_ms(r.number("mean_latency_ms")));
    h += td_num(r.number("p90_latency_ms"), fmt_ms(r.number("p90_latency_ms")));
    h += td_num(r.number("p99_latency_ms"), fmt_ms(r.number("p99_latency_ms")));
    double tp = r.number("throughput_ips");
    h += td_num(tp, std::isfinite(tp) ? fmt::format("{:.1f}", tp) : "");
    h += td_num(r.number("parameters"), cell_text(r.cells.value("parameters", json())));
    h += fmt::format("<td data-v=\"{}\">{}</td>", html_escape(r.text("status")),
                     status_badge(r.text("status")));
    h += td_text(r.text("correctness"));
    h += td_text(r.text("last_stage"));
    h += td_text(r.text("error"), "error");
    h += "</tr>\n";
  }
  h += "</tbody></table></div>\n";
  return h;
}

std::string speedup_section(const std::vector<Row>& rows) {
  // Primary measurement per (model, device, runtime): the first row, duplicates left out.
  struct Model {
    std::string title, device;
    std::map<std::string, double> median;  // runtime -> ms
  };
  std::vector<Model> models;
  std::map<std::string, size_t> index;
  std::set<std::string> runtimes;
  for (const Row& r : rows) {
    if (!is_measured(r) || r.has("duplicate_of")) continue;
    std::string key = r.model_key() + "|" + r.text("device");
    auto [it, inserted] = index.emplace(key, models.size());
    if (inserted) models.push_back({model_title(r), r.text("device"), {}});
    models[it->second].median.emplace(r.text("runtime"), r.number("median_latency_ms"));
    runtimes.insert(r.text("runtime"));
  }
  std::string h;
  if (runtimes.empty()) return "<p class=\"note\">No successful benchmarks in this report.</p>\n";
  if (runtimes.size() == 1) {
    return fmt::format(
        "<p class=\"note\" id=\"speedup-none\">Only one runtime (<b>{}</b>) in this report: no "
        "runtime-versus-runtime comparison. Benchmark the same models with another runtime and "
        "report both caches together to see one.</p>\n",
        html_escape(*runtimes.begin()));
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  for (auto a = runtimes.begin(); a != runtimes.end(); ++a) {
    for (auto b = std::next(a); b != runtimes.end(); ++b) pairs.emplace_back(*a, *b);
  }
  bool several_devices = false;
  for (const Model& m : models) several_devices |= m.device != models.front().device;
  h += "<p class=\"note\">Each cell is median(<i>first</i>) \u00f7 median(<i>second</i>) for one "
       "model: above 1 the second runtime is faster. Green: at least 5% faster; red: at least 5% "
       "slower. Medians only; use <code>turnkey compare</code> for a significance test.</p>\n";
  h += "<div class=\"table-wrap\"><table id=\"speedup-matrix\" class=\"matrix sortable\">\n"
       "<thead><tr><th scope=\"col\">model</th>";
  for (const auto& [a, b] : pairs) {
    h += fmt::format("<th scope=\"col\" class=\"num\" data-type=\"num\">{} \u00f7 {}</th>",
                     html_escape(a), html_escape(b));
  }
  h += "</tr></thead>\n<tbody>\n";
  std::vector<std::vector<double>> logs(pairs.size());
  int shown = 0;
  for (const Model& m : models) {
    std::string cells;
    bool any = false;
    for (size_t p = 0; p < pairs.size(); ++p) {
      auto ia = m.median.find(pairs[p].first), ib = m.median.find(pairs[p].second);
      if (ia == m.median.end() || ib == m.median.end() || ib->second <= 0 || ia->second <= 0) {
        cells += "<td class=\"cell num\"></td>";
        continue;
      }
      any = true;
      double ratio = ia->second / ib->second;
      logs[p].push_back(std::log(ratio));
      const char* cls = ratio >= 1.05 ? " faster" : ratio <= 1 / 1.05 ? " slower" : "";
      cells += fmt::format("<td class=\"cell num{}\" data-v=\"{}\">{:.2f}\u00d7</td>", cls, ratio,
                           ratio);
    }
    if (!any) continue;
    ++shown;
    std::string title = m.title + (several_devices ? " [" + m.device + "]" : "");
    h += fmt::format("<tr><td data-v=\"{0}\">{0}</td>{1}</tr>\n", html_escape(title), cells);
  }
  h += "</tbody><tfoot><tr><th scope=\"row\">geometric mean</th>";
  for (const auto& l : logs) {
    if (l.empty()) {
      h += "<td class=\"cell num\"></td>";
      continue;
    }
    double s = 0;
    for (double v : l) s += v;
    h += fmt::format(
        "<td class=\"cell num\"><b>{:.2f}\u00d7</b> <span class=\"note\">({} "
        "models)</span></td>",
        std::exp(s / static_cast<double>(l.size())), l.size());
  }
  h += "</tr></tfoot></table></div>\n";
  int single = static_cast<int>(models.size()) - shown;
  if (single > 0) {
    h += fmt::format(
        "<p class=\"note\">{} model(s) ran on only one runtime and are not in the "
        "matrix.</p>\n",
        single);
  }
  return h;
}

std::string failures_section(const std::vector<Row>& rows) {
  std::map<std::string, int> by_stage;
  std::vector<const Row*> failed;
  for (const Row& r : rows) {
    if (is_success(r.text("status"))) continue;
    failed.push_back(&r);
    std::string stage = r.text("status") == "unreadable"
                            ? "(unreadable)"
                            : (r.has("last_stage") ? r.text("last_stage") : "(unknown)");
    ++by_stage[stage];
  }
  if (failed.empty()) return "<p class=\"note\" id=\"no-failures\">No failed builds.</p>\n";
  std::vector<std::pair<std::string, int>> stages(by_stage.begin(), by_stage.end());
  std::stable_sort(stages.begin(), stages.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  int max_count = stages.front().second;
  const double label_w = 180, bar_max = 520, pitch = 24, top = 8;
  const double height = top + pitch * static_cast<double>(stages.size()) + 6;
  std::string h = fmt::format(
      "<svg class=\"chart\" id=\"failure-chart\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" "
      "height=\"{1}\" role=\"img\" aria-label=\"Failed builds by stage\">\n",
      label_w + bar_max + 60, height);
  double y = top;
  for (const auto& [stage, n] : stages) {
    double w = bar_max * n / max_count;
    h += fmt::format(
        "<text class=\"bar-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>"
        "<rect class=\"fail-bar\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"16\" "
        "fill=\"#d1495b\">"
        "<title>{}: {} build(s)</title></rect>"
        "<text class=\"value\" x=\"{:.1f}\" y=\"{}\">{}</text>\n",
        label_w - 8, y + 12, html_escape(shorten(stage, 24)), label_w, y, std::max(w, 1.0),
        html_escape(stage), n, label_w + w + 6, y + 12, n);
    y += pitch;
  }
  h += "</svg>\n";
  h += "<div class=\"table-wrap\"><table id=\"failures-table\" class=\"sortable\">\n<thead><tr>"
       "<th scope=\"col\">cache</th><th scope=\"col\">build</th><th scope=\"col\">model</th>"
       "<th scope=\"col\">status</th><th scope=\"col\">stage</th><th scope=\"col\">error</th>"
       "</tr></thead>\n<tbody>\n";
  for (const Row* r : failed) {
    h += "<tr>" + td_text(r->text("cache")) + td_text(r->text("build_name")) +
         td_text(r->text("model_name")) +
         fmt::format("<td data-v=\"{}\">{}</td>", html_escape(r->text("status")),
                     status_badge(r->text("status"))) +
         td_text(r->text("last_stage")) + td_text(r->text("error"), "error") + "</tr>\n";
  }
  h += "</tbody></table></div>\n";
  return h;
}

}  // namespace

std::string to_html(const Report& report, const Provenance& provenance) {
  const std::vector<Row>& rows = report.rows;
  const bool several_caches = report.caches.size() > 1;
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
    h += fmt::format("{}<code>{}</code> ({} builds{})", i ? "; " : "", html_escape(c.label),
                     c.builds, c.unreadable ? fmt::format(", {} unreadable", c.unreadable) : "");
  }
  h += "</p>\n</header>\n";

  h += "<ul class=\"counts\" id=\"counts\">";
  h += fmt::format("<li><b>{}</b>builds</li>", rows.size());
  // One count per status group of the status table: they add up to the builds.
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

  h += "<section id=\"speedup\">\n<h2>Runtime versus runtime</h2>\n" + speedup_section(rows) +
       "</section>\n";
  h += "<section id=\"failures\">\n<h2>Failures by stage</h2>\n" + failures_section(rows) +
       "</section>\n";
  h += "<section id=\"results\">\n<h2>All builds</h2>\n<p class=\"note\">Click a column header to "
       "sort. Columns and units: docs/report.md.</p>\n";
  h += results_table(rows);
  h += "</section>\n";
  h += "<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return h;
}

}  // namespace turnkey::report
