// --json (json_output.h): stdout to stderr for the run, then one document on the real stdout.
#include "console/json_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <set>

#include "turnkey/cache/build_cache.h"
#include "turnkey/catalog/status.h"
#include "turnkey/common/text.h"
#include "turnkey/report/report.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::cerr << "turnkey: --json: cannot write the document to stdout: " << std::strerror(errno)
                << "\n";
      return;
    }
    done += static_cast<size_t>(n);
  }
}

// The rows of one build dir that belong to this run (see JsonOutput::finish).
std::vector<report::Row> rows_of_run(const fs::path& dir, const std::string& label,
                                     const std::string& started_utc, bool earlier) {
  std::vector<report::Row> all = report::read_build_dir(dir, label);
  std::string latest;
  for (const report::Row& r : all) latest = std::max(latest, r.text("finished_utc"));
  std::vector<report::Row> kept;
  for (report::Row& r : all) {
    const std::string finished = r.text("finished_utc");
    // No finish time: a build that did not finish (or cannot be read) is this run's to report.
    const bool ours = finished.empty() || (earlier ? finished == latest : finished >= started_utc);
    if (ours) kept.push_back(std::move(r));
  }
  return kept;
}

}  // namespace

JsonOutput::JsonOutput(const RunRequest& request) : request_(request) {
  if (!request.global.json_output) return;
  started_utc_ = iso_utc_timestamp_now();
  std::cout << std::flush;
  std::fflush(stdout);
  saved_stdout_ = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (saved_stdout_ < 0) return;  // no stdout to write to: nothing to keep clean either
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
}

JsonOutput::~JsonOutput() {
  if (saved_stdout_ < 0) return;
  std::cout << std::flush;
  std::fflush(stdout);
  ::dup2(saved_stdout_, STDOUT_FILENO);
  ::close(saved_stdout_);
}

void JsonOutput::finish(const json& inputs, int exit_code, const std::string& error) {
  if (saved_stdout_ < 0 || finished_) return;
  finished_ = true;
  std::cout << std::flush;
  const fs::path cache = fs::absolute(resolve_cache_dir(request_.global.cache_dir));
  const std::string label =
      request_.global.cache_dir.empty() ? cache.string() : request_.global.cache_dir;
  report::Report r;
  std::set<fs::path> seen;
  for (const json& in : inputs) {
    const bool earlier = in.value("earlier", false);
    for (const json& b : in.value("builds", json::array())) {
      fs::path dir = b.value("dir", "");
      if (dir.empty()) dir = cache / b.value("build", "");
      if (!seen.insert(dir.lexically_normal()).second) continue;
      for (report::Row& row : rows_of_run(dir, label, started_utc_, earlier)) {
        r.rows.push_back(std::move(row));
      }
    }
  }
  r.caches.push_back({label, cache, static_cast<int>(seen.size()), 0});
  for (const report::Row& row : r.rows)
    r.caches.back().unreadable += row.text("status") == status_name(Status::Unreadable);
  r.duplicate_rows = report::mark_duplicates(r.rows);
  const report::Provenance provenance{iso_utc_timestamp_now(), request_.command_line,
                                      report::machine_fingerprint()};
  ordered_json doc = ordered_json::parse(report::to_json(r, provenance));
  ordered_json run;
  run["started_utc"] = started_utc_;
  run["exit_code"] = exit_code;
  run["error"] = error.empty() ? ordered_json() : ordered_json(one_line(error));
  ordered_json listed = ordered_json::array();
  for (const json& in : inputs) {
    ordered_json o;
    o["input"] = in.value("input", "");
    o["status"] = in.value("status", "");
    for (const char* key : {"stage", "error"}) {
      const std::string v = in.value(key, "");
      o[key] = v.empty() ? ordered_json() : ordered_json(v);
    }
    o["builds"] = ordered_json::parse(in.value("builds", json::array()).dump());
    o["earlier"] = in.value("earlier", false);
    listed.push_back(std::move(o));
  }
  run["inputs"] = std::move(listed);
  doc["run"] = std::move(run);
  write_all(saved_stdout_, doc.dump(1) + "\n");
}

}  // namespace turnkey::engine_internal
