// The two grammars of the run command, read into a RunRequest without running it (so tests can
// check what a command line means):
//   tool grammar:    turnkey -i INPUT... [global options] TOOL [tool options] [TOOL ...]...
//   classic grammar: turnkey [benchmark] INPUT... [options]
// Every option value of every tool is checked here, against the tool table (engine/tools.h),
// before any work. Not thread-safe (help goes to stdout).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "turnkey/common/error.h"
#include "turnkey/catalog/request.h"

namespace turnkey {

// A bad command line: one line on stderr, exit code 2.
struct UsageError : Error {
  explicit UsageError(const std::string& message) : Error(ErrorKind::InvalidInput, message) {}
};

// True when `args` use the tool grammar (they give -i / --input-files).
bool is_tool_grammar(const std::vector<std::string>& args);

// The request a command line asks for; nullopt when it asked for help (printed). Throws
// UsageError naming the bad option and value.
std::optional<RunRequest> parse_tool_grammar(const std::vector<std::string>& args,
                                             const std::string& command_line);
std::optional<RunRequest> parse_classic_grammar(std::vector<std::string> args,
                                                const std::string& command_line);
// The same under another name in help (`benchit`, the older documents' command).
std::optional<RunRequest> parse_classic_grammar_as(const std::string& program,
                                                   std::vector<std::string> args,
                                                   const std::string& command_line);

}  // namespace turnkey
