// The build status monitor: one line per tool on stderr. On a terminal the line shows the tool
// running and is rewritten in place when it ends (carriage return + erase line; the screen is
// never cleared); otherwise one plain line per finished tool. TURNKEY_BUILD_MONITOR=False turns
// it off. Not thread-safe.
#pragma once

#include <string>

namespace turnkey::engine_internal {

class Monitor {
 public:
  explicit Monitor(bool enabled);
  void tool_started(const std::string& build, const std::string& tool);
  // status: "done", "failed", "reused"
  void tool_done(const std::string& build, const std::string& tool, const std::string& status,
                 double seconds);

 private:
  bool enabled_;
  bool tty_;
  bool line_open_ = false;
};

}  // namespace turnkey::engine_internal
