// The latency chart of the HTML report: inline SVG bars of the median with 95% CI whiskers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "html_parts.h"

namespace turnkey::report {

namespace fs = std::filesystem;

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

namespace html {

std::string fmt_ms(double v) {
  if (!std::isfinite(v)) return "";
  return fmt::format("{:.4g}", v);
}

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
  return r.successful() && std::isfinite(r.number("median_latency_ms")) &&
         r.number("median_latency_ms") >= 0;
}

std::string model_title(const Row& r) {
  std::string name = r.text("model_name");
  std::string build = r.text("build_name");
  if (name.empty()) return build;
  return build.empty() ? name : name + " (" + build + ")";
}

// µs below 1 ms, s from 10 s, else ms: the largest value drawn has 1-4 digits before the point.
ChartUnit chart_unit(double vmax_ms) {
  if (vmax_ms < 1) return {"\u00b5s", 1000};
  if (vmax_ms >= 10000) return {"s", 0.001};
  return {"ms", 1};
}

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

}  // namespace html

namespace {

using namespace html;

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

using namespace html;

int latency_chart_bar_count(const std::vector<Row>& rows) {
  return static_cast<int>(chart_rows(rows).size());
}

namespace {

constexpr double kChartWidth = 1100, kLabelW = 360, kValueW = 120, kTop = 44, kPitch = 22,
                 kBarH = 14, kGroupGap = 10;

// Where the bars go: the axis (its unit fits the numbers: a 1.3 µs model is drawn on a µs axis,
// not at 0.0013 ms), each bar's height with a gap between models, the runtimes' colours.
struct ChartFrame {
  ChartUnit unit;
  Scale sc;
  std::vector<double> ys;
  double height = 0;
  std::map<std::string, std::string> colours, cache_names;

  std::string in_unit(double ms) const { return fmt_ms(ms * unit.per_ms) + " " + unit.name; }
  static std::string of(const std::map<std::string, std::string>& m, const std::string& key) {
    auto it = m.find(key);
    return it == m.end() ? "" : it->second;
  }
};

ChartFrame chart_frame(const std::vector<const Row*>& items, const std::vector<Row>& rows) {
  double vmin = INFINITY, vmax = 0;
  for (const Row* r : items) {
    double m = r->number("median_latency_ms");
    double lo = r->number("median_ci_low_ms"), hi = r->number("median_ci_high_ms");
    double low = std::isfinite(lo) && lo > 0 ? std::min(lo, m) : m;
    if (low > 0) vmin = std::min(vmin, low);
    vmax = std::max({vmax, m, std::isfinite(hi) ? hi : 0.0});
  }
  if (!std::isfinite(vmin)) vmin = vmax;
  const ChartUnit unit = chart_unit(vmax);
  ChartFrame f{unit,
               make_scale(vmin * unit.per_ms, vmax * unit.per_ms, kLabelW, kChartWidth - kValueW),
               {}, 0, {}, {}};
  double y = kTop;
  std::string prev_group;
  for (const Row* r : items) {
    std::string g = r->model_key() + "|" + r->text("device");
    if (!prev_group.empty() && g != prev_group) y += kGroupGap;
    prev_group = g;
    f.ys.push_back(y);
    y += kPitch;
  }
  f.height = y + 12;
  for (const auto& [rt, colour] : runtime_colours(rows)) f.colours[rt] = colour;
  for (const auto& [cache, name] : short_cache_names(rows)) f.cache_names[cache] = name;
  return f;
}

// The legend (one swatch per runtime), the axis title and the ticks with their grid lines.
std::string chart_axes(const ChartFrame& f) {
  std::string svg;
  double lx = kLabelW;
  for (const auto& [rt, colour] : f.colours) {
    svg += fmt::format(
        "<rect class=\"legend-swatch\" x=\"{}\" y=\"4\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text class=\"legend\" x=\"{}\" y=\"14\">{}</text>\n",
        lx, colour, lx + 16, html_escape(rt));
    lx += 24 + 8.0 * static_cast<double>(rt.size()) + 16;
  }
  svg += fmt::format(
      "<text class=\"axis-title\" x=\"{}\" y=\"14\" text-anchor=\"end\">"
      "median latency, {} ({} scale)</text>\n",
      kChartWidth - 4, f.unit.name, f.sc.log ? "log" : "linear");
  for (double t : f.sc.ticks()) {
    double tx = f.sc.x(t);
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>"
        "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        tx, kTop - 6, f.height - 8, kTop - 10, html_escape(fmt::format("{:g}", t)));
  }
  return svg;
}

// One result's bar: its label (build, runtime, cache, settings), the bar with its tooltip, the
// 95% CI whisker and the value.
std::string chart_bar(const ChartFrame& f, const Row& r, double yy, bool several_caches) {
  const double m = r.number("median_latency_ms");
  const double lo = r.number("median_ci_low_ms"), hi = r.number("median_ci_high_ms");
  std::string label = r.text("build_name") + " \u00b7 " + r.text("runtime");
  if (several_caches) label += " \u00b7 " + ChartFrame::of(f.cache_names, r.text("cache"));
  std::string tip = fmt::format("{} on {} {}: median {}", model_title(r), r.text("runtime"),
                                r.text("device"), f.in_unit(m));
  if (std::isfinite(lo) && std::isfinite(hi)) {
    tip += fmt::format(" [95% CI {}, {}]", f.in_unit(lo), f.in_unit(hi));
  }
  if (several_caches) tip += " \u2014 cache " + r.text("cache");
  // Results of one build on one runtime differ by their settings (shapes, sequence, ...).
  if (!r.settings().empty()) {
    label += " \u00b7 " + r.settings();
    tip += " \u2014 " + r.settings();
  }
  const double bx = f.sc.x(m * f.unit.per_ms);
  std::string svg = fmt::format(
      "<text class=\"bar-label\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}"
      "<title>{}</title></text>\n",
      kLabelW - 8, yy + kBarH - 3, html_escape(shorten(label, 52)), html_escape(label));
  svg += fmt::format(
      "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" "
      "data-runtime=\"{}\" data-build=\"{}\"><title>{}</title></rect>\n",
      f.sc.x0, yy, std::max(bx - f.sc.x0, 1.0), kBarH, ChartFrame::of(f.colours, r.text("runtime")),
      html_escape(r.text("runtime")), html_escape(r.text("build_name")), html_escape(tip));
  double text_x = bx;
  if (std::isfinite(lo) && std::isfinite(hi) && hi >= lo) {
    const double wl = f.sc.x(lo * f.unit.per_ms), wh = f.sc.x(hi * f.unit.per_ms),
                 cy = yy + kBarH / 2;
    svg += fmt::format(
        "<g class=\"whisker\"><line x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{1:.1f}\" y2=\"{2:.1f}\"/>"
        "<line x1=\"{0:.1f}\" y1=\"{3:.1f}\" x2=\"{0:.1f}\" y2=\"{4:.1f}\"/>"
        "<line x1=\"{1:.1f}\" y1=\"{3:.1f}\" x2=\"{1:.1f}\" y2=\"{4:.1f}\"/></g>\n",
        wl, wh, cy, cy - 4, cy + 4);
    text_x = std::max(text_x, wh);
  }
  svg += fmt::format("<text class=\"value\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", text_x + 6,
                     yy + kBarH - 3, html_escape(f.in_unit(m)));
  return svg;
}

}  // namespace

std::string latency_chart_svg(const std::vector<Row>& rows, bool several_caches) {
  std::vector<const Row*> items = chart_rows(rows);
  if (items.empty()) return "";
  const ChartFrame f = chart_frame(items, rows);
  std::string svg = fmt::format(
      "<svg class=\"chart\" id=\"latency-chart\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" "
      "height=\"{1}\" role=\"img\" aria-label=\"Median latency per model and runtime\">\n",
      kChartWidth, f.height);
  svg += chart_axes(f);
  for (size_t i = 0; i < items.size(); ++i) svg += chart_bar(f, *items[i], f.ys[i], several_caches);
  svg += "</svg>\n";
  return svg;
}

}  // namespace turnkey::report
