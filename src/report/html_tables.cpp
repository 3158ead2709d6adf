// The HTML report's tables: results (columns from the field table), runtime-versus-runtime
// speedups, failures.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "html_parts.h"
#include "turnkey/catalog/status.h"

namespace turnkey::report::html {

using nlohmann::json;

std::string td_text(const std::string& v, const char* cls) {
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

namespace {

// The results table shows these report columns (fields.h), in this order; "median_ci" is the
// median's 95% CI from its two columns. Each cell is rendered by its column's type. What a reader
// needs first comes first, so that it is in view at 1280 px without scrolling (the browser test
// checks): which build and runtime, its status and verdict, the median, the flags that say
// whether to trust it, and the settings it ran with; the rest scrolls.
// clang-format off
constexpr const char* kResultColumns[] = {
    "build_name", "runtime", "status", "correctness", "median_latency_ms", "measurement_flags",
    "sequence", "threads",
    "median_ci", "model_name", "device", "input_shapes", "iterations", "mean_latency_ms",
    "p90_latency_ms", "p99_latency_ms", "throughput_ips", "concurrency", "batch_size", "load_s",
    "parameters", "runs", "class",
    "last_stage", "error", "cache"};
// clang-format on

// Text columns whose cells wrap within a bounded width (long values would push the rest away).
bool wraps(const std::string& name) {
  return name == "build_name" || name == "measurement_flags" || name == "sequence" ||
         name == "input_shapes";
}

// "median latency ms" from "median_latency_ms"; "build" for build_name.
std::string column_title(const std::string& name) {
  if (name == "build_name") return "build";
  if (name == "model_name") return "model";
  if (name == "median_ci") return "95% CI of median ms";
  if (name == "throughput_ips") return "throughput /s";
  if (name == "correctness") return "verdict";
  if (name == "measurement_flags") return "flags";
  std::string t = name;
  if (t.ends_with("_latency_ms")) t = t.substr(0, t.size() - 11) + "_ms";
  std::replace(t.begin(), t.end(), '_', ' ');
  return t;
}

const Column* find_column(const std::string& name) {
  for (const Column& c : columns()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string cell(const Row& r, const std::string& name) {
  if (name == "build_name") {
    std::string build = html_escape(r.text("build_name"));
    if (r.has("duplicate_of")) {
      build += fmt::format(
          "<span class=\"dup\" title=\"same model, runtime, device and settings as {}\">"
          "duplicate</span>",
          html_escape(r.text("duplicate_of")));
    }
    return fmt::format("<td class=\"wrap\" data-v=\"{}\">{}</td>",
                       html_escape(r.text("build_name")), build);
  }
  if (name == "status") {
    return fmt::format("<td data-v=\"{}\">{}</td>", html_escape(r.text("status")),
                       status_badge(r.text("status")));
  }
  if (name == "measurement_flags") {
    // Each flag's short label ("machine busy", "noisy"), the full sentences on hover: whole
    // sentences would make every row a dozen lines tall.
    // The stats keep the flags as a list; the row's cell joins them with "; ", which a flag's
    // own text may hold inside parentheses: split only outside them.
    const std::string full = r.text(name);
    std::string labels;
    size_t start = 0;
    while (start < full.size()) {
      size_t end = start;
      for (int depth = 0; end < full.size(); ++end) {
        if (full[end] == '(') ++depth;
        if (full[end] == ')' && depth > 0) --depth;
        if (depth == 0 && full.compare(end, 2, "; ") == 0) break;
      }
      const std::string flag = full.substr(start, end - start);
      if (!labels.empty()) labels += ", ";
      labels += flag.substr(0, flag.find(':'));
      start = end + 2;
    }
    return fmt::format("<td class=\"wrap\" data-v=\"{0}\" title=\"{0}\">{1}</td>",
                       html_escape(full), html_escape(labels));
  }
  if (name == "median_ci") {
    const double lo = r.number("median_ci_low_ms"), hi = r.number("median_ci_high_ms");
    const std::string ci = std::isfinite(lo) && std::isfinite(hi)
                               ? fmt::format("{} \u2013 {}", fmt_ms(lo), fmt_ms(hi))
                               : "";
    return fmt::format("<td class=\"num\" data-v=\"{}\">{}</td>", html_escape(ci), html_escape(ci));
  }
  const Column* c = find_column(name);
  const double v = r.number(name);
  if (c && c->type == CellType::Number) {
    const bool per_second = name == "throughput_ips";
    return td_num(v, !std::isfinite(v) ? "" : per_second ? fmt::format("{:.1f}", v) : fmt_ms(v));
  }
  if (c && c->type == CellType::Integer) return td_num(v, cell_text(r.cells.value(name, json())));
  return td_text(r.text(name), name == "error" ? "error" : wraps(name) ? "wrap" : nullptr);
}

}  // namespace

std::string results_table(const std::vector<Row>& rows) {
  std::string h =
      "<div class=\"table-wrap\"><table id=\"results-table\" class=\"sortable\" "
      "data-initial-sort=\"0\">\n<thead><tr>";
  for (const char* name : kResultColumns) {
    const Column* c = find_column(name);
    const bool num = c && c->type != CellType::Text;
    h += fmt::format("<th scope=\"col\"{}>{}</th>", num ? " class=\"num\" data-type=\"num\"" : "",
                     html_escape(column_title(name)));
  }
  h += "</tr></thead>\n<tbody>\n";
  for (const Row& r : rows) {
    h += "<tr>";
    for (const char* name : kResultColumns) h += cell(r, name);
    h += "</tr>\n";
  }
  h += "</tbody></table></div>\n";
  return h;
}

namespace {

// A model's primary medians per runtime on one device (the first row, duplicates left out).
struct SpeedupModel {
  std::string title, device;
  std::map<std::string, double> median;  // runtime -> ms
};

std::vector<SpeedupModel> speedup_models(const std::vector<Row>& rows,
                                         std::set<std::string>& runtimes) {
  std::vector<SpeedupModel> models;
  std::map<std::string, size_t> index;
  for (const Row& r : rows) {
    if (!is_measured(r) || r.has("duplicate_of")) continue;
    std::string key = r.model_key() + "|" + r.text("device");
    auto [it, inserted] = index.emplace(key, models.size());
    if (inserted) models.push_back({model_title(r), r.text("device"), {}});
    models[it->second].median.emplace(r.text("runtime"), r.number("median_latency_ms"));
    runtimes.insert(r.text("runtime"));
  }
  return models;
}

// The matrix's rows (one per model measured on two runtimes or more) and its geometric means.
std::string speedup_rows(const std::vector<SpeedupModel>& models,
                         const std::vector<std::pair<std::string, std::string>>& pairs,
                         int& shown) {
  bool several_devices = false;
  for (const SpeedupModel& m : models) several_devices |= m.device != models.front().device;
  std::string h;
  std::vector<std::vector<double>> logs(pairs.size());
  for (const SpeedupModel& m : models) {
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
  return h;
}

}  // namespace

std::string speedup_section(const std::vector<Row>& rows) {
  std::set<std::string> runtimes;
  const std::vector<SpeedupModel> models = speedup_models(rows, runtimes);
  if (runtimes.empty()) return "<p class=\"note\">No successful benchmarks in this report.</p>\n";
  if (runtimes.size() == 1) {
    return fmt::format(
        "<p class=\"note\" id=\"speedup-none\">Only one runtime (<b>{}</b>) in this report: no "
        "runtime-versus-runtime comparison. Benchmark the same models with another runtime and "
        "report both caches together to see one.</p>\n",
        html_escape(*runtimes.begin()));
  }
  // Only models measured on two runtimes or more make a row: without one, no matrix at all (an
  // empty table with a blank geometric mean says nothing).
  size_t compared = 0;
  for (const SpeedupModel& m : models) compared += m.median.size() >= 2;
  if (compared == 0) {
    return fmt::format(
        "<p class=\"note\" id=\"speedup-none\">{} runtimes in this report ({}), but no model ran "
        "on two of them: no runtime-versus-runtime comparison.</p>\n",
        runtimes.size(), html_escape(fmt::format("{}", fmt::join(runtimes, ", "))));
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  for (auto a = runtimes.begin(); a != runtimes.end(); ++a) {
    for (auto b = std::next(a); b != runtimes.end(); ++b) {
      // A pair no model ran on both of would be an empty column.
      bool both = false;
      for (const SpeedupModel& m : models) both |= m.median.count(*a) && m.median.count(*b);
      if (both) pairs.emplace_back(*a, *b);
    }
  }
  std::string h =
      "<p class=\"note\">Each cell is median(<i>first</i>) \u00f7 median(<i>second</i>) for one "
      "model: above 1 the second runtime is faster. Green: at least 5% faster; red: at least 5% "
      "slower. Medians only; use <code>turnkey compare</code> for a significance test.</p>\n";
  h += "<div class=\"table-wrap\"><table id=\"speedup-matrix\" class=\"matrix sortable\">\n"
       "<thead><tr><th scope=\"col\">model</th>";
  for (const auto& [a, b] : pairs) {
    h += fmt::format("<th scope=\"col\" class=\"num\" data-type=\"num\">{} \u00f7 {}</th>",
                     html_escape(a), html_escape(b));
  }
  h += "</tr></thead>\n<tbody>\n";
  int shown = 0;
  h += speedup_rows(models, pairs, shown);
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
    if (r.successful()) continue;
    failed.push_back(&r);
    std::string stage = r.text("status") == status_name(Status::Unreadable)
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

}  // namespace turnkey::report::html
