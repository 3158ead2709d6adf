// Help pages of the command line, built from the same parsers that read it: a page lists every
// option its parser accepts, so no accepted option can be missing from help. Not thread-safe
// (writes to stdout).
#pragma once

#include <string>
#include <vector>

namespace turnkey {

// `turnkey -h`: usage, the tool table, the global options (grouped) and the classic grammar's
// own options. `program` is the name it was started under.
void print_main_help(const std::string& program = "turnkey");

// A help page and what its parser accepts there.
struct HelpPage {
  std::string program;                // "turnkey" or "benchit"
  std::vector<std::string> args;      // after the program name, e.g. {"benchmark", "-h"}
  std::vector<std::string> accepted;  // every option's long name ("--iterations", or "-j" when it
                                      // has no long one) and every command word accepted there
};

// Every help page of the command line (main, classic, benchit, each tool, cache).
std::vector<HelpPage> help_pages();

}  // namespace turnkey
