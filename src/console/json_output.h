// Internal to the engine: --json (docs/report.md, "One run as JSON"). For the whole run, stdout
// (fd 1) points at stderr, so every human line (blocks, notices, the build monitor) and what
// scripts print (the Python side and corpus workers inherit fd 1) goes to stderr; at the end one
// JSON document of the run's results is written to the real stdout. The document is a JSON report
// (report.h: same columns and rows as `turnkey report`, so `turnkey compare` reads it) of the
// rows this run made, plus `run`: the exit code and every input with its status and builds. Not
// thread-safe: one per run, on the main thread.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "turnkey/catalog/request.h"

namespace turnkey::engine_internal {

class JsonOutput {
 public:
  // Inactive (does nothing) unless request.global.json_output.
  explicit JsonOutput(const RunRequest& request);
  // Puts fd 1 back (after flushing what went to it).
  ~JsonOutput();
  JsonOutput(const JsonOutput&) = delete;
  JsonOutput& operator=(const JsonOutput&) = delete;

  bool active() const { return saved_stdout_ >= 0; }

  // Writes the document to the real stdout. `inputs`: one object per input of the run, {input,
  // status, stage, error, builds: [{build, dir}], earlier (resumed from an earlier corpus run)};
  // `error`: what stopped the run, when something did ("" = it ran to its end). Rows are read
  // from the builds' dirs: the results this run made (finished since it started), all rows of an
  // unfinished build, and the latest run's rows of an input resumed from an earlier run.
  void finish(const nlohmann::json& inputs, int exit_code, const std::string& error = "");

 private:
  const RunRequest& request_;
  int saved_stdout_ = -1;
  std::string started_utc_;
  bool finished_ = false;
};

}  // namespace turnkey::engine_internal
