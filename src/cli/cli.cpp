#include "turnkey/cli/cli.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "cli_args.h"
#include "commands.h"
#include "turnkey/cli/grammar.h"
#include "turnkey/cli/help.h"
#include "turnkey/cli/report_commands.h"
#include "turnkey/common/env.h"
#include "turnkey/common/version.h"
#include "turnkey/corpus/corpus.h"
#include "turnkey/run/run.h"
#include "turnkey/catalog/tools.h"

namespace turnkey {

namespace {

int cmd_version(const std::vector<std::string>& args) {
  CLI::App app("Print the turnkey version", cli::program_name() + " version");
  if (!cli::parse_args(app, args, "version")) return 0;
  std::cout << kVersion << "\n";
  return 0;
}


int cmd_worker(const std::vector<std::string>& args) { return run_worker_main(args); }
int cmd_isolate(const std::vector<std::string>& args) { return corpus_isolate_main(args); }

// The command table: a first word naming one of these runs it with the words after it; any
// other command line is a run (tool or classic grammar). The management tools' help lines are
// the tool table's (engine/tools.cpp).
struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>& args);
  bool checks_environment;  // the hidden corpus entry points inherit an already checked one
};

constexpr Command kCommands[] = {
    {"version", cmd_version, true},
    {"report", cli::report_main, true},
    {"compare", cli::compare_main, true},
    {"cache", cli::cmd_cache, true},
    {"models", cli::cmd_models, true},
    {"system-info", cli::cmd_system_info, true},
    // Hidden entry points of corpus runs: the parent re-runs this binary on one input.
    {"__worker", cmd_worker, false},
    {"__isolate", cmd_isolate, false},
};

// `turnkey TOOL -h`: one tool's options from the table.
int print_tool_help(const ToolSpec& spec) {
  CLI::App app(spec.help, "turnkey " + spec.name);
  cli::BoundTool bound;
  bound.bind(app, spec, true);
  std::cout << app.help();
  if (spec.name == "benchmark") cli::print_runtimes_and_devices();
  return 0;
}

// `benchit`, the older documents' name of the command (build/benchit, a symlink to turnkey),
// speaks the classic grammar only; the management commands are the same.
int run_benchit(const std::vector<std::string>& args, const std::string& command_line) {
  if (args.empty() || args.front() == "-h" || args.front() == "--help" ||
      (args.size() == 2 && args.front() == "benchmark" && cli::asks_for_help(args))) {
    parse_classic_grammar_as("benchit", {"-h"}, command_line);
    std::cout << "\n";
    cli::print_runtimes_and_devices();
    return args.empty() ? 2 : 0;
  }
  if (args.front() == "--version") return cmd_version({});
  const ToolSpec* tool = find_tool(args.front());
  if (is_tool_grammar(args) || (tool && args.front() != "benchmark")) {
    throw UsageError(
        "benchit takes the classic grammar (benchit [benchmark] INPUT... [options]); for tool "
        "sequences use turnkey -i INPUT... TOOL ...");
  }
  std::optional<RunRequest> request = parse_classic_grammar_as("benchit", args, command_line);
  if (!request) {  // the classic help was printed: the runtimes and devices follow it
    std::cout << "\n";
    cli::print_runtimes_and_devices();
  }
  return request ? run_sequence(*request) : 0;
}

// `turnkey -d C system-info`: options put before a command word (not a file of that name) go
// after it, where the command reads them (or says which of its options there are).
std::vector<std::string> command_first(const std::vector<std::string>& args) {
  if (args.empty() || args.front().empty() || args.front()[0] != '-' || cli::asks_for_help(args)) {
    return args;
  }
  for (size_t i = 1; i < args.size(); ++i) {
    const bool command = std::any_of(std::begin(kCommands), std::end(kCommands), [&](const Command& c) {
      return c.checks_environment && args[i] == c.name;
    });
    std::error_code ec;
    if (!command || std::filesystem::exists(args[i], ec)) continue;
    // Only options and their values before it (each word an option or right after one): else
    // the word is an option's value or an input of a run (`-i m.onnx discover --build-name cache`).
    bool options_only = true;
    for (size_t j = 1; j < i; ++j) {
      options_only = options_only && (args[j][0] == '-' || args[j - 1][0] == '-');
    }
    if (!options_only || args[i - 1] == "-i" || args[i - 1] == "--input-files") return args;
    std::vector<std::string> out(args.begin() + static_cast<long>(i), args.end());
    out.insert(out.end(), args.begin(), args.begin() + static_cast<long>(i));
    return out;
  }
  return args;
}

int run(const std::vector<std::string>& given, const std::string& command_line,
        const std::string& program) {
  const std::vector<std::string> args = command_first(given);
  if (!args.empty()) {
    for (const Command& c : kCommands) {
      if (args.front() != c.name) continue;
      if (c.checks_environment) validate_environment();
      return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
    }
  }
  validate_environment();
  if (program == "benchit") return run_benchit(args, command_line);
  if (args.empty() || args.front() == "-h" || args.front() == "--help") {
    print_main_help(program);
    return args.empty() ? 2 : 0;
  }
  if (args.front() == "--version") return cmd_version({});
  const std::string& first = args.front();
  const ToolSpec* tool = find_tool(first);
  // `turnkey benchmark -h` is the classic grammar's help (all its options, grouped).
  if (tool && first != "benchmark" && args.size() == 2 && cli::asks_for_help(args)) {
    return print_tool_help(*tool);
  }
  std::optional<RunRequest> request;
  if (is_tool_grammar(args)) {
    request = parse_tool_grammar(args, command_line);
  } else if (first != "benchmark" && tool && tool->group != ToolGroup::Management) {
    throw UsageError(fmt::format("'{}' needs inputs: turnkey -i INPUT... {} ...", first, first));
  } else {
    request = parse_classic_grammar(args, command_line);
    // Help of the classic grammar was printed: the runtimes and devices follow it.
    if (!request && cli::asks_for_help(args)) {
      std::cout << "\n";
      cli::print_runtimes_and_devices();
    }
  }
  return request ? run_sequence(*request) : 0;
}

}  // namespace

int cli_main(int argc, char** argv) {
  // The Python side may die while we write to it: get EPIPE, not a fatal signal.
  signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  const std::string program =
      argc > 0 && std::filesystem::path(argv[0]).filename() == "benchit" ? "benchit" : "turnkey";
  cli::set_program_name(program);
  try {
    return run(args, command_line, program);
  } catch (const Error& e) {
    std::cout << std::flush;
    std::cerr << program << ": error: " << e.what() << "\n";
    return e.kind() == ErrorKind::InvalidInput ? 2 : 1;
  }
}

}  // namespace turnkey
