#include "turnkey/cli/report_commands.h"

#include <chrono>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "cli_args.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/text.h"
#include "turnkey/catalog/status.h"
#include "turnkey/report/compare.h"
#include "turnkey/report/html_report.h"
#include "turnkey/report/report.h"

namespace turnkey::cli {

namespace fs = std::filesystem;
using namespace report;

namespace {

std::string command_line(const char* command, const std::vector<std::string>& args) {
  std::string s = fmt::format("turnkey {}", command);
  for (const std::string& a : args) s += " " + shell_quote(a);
  return s;
}

int fail(const char* command, const std::string& message, int code) {
  std::cout << std::flush;
  std::cerr << fmt::format("{} {}: error: {}\n", program_name(), command, one_line(message));
  return code;
}

int error_exit(const char* command, const Error& e) {
  return fail(command, e.what(), e.kind() == ErrorKind::InvalidInput ? 2 : 1);
}

// Parses `args` into `app`. Returns -1 when parsed, else the exit code to return: 0 after
// printing help, 2 after a one-line usage error.
int parse(CLI::App& app, const std::vector<std::string>& args, const char* command) {
  try {
    return parse_args(app, args, "") ? -1 : 0;
  } catch (const UsageError& e) {
    return fail(command, fmt::format("{} (see turnkey {} --help)", e.what(), command), 2);
  }
}

// A cache dir, or a JSON report file.
Report load_side(const std::string& given) {
  fs::path p = expand_user(given);
  std::error_code ec;
  if (fs::is_directory(p, ec)) return read_caches({given});
  if (fs::is_regular_file(p, ec)) return report_from_json(read_file(p), given);
  throw Error(ErrorKind::InvalidInput, fmt::format("{} does not exist", given));
}

// A folder inside a source checkout: it or an ancestor holds .git.
bool inside_checkout(fs::path dir) {
  std::error_code ec;
  for (; !dir.empty(); dir = dir.parent_path()) {
    if (fs::exists(dir / ".git", ec)) return true;
    if (dir == dir.parent_path()) break;
  }
  return false;
}

}  // namespace

int report_main(const std::vector<std::string>& args) {
  const char* kCommand = "report";
  CLI::App app(
      "Write a report of one or more turnkey caches: CSV and JSON, and HTML with --html. "
      "Columns: docs/report.md.",
      program_name() + " report");
  std::vector<std::string> caches;
  std::string report_dir = ".";
  bool html = false;
  app.add_option("-d,--cache-dir", caches,
                 "Caches to report, merged in this order (default: TURNKEY_CACHE_DIR, else "
                 "~/.cache/turnkey)")
      ->expected(1, -1);
  CLI::Option* report_dir_opt = app.add_option(
      "-r,--report-dir", report_dir,
      "Where to write the report files (default: the current folder; inside a source checkout, "
      "the first cache's reports/ folder)");
  app.add_flag("--html", html, "Also write a self-contained HTML report");
  if (int code = parse(app, args, kCommand); code >= 0) return code;

  try {
    if (caches.empty()) caches.push_back(resolve_cache_dir("").string());
    // `turnkey report` as the README shows it, run in a clone, would leave files in the
    // checkout: unasked, they go to the cache instead.
    if (report_dir_opt->count() == 0 && inside_checkout(fs::current_path())) {
      report_dir = (fs::path(expand_user(caches.front())) / "reports").string();
    }
    Report report = read_caches(caches);
    const auto now = std::chrono::system_clock::now();
    Provenance provenance{iso_utc_timestamp(now), command_line(kCommand, args), machine_fingerprint()};
    std::vector<std::pair<std::string, std::string>> files = {
        {"csv", to_csv(report.rows)}, {"json", to_json(report, provenance)}};
    if (html) files.emplace_back("html", to_html(report, provenance));
    std::vector<fs::path> written =
        write_new_files(expand_user(report_dir), report_stem(now), files);

    std::vector<std::string> statuses;
    for (const Row& r : report.rows) statuses.push_back(r.text("status"));
    const auto counts = count_by_group(statuses);  // the status table's groups
    std::cout << fmt::format("Report of {} result(s) from {} cache(s)", report.rows.size(),
                             report.caches.size());
    for (size_t g = 0; g < kStatusGroups.size(); ++g) {
      const bool always = kStatusGroups[g] == StatusGroup::Success ||
                          kStatusGroups[g] == StatusGroup::Failure;
      if (counts[g] || always) {
        std::cout << fmt::format("{} {} {}", g ? "," : ":", counts[g], group_label(kStatusGroups[g]));
      }
    }
    std::cout << "\n";
    for (const fs::path& p : written) std::cout << "  " << p.string() << "\n";
    std::cout << std::flush;
    if (report.rows.empty()) {
      std::cerr << "turnkey report: note: no build dirs found in the given cache(s)\n";
    }
    if (report.duplicate_rows) {
      std::cerr << fmt::format(
          "turnkey report: note: {} row(s) repeat the model, runtime and device of an earlier "
          "row; marked in column duplicate_of\n",
          report.duplicate_rows);
    }
    if (const int unreadable = counts[static_cast<size_t>(StatusGroup::Unreadable)]) {
      std::cerr << fmt::format(
          "turnkey report: {} build dir(s) could not be read; they are rows with status "
          "unreadable and the reason in column error\n",
          unreadable);
      return 1;
    }
    return 0;
  } catch (const Error& e) {
    return error_exit(kCommand, e);
  }
}

int compare_main(const std::vector<std::string>& args) {
  const char* kCommand = "compare";
  CLI::App app(
      "Compare two caches or JSON reports: per model, runtime and device, the ratio of "
      "medians B/A and a one-sided Mann-Whitney U test on the raw samples. Exit code 1 "
      "when B is significantly slower than A by more than the threshold.",
      program_name() + " compare");
  std::string a, b, threshold = "5";
  double alpha = 0.01;
  app.add_option("A", a, "Baseline: a cache dir or a JSON report")->required();
  app.add_option("B", b, "Candidate: a cache dir or a JSON report")->required();
  app.add_option("--threshold", threshold,
                 "Slowdown that counts, in percent: 5 or 5% (default: 5)");
  app.add_option("--alpha", alpha, "Significance level of the one-sided test (default: 0.01)")
      ->check(CLI::Range(1e-12, 0.5));
  if (int code = parse(app, args, kCommand); code >= 0) return code;

  CompareOptions options;
  options.alpha = alpha;
  {
    std::string t = threshold;
    if (!t.empty() && t.back() == '%') t.pop_back();
    size_t used = 0;
    double pct = -1;
    try {
      pct = std::stod(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (t.empty() || used != t.size() || !(pct >= 0 && pct <= 1000)) {
      return fail(kCommand,
                  fmt::format("--threshold {}: expected a percentage such as 5 or 5%", threshold),
                  2);
    }
    options.threshold = pct / 100;
  }
  try {
    Report ra = load_side(a);
    Report rb = load_side(b);
    Comparison c = compare_reports(ra, rb, options);
    std::cout << format_comparison(c, options, a, b) << std::flush;
    return c.slowdowns > 0 ? 1 : 0;
  } catch (const Error& e) {
    return fail(kCommand, e.what(), 2);  // 1 means "slower": an unusable input is not that
  }
}

}  // namespace turnkey::cli
