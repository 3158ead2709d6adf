#include "turnkey/cli/cli.h"

#include <signal.h>

#include <iostream>

#include <fmt/format.h>

#include "cli_args.h"
#include "commands.h"
#include "turnkey/cli/grammar.h"
#include "turnkey/cli/report_commands.h"
#include "turnkey/common/env.h"
#include "turnkey/common/version.h"
#include "turnkey/engine/corpus.h"
#include "turnkey/engine/tools.h"

namespace turnkey {

namespace {

void print_main_help() {
  std::cout << fmt::format(
      "turnkey {}: find the models in Python scripts or ONNX files, build them, and measure how\n"
      "fast they run on each runtime and device.\n\n"
      "Usage:\n"
      "  turnkey -i INPUT... [global options] TOOL [tool options] [TOOL [tool options]]...\n"
      "  turnkey INPUT... [options]              (classic: discover/load, export, benchmark)\n"
      "  turnkey benchmark INPUT... [options]    (classic)\n"
      "  turnkey MANAGEMENT-TOOL ...\n\n"
      "Inputs: .py scripts (script.py::HASH selects models), .onnx files, globs, .txt lists.\n\n",
      kVersion);
  for (ToolGroup g : {ToolGroup::First, ToolGroup::Sequence, ToolGroup::Management}) {
    std::cout << tool_group_title(g) << ":\n";
    for (const ToolSpec& s : tool_specs()) {
      if (s.group == g) std::cout << fmt::format("  {:<16}{}\n", s.name, s.help);
    }
    std::cout << "\n";
  }
  std::cout << "Global options (before the first tool):\n"
               "  -i, --input-files INPUT...  Inputs for the first tool\n"
               "  -d, --cache-dir DIR         Cache directory (TURNKEY_CACHE_DIR, default "
               "~/.cache/turnkey)\n"
               "  --labels KEY::VALUE...      Only scripts whose '# labels:' line matches all\n"
               "  --python PATH               Interpreter with torch (TURNKEY_PYTHON)\n"
               "  --process-isolation         Each input in its own supervised process\n"
               "  -j, --jobs N                N inputs at once (isolated; one benchmark at a time)\n"
               "  --timeout S                 Per-input timeout (TURNKEY_TIMEOUT_SECONDS, 3600)\n"
               "  --memory-limit SIZE         Per-input memory limit, e.g. 4G\n"
               "  --max-processes N           Per-input process limit (default 512)\n"
               "  --retry-failed              Rerun inputs that failed in an earlier corpus run\n"
               "  --use-slurm                 Each input in its own Slurm job (--slurm-partition,\n"
               "                              --slurm-mem)\n\n"
               "Classic options: --device, --runtime, --iterations, --warmup, --threads, "
               "--rt-args,\n"
               "  --analyze-only, --build-only, --max-depth, --script-args, --onnx-opset, "
               "--input-shapes,\n"
               "  -s/--search-dir, plus the global options.\n\n"
               "`turnkey TOOL -h` shows one tool's options.\n";
}

int cmd_version(const std::vector<std::string>& args) {
  CLI::App app("Print the turnkey version", "turnkey version");
  if (!cli::parse_args(app, args, "version")) return 0;
  std::cout << kVersion << "\n";
  return 0;
}


int cmd_worker(const std::vector<std::string>& args) { return corpus_worker_main(args); }
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

int run(const std::vector<std::string>& args, const std::string& command_line) {
  if (!args.empty()) {
    for (const Command& c : kCommands) {
      if (args.front() != c.name) continue;
      if (c.checks_environment) validate_environment();
      return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
    }
  }
  validate_environment();
  if (args.empty() || args.front() == "-h" || args.front() == "--help") {
    print_main_help();
    return args.empty() ? 2 : 0;
  }
  if (args.front() == "--version") return cmd_version({});
  const std::string& first = args.front();
  const ToolSpec* tool = find_tool(first);
  if (tool && args.size() == 2 && (args[1] == "-h" || args[1] == "--help")) {
    return print_tool_help(*tool);
  }
  std::optional<RunRequest> request;
  if (is_tool_grammar(args)) {
    request = parse_tool_grammar(args, command_line);
  } else if (first != "benchmark" && tool && tool->group != ToolGroup::Management) {
    throw UsageError(fmt::format("'{}' needs inputs: turnkey -i INPUT... {} ...", first, first));
  } else {
    request = parse_classic_grammar(args, command_line);
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
  try {
    return run(args, command_line);
  } catch (const Error& e) {
    std::cout << std::flush;
    std::cerr << "turnkey: error: " << e.what() << "\n";
    return e.kind() == ErrorKind::InvalidInput ? 2 : 1;
  }
}

}  // namespace turnkey
