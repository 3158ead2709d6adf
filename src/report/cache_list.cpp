#include "turnkey/report/cache_list.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <sstream>
#include <system_error>

#include "turnkey/report/report.h"

namespace turnkey::report {

namespace fs = std::filesystem;

namespace {

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

}  // namespace

std::string cache_list_text(const fs::path& cache_dir) {
  std::error_code ec;
  if (!fs::exists(cache_dir, ec)) return "No builds in " + cache_dir.string() + "\n";
  const std::vector<Row> rows = read_cache(cache_dir, cache_dir.string());
  if (rows.empty()) return "No builds in " + cache_dir.string() + "\n";
  std::string out = fmt::format("{:<44} {:<11} {:<24} {:<11} {:>12}  {}\n", "build", "status",
                                "model", "runtime", "median (ms)", "settings (median over runs)");
  for (const Row& r : rows) {
    const double median = r.number("median_latency_ms");
    std::string trail = r.settings();
    if (r.number("runs") > 1) {
      // Only the runs that measured a median (a failed run records none, or 0): no "(0 -> )".
      std::vector<std::string> medians;
      std::istringstream words(r.text("median_history_ms"));
      for (std::string w; words >> w;) {
        if (w != "0") medians.push_back(w);
      }
      if (medians.size() > 1) trail += fmt::format(" ({})", fmt::join(medians, " -> "));
    }
    if (r.has("error")) trail += (trail.empty() ? "" : ": ") + r.text("error");
    out += fmt::format("{:<44} {:<11} {:<24} {:<11} {:>12}  {}\n", r.text("build_name"),
                       or_dash(r.text("status")), or_dash(r.text("model_name")),
                       or_dash(r.text("runtime")),
                       std::isfinite(median) ? fmt::format("{:.4g}", median) : "-", trail);
  }
  return out;
}

}  // namespace turnkey::report
