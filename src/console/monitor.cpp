#include "console/monitor.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "turnkey/console/terminal.h"

namespace turnkey::engine_internal {

Monitor::Monitor(bool enabled) : enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {}

void Monitor::tool_started(const std::string& build, const std::string& tool) {
  if (!enabled_ || !tty_) return;
  std::cout << std::flush;
  std::cerr << fmt::format("    {:<40} {:<16} running...", build, tool) << std::flush;
  line_open_ = true;
}

void Monitor::tool_done(const std::string& build, const std::string& tool,
                        const std::string& status, double seconds) {
  if (!enabled_) return;
  std::cout << std::flush;
  std::string line = status == "reused"
                         ? fmt::format("    {:<40} {:<16} reused from cache", build, tool)
                         : fmt::format("    {:<40} {:<16} {} ({:.2f} s)", build, tool, status,
                                       seconds);
  if (tty_ && line_open_) write_terminal_control(std::cerr, "\r\033[K");
  std::cerr << line << "\n" << std::flush;
  line_open_ = false;
}

}  // namespace turnkey::engine_internal
