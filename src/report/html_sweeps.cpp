// The HTML report's sweeps: results of one model on one runtime that differ by batch size,
// requests in flight (concurrency) or input shapes, shown together as a table and a chart of
// sustained throughput against median latency (docs/report.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "html_parts.h"

namespace turnkey::report::html {

namespace {

// What one series has in common: the cache, the model (a script's model by script, name and
// class, since each batch size is a model of its own; an ONNX file by its hash), the runtime,
// device, build sequence and pinning.
std::string series_key(const Row& r) {
  const std::string model =
      r.text("script").empty()
          ? "hash:" + r.model_key()
          : r.text("script") + "|" + r.text("model_name") + "|" + r.text("class");
  return fmt::format("{}|{}|{}|{}|{}|{}", r.text("cache"), model, r.text("runtime"),
                     r.text("device"), r.text("sequence"), r.text("pinned_cpus"));
}

double cell_or(const Row& r, const char* column, double fallback) {
  const double v = r.number(column);
  return std::isfinite(v) ? v : fallback;
}

// "b4 c2": the point's batch and concurrency, short, for the chart's labels.
std::string point_label(const Row& r) {
  return fmt::format("b{} c{}", static_cast<long long>(cell_or(r, "batch_size", 1)),
                     static_cast<long long>(cell_or(r, "concurrency", 1)));
}

// An axis number with an SI suffix: 1500000 -> "1.5M", 2000 -> "2k".
std::string si(double v) {
  if (std::abs(v) >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (std::abs(v) >= 1e3) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

struct Series {
  std::string title;
  std::vector<const Row*> rows;  // by batch, then concurrency, then shapes
  bool concurrency_varies = false;
};

std::vector<Series> sweep_series(const std::vector<Row>& rows) {
  std::vector<std::string> order;
  std::map<std::string, Series> by_key;
  for (const Row& r : rows) {
    if (!is_measured(r) || !std::isfinite(r.number("throughput_ips"))) continue;
    const std::string key = series_key(r);
    if (!by_key.count(key)) {
      order.push_back(key);
      by_key[key].title = fmt::format(
          "{} on {} {}", r.text("model_name").empty() ? r.text("build_name") : r.text("model_name"),
          r.text("runtime"), r.text("device"));
    }
    by_key[key].rows.push_back(&r);
  }
  std::vector<Series> out;
  for (const std::string& key : order) {
    Series& s = by_key[key];
    std::set<std::tuple<double, double, std::string>> points;
    std::set<double> concurrencies;
    for (const Row* r : s.rows) {
      points.insert(
          {cell_or(*r, "batch_size", 1), cell_or(*r, "concurrency", 1), r->text("input_shapes")});
      concurrencies.insert(cell_or(*r, "concurrency", 1));
    }
    if (points.size() < 2) continue;  // one point: nothing swept
    s.concurrency_varies = concurrencies.size() > 1;
    std::stable_sort(s.rows.begin(), s.rows.end(), [](const Row* a, const Row* b) {
      return std::make_tuple(cell_or(*a, "batch_size", 1), cell_or(*a, "concurrency", 1),
                             a->text("input_shapes")) <
             std::make_tuple(cell_or(*b, "batch_size", 1), cell_or(*b, "concurrency", 1),
                             b->text("input_shapes"));
    });
    out.push_back(std::move(s));
  }
  return out;
}

std::string series_table(const Series& s) {
  std::string h =
      "<div class=\"table-wrap\"><table class=\"sweep\"><thead><tr><th>point</th>"
      "<th class=\"num\">batch</th><th class=\"num\">concurrency</th>"
      "<th class=\"num\">threads per request</th><th class=\"num\">sessions</th>"
      "<th>input shapes</th><th class=\"num\">median ms</th><th class=\"num\">p99 ms</th>"
      "<th class=\"num\">throughput IPS</th><th class=\"num\">load s</th><th>build</th>"
      "</tr></thead><tbody>\n";
  for (const Row* r : s.rows) {
    auto num = [&](const char* column, const std::string& shown) {
      return td_num(r->number(column), shown);
    };
    auto integer = [&](const char* column) {
      const double v = r->number(column);
      return num(column, std::isfinite(v) ? fmt::format("{}", static_cast<long long>(v)) : "");
    };
    h += "<tr>" + td_text(point_label(*r)) + integer("batch_size") + integer("concurrency") +
         integer("threads") + integer("sessions") + td_text(r->text("input_shapes"), "wrap") +
         num("median_latency_ms", fmt_ms(r->number("median_latency_ms"))) +
         num("p99_latency_ms", fmt_ms(r->number("p99_latency_ms"))) +
         num("throughput_ips", fmt::format("{:.1f}", r->number("throughput_ips"))) +
         num("load_s", fmt_ms(r->number("load_s"))) + td_text(r->text("build_name"), "wrap") +
         "</tr>\n";
  }
  return h + "</tbody></table></div>\n";
}

// Throughput (y) against median latency (x), a dot per point, lines joining the points of one
// batch as concurrency grows (or every point in batch order when only the batch varies).
std::string series_chart(const Series& s, size_t index) {
  const double width = 640, height = 300, left = 70, right = 20, top = 20, bottom = 44;
  double xmax = 0, ymax = 0;
  for (const Row* r : s.rows) {
    xmax = std::max(xmax, r->number("median_latency_ms"));
    ymax = std::max(ymax, r->number("throughput_ips"));
  }
  const ChartUnit unit = chart_unit(xmax);
  const Scale xs = make_scale(0, xmax * unit.per_ms * 1.08, left, width - right);
  const Scale ys = make_scale(0, ymax * 1.08, height - bottom, top);
  std::string svg = fmt::format(
      "<svg class=\"chart sweep-chart\" id=\"sweep-chart-{0}\" viewBox=\"0 0 {1} {2}\" "
      "width=\"{1}\" height=\"{2}\" role=\"img\" aria-label=\"Throughput against latency: {3}\">\n",
      index, width, height, html_escape(s.title));
  for (double t : xs.ticks()) {
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>"
        "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        xs.x(t), top, height - bottom, height - bottom + 14, html_escape(fmt::format("{:g}", t)));
  }
  for (double t : ys.ticks()) {
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/>"
        "<text class=\"tick\" x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        left, ys.x(t), width - right, left - 6, ys.x(t) + 4, html_escape(si(t)));
  }
  svg += fmt::format(
      "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">median latency, {}"
      "</text>\n<text class=\"axis-title\" x=\"14\" y=\"{}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 14 {})\">throughput, inferences/s</text>\n",
      (left + width - right) / 2, height - 8, unit.name, (top + height - bottom) / 2,
      (top + height - bottom) / 2);
  // Lines: one per batch (and shapes) when concurrency varies, else one through every point.
  std::map<std::string, std::vector<const Row*>> lines;
  std::vector<std::string> line_order;
  for (const Row* r : s.rows) {
    const std::string key =
        s.concurrency_varies
            ? fmt::format("batch {} {}", cell_or(*r, "batch_size", 1), r->text("input_shapes"))
            : "";
    if (!lines.count(key)) line_order.push_back(key);
    lines[key].push_back(r);
  }
  for (size_t i = 0; i < line_order.size(); ++i) {
    const auto& points = lines[line_order[i]];
    const char* colour = kPalette[i % std::size(kPalette)];
    std::string path;
    for (const Row* r : points) {
      path += fmt::format("{:.1f},{:.1f} ", xs.x(r->number("median_latency_ms") * unit.per_ms),
                          ys.x(r->number("throughput_ips")));
    }
    svg += fmt::format(
        "<polyline class=\"sweep-line\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"1.5\"/>\n",
        path, colour);
    for (const Row* r : points) {
      const double px = xs.x(r->number("median_latency_ms") * unit.per_ms);
      const double py = ys.x(r->number("throughput_ips"));
      const std::string tip =
          fmt::format("{}: batch {}, concurrency {}{}: median {} {}, {:.1f} inferences/s", s.title,
                      static_cast<long long>(cell_or(*r, "batch_size", 1)),
                      static_cast<long long>(cell_or(*r, "concurrency", 1)),
                      r->text("input_shapes").empty() ? "" : ", " + r->text("input_shapes"),
                      fmt_ms(r->number("median_latency_ms") * unit.per_ms), unit.name,
                      r->number("throughput_ips"));
      svg += fmt::format(
          "<circle class=\"sweep-point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" "
          "data-build=\"{}\"><title>{}</title></circle>"
          "<text class=\"value\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
          px, py, colour, html_escape(r->text("build_name")), html_escape(tip), px + 6, py - 6,
          html_escape(point_label(*r)));
    }
  }
  return svg + "</svg>\n";
}

}  // namespace

std::string sweeps_section(const std::vector<Row>& rows) {
  const std::vector<Series> series = sweep_series(rows);
  if (series.empty()) return "";
  std::string h =
      "<p class=\"note\">Results of one model and runtime that differ by batch size (b), "
      "requests in flight (c, --concurrency) or input shapes. Throughput at concurrency above 1 "
      "is sustained: calls in the timed window (parts of calls counted) per second, times the "
      "batch.</p>\n";
  for (size_t i = 0; i < series.size(); ++i) {
    h += fmt::format("<h3>{}</h3>\n", html_escape(series[i].title));
    h += series_chart(series[i], i) + series_table(series[i]);
  }
  return h;
}

}  // namespace turnkey::report::html
