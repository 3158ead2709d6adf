// End-to-end: an HTML report of synthetic caches, loaded in real headless Chromium. Checks that
// the page's script ran without error (the marker it sets, the console), that the latency chart
// has one bar per measurement, that a model name full of markup stays text, that the table was
// sorted by the script, and saves a screenshot; and that at 1280 px the columns that matter are in
// view, units fit the numbers and no section is empty. Skips, saying why, when Chromium is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "e2e_util.h"
#include "support/fake_cache.h"
#include "support/temp_dir.h"
#include "turnkey/cli/report_commands.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;

// TURNKEY_CHROMIUM, else the first of the usual names on PATH.
std::string find_chromium() {
  if (const char* env = std::getenv("TURNKEY_CHROMIUM"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "chrome"}) {
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
      start = end + 1;
    }
  }
  return "";
}

class HtmlReport : public ::testing::Test {
 protected:
  TempDir dir{"tk-e2e-html"};
  int profiles = 0;

  std::vector<std::string> chromium_argv(const std::string& chromium) {
    fs::path profile = dir / ("profile-" + std::to_string(profiles++));
    fs::create_directories(profile);
    return {chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--user-data-dir=" + profile.string()};
  }
};

TEST_F(HtmlReport, LoadsInChromiumWithoutErrorsAndDrawsEveryBar) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium not found (Debian package 'chromium', installed by scripts/setup; "
                    "or set TURNKEY_CHROMIUM): the HTML report was not checked in a browser";
  }

  // Two caches, two runtimes; a model name that is markup; a failed and an unreadable build.
  const std::string a = (dir / "cache-ort").string(), b = (dir / "cache-other").string();
  const std::string nasty = "<img src=x onerror=\"document.title='pwned'\">&'m'";
  write_fake_build(a, {.build_name = "m1_aaaaaaaa",
                       .model_name = nasty,
                       .hash_full = std::string(64, 'a'),
                       .samples_ms = fake_latencies(4, 60, 1)});
  // A --profile table (docs/measurement.md), one op type named like markup.
  const nlohmann::json profile = {
      {"profiler", "ONNX Runtime profiler"},
      {"calls", 10},
      {"raw_file", "profile_ort_x86_12345678.json"},
      {"node_time_ms", 80.0},
      {"by_op_type",
       {{{"op_type", "Conv"}, {"total_ms", 70.0}, {"share", 0.875}, {"nodes", 20}},
        {{"op_type", "<b>Gemm</b>"}, {"total_ms", 10.0}, {"share", 0.125}, {"nodes", 1}}}},
      {"by_node",
       {{{"node", "/conv1/Conv"}, {"op_type", "Conv"}, {"total_ms", 9.0}, {"share", 0.1125}}}},
      {"summary", "Conv 87.5%, <b>Gemm</b> 12.5%"}};
  write_fake_build(a, {.build_name = "m2_bbbbbbbb",
                       .model_name = "resnet",
                       .hash_full = std::string(64, 'b'),
                       .samples_ms = fake_latencies(9, 60, 2),
                       .extra_stats = {{"profile", profile}}});
  write_fake_build(a, {.build_name = "m3_cccccccc",
                       .model_name = "tiny",
                       .hash_full = std::string(64, 'c'),
                       .samples_ms = fake_latencies(0.0013, 60, 3)});
  write_fake_build(a, {.build_name = "zz_failed_dddddddd",
                       .model_name = "broken",
                       .status = "failed",
                       .failed_tool = "export-pytorch",
                       .error = "Unsupported ONNX opset <18> & more"});
  fs::path unreadable = write_fake_build(a, {.build_name = "zz_unreadable_eeeeeeee"});
  std::ofstream(unreadable / "zz_unreadable_eeeeeeee_state.yaml") << "build_status: [\n";
  write_fake_build(b, {.build_name = "m1_aaaaaaaa",
                       .model_name = nasty,
                       .hash_full = std::string(64, 'a'),
                       .runtime = "other",
                       .samples_ms = fake_latencies(2, 60, 4)});
  write_fake_build(b, {.build_name = "m2_bbbbbbbb",
                       .model_name = "resnet",
                       .hash_full = std::string(64, 'b'),
                       .runtime = "other",
                       .samples_ms = fake_latencies(12, 60, 5)});
  const int expected_bars = 5;

  const fs::path out = dir / "reports";
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int code = cli::report_main({"-d", a, b, "-r", out.string(), "--html"});
  const std::string printed =
      testing::internal::GetCapturedStdout() + testing::internal::GetCapturedStderr();
  ASSERT_EQ(code, 1) << printed;  // one unreadable build dir: report written, exit 1
  fs::path html;
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.path().extension() == ".html") html = e.path();
  }
  ASSERT_FALSE(html.empty()) << printed;
  const std::string url = "file://" + html.string();

  // 1. The DOM after the page's script ran, with the console on stderr.
  std::vector<std::string> argv = chromium_argv(chromium);
  argv.insert(argv.end(), {"--enable-logging=stderr", "--v=0", "--dump-dom", url});
  RunResult r = run_command(argv, {}, {}, 180);
  ASSERT_FALSE(r.timed_out) << "chromium did not finish in 180 s";
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 4000);
  const std::string& dom = r.out;
  std::smatch body_tag;
  ASSERT_TRUE(std::regex_search(dom, body_tag, std::regex("<body[^>]*>")));
  EXPECT_NE(body_tag.str().find("data-report-ready=\"1\""), std::string::npos)
      << "the page's script did not finish: " << body_tag.str();
  EXPECT_EQ(body_tag.str().find("data-report-error"), std::string::npos) << body_tag.str();
  // The page logs nothing: any console line is an error, a CSP violation or a stray log.
  std::regex console_re(R"([^\n]*:CONSOLE[^\n]*|[^\n]*Uncaught[^\n]*)");
  std::smatch m;
  EXPECT_FALSE(std::regex_search(r.err, m, console_re)) << m.str();

  EXPECT_EQ(count_occurrences(dom, "<rect class=\"bar\""), expected_bars);
  EXPECT_EQ(count_occurrences(dom, "<rect class=\"fail-bar\""), 2);  // export-pytorch, unreadable
  EXPECT_NE(dom.find("id=\"speedup-matrix\""), std::string::npos);
  // m1: about 4 ms on ort, 2 ms on other.
  EXPECT_TRUE(std::regex_search(dom, std::regex(">(1\\.9[5-9]|2\\.0[0-5])\u00d7<")));
  // The markup in the model name stayed text: no <img> element, no script ran from it.
  EXPECT_EQ(dom.find("<img"), std::string::npos);
  EXPECT_NE(dom.find("&lt;img src=x onerror="), std::string::npos);
  EXPECT_EQ(dom.find("pwned</title>"), std::string::npos);
  // The profiled result's tables, its op type as text.
  EXPECT_NE(dom.find("<section id=\"profiles\">"), std::string::npos);
  EXPECT_NE(dom.find("id=\"profile-ops-1\""), std::string::npos);
  EXPECT_NE(dom.find("id=\"profile-nodes-1\""), std::string::npos);
  EXPECT_NE(dom.find("&lt;b&gt;Gemm&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(dom.find("<b>Gemm</b>"), std::string::npos);

  // The script sorted the results table by build name on load (the file lists it by cache).
  size_t table = dom.find("id=\"results-table\"");
  ASSERT_NE(table, std::string::npos);
  size_t body = dom.find("<tbody>", table), body_end = dom.find("</tbody>", table);
  std::string rows = dom.substr(body, body_end - body);
  std::regex build_cell(R"re(<tr><td class="wrap" data-v="([^"]*)")re");
  std::vector<std::string> builds;
  for (std::sregex_iterator it(rows.begin(), rows.end(), build_cell), end; it != end; ++it) {
    builds.push_back((*it)[1]);
  }
  ASSERT_EQ(builds.size(), 7u) << rows.substr(0, 1000);
  EXPECT_TRUE(std::is_sorted(builds.begin(), builds.end()));
  EXPECT_NE(dom.find("aria-sort=\"ascending\""), std::string::npos);

  // 2. A screenshot, for people (and a check that rendering works at all).
  const fs::path png = dir / "report.png";
  argv = chromium_argv(chromium);
  argv.insert(argv.end(), {"--screenshot=" + png.string(), "--window-size=1280,900", url});
  r = run_command(argv, {}, {}, 180);
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 4000);
  const std::string image = slurp(png);
  ASSERT_GT(image.size(), 10000u);  // a blank page is a few KB
  EXPECT_EQ(image.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  if (const char* keep = std::getenv("TURNKEY_KEEP_SCREENSHOT"); keep && *keep) {
    fs::copy_file(png, keep, fs::copy_options::overwrite_existing);
  }
}

// Issue 17: at 1280 px the results table's status, verdict, flags, sequence and threads cells are
// in the viewport (measured by the browser's layout, not guessed from the HTML), the latency axis
// of microsecond models is in µs, and a report whose models each ran on one runtime has no
// runtime matrix and no blank geometric mean.
TEST_F(HtmlReport, ColumnsThatMatterInViewAt1280AndNoEmptySections) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium not found (Debian package 'chromium', installed by scripts/setup; "
                    "or set TURNKEY_CHROMIUM): the HTML report was not checked in a browser";
  }
  const std::string cache = (dir / "cache").string();
  const nlohmann::json settings = {
      {"sequence", "discover export-pytorch optimize-ort convert-fp16 benchmark"},
      {"threads", 2},
      {"input_shapes", "input_ids:1x128,attention_mask:1x128,token_type_ids:1x128"},
      {"correctness", {{"verdict", "within_tolerance_up_to_ties"}}},
      {"measurement_flags",
       {"busy machine: 3 other runnable threads before the run",
        "harness overhead is 38% of the median"}}};
  write_fake_build(cache, {.build_name = "a_model_with_a_rather_long_descriptive_name_0123abcd",
                           .model_name = "a_model_with_a_rather_long_descriptive_name",
                           .samples_ms = fake_latencies(0.0013, 60, 7),
                           .class_name = "SomeVeryLongModelClassNameForTheReport",
                           .extra_stats = settings});
  write_fake_build(cache, {.build_name = "tiny_0456abcd",
                           .model_name = "tiny",
                           .runtime = "torchscript",
                           .samples_ms = fake_latencies(0.0042, 60, 8),
                           .extra_stats = settings});
  const fs::path out = dir / "reports";
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int code = cli::report_main({"-d", cache, "-r", out.string(), "--html"});
  const std::string printed =
      testing::internal::GetCapturedStdout() + testing::internal::GetCapturedStderr();
  ASSERT_EQ(code, 0) << printed;
  fs::path html;
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.path().extension() == ".html") html = e.path();
  }
  ASSERT_FALSE(html.empty()) << printed;
  const std::string page = slurp(html);

  // No empty sections: two runtimes but no model on both -> a note, no matrix, no mean row.
  EXPECT_EQ(page.find("id=\"speedup-matrix\""), std::string::npos);
  EXPECT_EQ(page.find("geometric mean"), std::string::npos);
  EXPECT_NE(page.find("no model ran on two of them"), std::string::npos);
  // Microsecond models on a µs axis, with µs values.
  EXPECT_NE(page.find("median latency, \u00b5s"), std::string::npos);
  EXPECT_NE(page.find(">1.3"), std::string::npos);
  // Flags and sequence are shown (docs/report.md keeps them).
  // Flags: short labels in the cell, the full sentences on hover.
  EXPECT_NE(page.find("title=\"busy machine: 3 other runnable threads before the run; harness "
                      "overhead is 38% of the median\">busy machine, harness overhead is 38% of "
                      "the median</td>"),
            std::string::npos);
  EXPECT_NE(page.find("discover export-pytorch optimize-ort"), std::string::npos);

  // The browser's layout at 1280 px: a copy of the page with a probe script that writes the right
  // edge of each column that matters (header and first row) into an attribute of <body>.
  std::string probe = page;
  const std::string probe_script = R"JS(<script>
(function () {
  var want = ['status', 'verdict', 'flags', 'sequence', 'threads'];
  var table = document.getElementById('results-table');
  var head = table.tHead.rows[0].cells, row = table.tBodies[0].rows[0].cells;
  var out = ['viewport=' + document.documentElement.clientWidth];
  for (var i = 0; i < head.length; ++i) {
    var name = head[i].textContent.replace(/\s+/g, ' ').trim();
    if (want.indexOf(name) < 0) continue;
    var right = Math.max(head[i].getBoundingClientRect().right, row[i].getBoundingClientRect().right);
    out.push(name + '=' + Math.ceil(right));
  }
  document.body.setAttribute('data-layout', out.join(';'));
})();
</script>)JS";
  probe.insert(probe.rfind("</body>"), probe_script);
  const fs::path probe_html = dir / "probe.html";
  std::ofstream(probe_html) << probe;
  std::vector<std::string> argv = chromium_argv(chromium);
  argv.insert(argv.end(),
              {"--window-size=1280,900", "--dump-dom", "file://" + probe_html.string()});
  RunResult r = run_command(argv, {}, {}, 180);
  ASSERT_FALSE(r.timed_out) << "chromium did not finish in 180 s";
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 4000);
  std::smatch layout;
  ASSERT_TRUE(std::regex_search(r.out, layout, std::regex("data-layout=\"([^\"]*)\"")))
      << r.out.substr(0, 2000);
  std::map<std::string, int> right;
  std::stringstream in(layout[1].str());
  for (std::string item; std::getline(in, item, ';');) {
    const size_t eq = item.find('=');
    right[item.substr(0, eq)] = std::stoi(item.substr(eq + 1));
  }
  ASSERT_GT(right["viewport"], 1200) << layout[1];
  ASSERT_LE(right["viewport"], 1280) << layout[1];
  for (const char* name : {"status", "verdict", "flags", "sequence", "threads"}) {
    ASSERT_TRUE(right.count(name)) << name << " column missing: " << layout[1];
    EXPECT_LE(right[name], right["viewport"]) << name << " is off-screen at 1280 px: " << layout[1];
  }
}

}  // namespace
}  // namespace turnkey::test
