// The HTML report's operator profiles (benchmark --profile): per result, its top op types with a
// share bar, and its top nodes under a disclosure.
#include <fmt/format.h>

#include <cmath>

#include "html_parts.h"

namespace turnkey::report::html {

using nlohmann::json;

namespace {

double num(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_number() ? it->get<double>() : std::nan("");
}

// A count as the file says it, if it is a whole number an int64 holds; else 0.
int64_t count(const json& o, const char* key) {
  const double v = num(o, key);
  return std::abs(v) < 0x1p63 && v == std::floor(v) ? static_cast<int64_t>(v) : 0;
}

std::string text(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string share_cell(double share) {
  if (!std::isfinite(share)) return "<td class=\"num\"></td>";
  const double pct = std::max(0.0, std::min(1.0, share)) * 100;
  return fmt::format(
      "<td class=\"num\" data-v=\"{0}\"><span class=\"share-bar\" style=\"width:{1:.1f}px\">"
      "</span>{2:.1f}%</td>",
      share, pct, share * 100);
}

// One table of a profile (op types or nodes): its rows, per call where the calls are known.
std::string profile_table(const json& rows, bool nodes, int calls, const std::string& id) {
  std::string h = fmt::format(
      "<div class=\"table-wrap\"><table class=\"sortable profile\" id=\"{}\">\n<thead><tr>", id);
  if (nodes) h += "<th scope=\"col\">node</th>";
  h += "<th scope=\"col\">op type</th><th scope=\"col\" class=\"num\" data-type=\"num\">share"
       "</th><th scope=\"col\" class=\"num\" data-type=\"num\">ms per call</th>";
  const bool with_counts = !nodes && !rows.empty() && rows.front().contains("nodes");
  if (with_counts) h += "<th scope=\"col\" class=\"num\" data-type=\"num\">nodes</th>";
  h += "</tr></thead>\n<tbody>\n";
  for (const json& r : rows) {
    if (!r.is_object()) continue;
    h += "<tr>";
    if (nodes) h += td_text(text(r, "node"), "wrap");
    h += td_text(text(r, "op_type"));
    h += share_cell(num(r, "share"));
    const double ms = calls > 0 ? num(r, "total_ms") / calls : std::nan("");
    h += td_num(ms, fmt_ms(ms));
    if (with_counts) h += td_num(num(r, "nodes"), cell_text(r.value("nodes", json())));
    h += "</tr>\n";
  }
  return h + "</tbody></table></div>\n";
}

}  // namespace

std::string profiles_section(const std::vector<Row>& rows) {
  std::string h;
  int n = 0;
  for (const Row& r : rows) {
    const json& p = r.object("profile");
    if (!p.is_object()) continue;
    ++n;
    const std::string settings = r.settings();
    h += fmt::format(
        "<h3>{} on {}{}</h3>\n", html_escape(model_title(r)), html_escape(r.text("runtime")),
        settings.empty() ? "" : " <span class=\"note\">(" + html_escape(settings) + ")</span>");
    if (p.contains("error")) {
      h += fmt::format("<p class=\"note\">No profile: {}</p>\n", html_escape(text(p, "error")));
      continue;
    }
    const int64_t calls = count(p, "calls");
    const double node_ms = num(p, "node_time_ms");
    h += fmt::format(
        "<p class=\"note\">{} profiled calls after a warm-up call, {}; node time {} ms per call. "
        "Shares are of the summed node time. Raw profile: <code>{}</code></p>\n",
        calls, html_escape(text(p, "profiler")),
        html_escape(fmt_ms(calls > 0 ? node_ms / calls : std::nan(""))),
        html_escape((r.build_dir / text(p, "raw_file")).string()));
    h += profile_table(p.value("by_op_type", json::array()), false, calls,
                       fmt::format("profile-ops-{}", n));
    if (p.contains("by_node")) {
      h += "<details><summary>Top nodes</summary>\n" +
           profile_table(p["by_node"], true, calls, fmt::format("profile-nodes-{}", n)) +
           "</details>\n";
    }
  }
  if (n == 0) return "";
  return "<section id=\"profiles\">\n<h2>Operator profiles</h2>\n<p class=\"note\">Results "
         "benchmarked with <code>--profile</code>: the runtime's own profiler, in a separate "
         "session after the timed phase (docs/measurement.md).</p>\n" +
         h + "</section>\n";
}

}  // namespace turnkey::report::html
