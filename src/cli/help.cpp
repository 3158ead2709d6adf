// Help pages built from the parsers themselves (cli_args.cpp, grammar.cpp, classic_grammar.cpp,
// cache_commands.cpp), and the list of what each page's parser accepts for the test that checks
// help against it.
#include "turnkey/cli/help.h"

#include <algorithm>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "cli_args.h"
#include "commands.h"
#include "grammar_internal.h"
#include "turnkey/common/version.h"
#include "turnkey/catalog/tools.h"

namespace turnkey {

namespace {

// An option's long name ("--iterations"), or its short one when it has no long one.
std::string option_name(const CLI::Option* o) {
  if (!o->get_lnames().empty()) return "--" + o->get_lnames().front();
  if (!o->get_snames().empty()) return "-" + o->get_snames().front();
  return o->get_name();
}

std::vector<const CLI::Option*> named_options(const CLI::App& app) {
  return app.get_options([&](const CLI::Option* o) {
    return o->nonpositional() && o != app.get_help_ptr() && o != app.get_help_all_ptr();
  });
}

// Options of the classic grammar that the tool grammar's global options do not have and that are
// not a tool's (those are in `turnkey TOOL -h`): -s, --all, --analyze-only, --sequence, ...
std::vector<const CLI::Option*> classic_only_options(const CLI::App& classic,
                                                     const cli::ClassicOptions& o,
                                                     const CLI::App& global) {
  std::set<const CLI::Option*> of_tools;
  for (const cli::BoundTool* t : {&o.discover, &o.load, &o.exporter, &o.bench}) {
    for (const auto& [key, opt] : t->options) of_tools.insert(opt);
  }
  std::set<std::string> global_names;
  for (const CLI::Option* g : named_options(global)) global_names.insert(option_name(g));
  std::vector<const CLI::Option*> out;
  for (const CLI::Option* c : named_options(classic)) {
    if (!of_tools.count(c) && !global_names.count(option_name(c))) out.push_back(c);
  }
  return out;
}

}  // namespace

void print_main_help(const std::string& program) {
  std::cout << fmt::format(
      "{} {}: find the models in Python scripts or ONNX files, build them, and measure how\n"
      "fast they run on each runtime and device.\n\n"
      "Usage:\n"
      "  turnkey -i INPUT... [global options] TOOL [tool options] [TOOL [tool options]]...\n"
      "  turnkey [benchmark] INPUT... [options]   (classic grammar; `benchit` takes only this)\n"
      "  turnkey MANAGEMENT-TOOL ...\n\n"
      "Inputs: .py scripts (script.py::HASH selects models), .onnx files, globs, .txt lists.\n\n",
      program, kVersion);
  for (ToolGroup g : {ToolGroup::First, ToolGroup::Sequence, ToolGroup::Management}) {
    std::cout << tool_group_title(g) << ":\n";
    for (const ToolSpec& s : tool_specs()) {
      if (s.group == g) std::cout << fmt::format("  {:<16}{}\n", s.name, s.help);
    }
    std::cout << "\n";
  }
  CLI::App global("", "turnkey");
  GlobalOptions g;
  cli::add_tool_grammar_options(global, g);
  cli::use_grouped_help(global);
  global.set_help_flag();
  // The formatter's groups without its usage line: the sections of the global options.
  const std::string groups = global.help();
  std::cout << "Global options (before the first tool; the classic grammar takes them too):"
            << groups.substr(groups.find('\n', groups.find("Usage:")));
  CLI::App classic("", "turnkey benchmark");
  cli::ClassicOptions o;
  cli::add_classic_options(classic, o, false);
  CLI::Formatter f;
  f.column_width(32);
  std::cout << "Classic grammar (`turnkey benchmark -h` lists all its options, grouped):\n";
  for (const CLI::Option* c : classic_only_options(classic, o, global)) {
    std::cout << f.make_option(c, false);
  }
  std::cout << "  and the options of discover, load-onnx, export-pytorch and benchmark.\n\n"
               "`turnkey TOOL -h` shows one tool's options; `turnkey cache -h` the cache "
               "commands.\n";
}

std::vector<HelpPage> help_pages() {
  std::vector<HelpPage> pages;
  {  // turnkey -h: tools, management commands, global options, the classic grammar's own
    HelpPage main{"turnkey", {"-h"}, {}};
    for (const ToolSpec& s : tool_specs()) main.accepted.push_back(s.name);
    CLI::App global;
    GlobalOptions g;
    cli::add_tool_grammar_options(global, g);
    for (const CLI::Option* o : named_options(global)) main.accepted.push_back(option_name(o));
    CLI::App classic;
    cli::ClassicOptions c;
    cli::add_classic_options(classic, c, false);
    for (const CLI::Option* o : classic_only_options(classic, c, global)) {
      main.accepted.push_back(option_name(o));
    }
    pages.push_back(main);
  }
  {  // the classic grammar, under both names
    CLI::App classic;
    cli::ClassicOptions c;
    cli::add_classic_options(classic, c, false);
    std::vector<std::string> accepted;
    for (const CLI::Option* o : named_options(classic)) accepted.push_back(option_name(o));
    pages.push_back({"turnkey", {"benchmark", "-h"}, accepted});
    pages.push_back({"benchit", {"-h"}, accepted});
    pages.push_back({"benchit", {"benchmark", "-h"}, accepted});
  }
  for (const ToolSpec& s : tool_specs()) {  // turnkey TOOL -h (the run tools)
    if (s.group == ToolGroup::Management) continue;
    CLI::App app;
    cli::BoundTool bound;
    bound.bind(app, s, false);
    HelpPage page{"turnkey", {s.name, "-h"}, {s.name}};
    for (const CLI::Option* o : named_options(app)) page.accepted.push_back(option_name(o));
    // `turnkey benchmark -h` is the classic page; the tool's own page is `-i X ... benchmark -h`.
    if (s.name == "benchmark") page.args = {"-i", "x.onnx", "load-onnx", "benchmark", "-h"};
    pages.push_back(page);
  }
  {  // turnkey cache -h: every cache command and option
    CLI::App app;
    cli::CacheArgs a;
    cli::add_cache_commands(app, a);
    HelpPage page{"turnkey", {"cache", "-h"}, {}};
    for (const CLI::App* sub : app.get_subcommands({})) page.accepted.push_back(sub->get_name());
    for (const CLI::Option* o : named_options(app)) page.accepted.push_back(option_name(o));
    pages.push_back(page);
  }
  return pages;
}

}  // namespace turnkey
