// The CLI layer's use of CLI11: one parse wrapper with turnkey's one-line usage errors, the
// global options of both grammars, and a tool's options bound from the tool table. Internal to
// src/cli.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "turnkey/cli/grammar.h"
#include "turnkey/catalog/request.h"
#include "turnkey/catalog/tools.h"

namespace turnkey::cli {

// Help sections of the run command's options, in the order help shows them.
namespace help_group {
inline constexpr const char* kInputs = "Inputs";
inline constexpr const char* kDiscovery = "Discovery";
inline constexpr const char* kBuild = "Build";
inline constexpr const char* kBenchmark = "Benchmark";
inline constexpr const char* kCorpus = "Corpus runs";
inline constexpr const char* kOutput = "Output";
}  // namespace help_group

// Makes `app`'s help show its option groups in help_group's order (CLI11 alone shows them in the
// order options were added), then any other group.
void use_grouped_help(CLI::App& app);

// Parses `args` (in order) into `app`. Returns false when help was printed. Throws UsageError:
// "<context>: unknown option '--iteratons' (did you mean '--iterations'?)" (no prefix when
// `context` is empty).
bool parse_args(CLI::App& app, std::vector<std::string> args, const std::string& context);

// A flag of the tools users come from (benchmark_app's -niter, onnxruntime_perf_test's -x,
// trtexec's --warmUp=...; peer_flags.cpp) that `app` does not define: the hint naming turnkey's,
// else "". check_peer_flags throws it as a UsageError for the first such argument.
std::string peer_flag_hint(const CLI::App& app, const std::string& arg);
void check_peer_flags(const CLI::App& app, const std::vector<std::string>& args);

// The name this process was started under, as help and usage lines show it: "benchit" when
// started through build/benchit (the older documents' name), else "turnkey". Set once by
// cli_main before any command runs.
const std::string& program_name();
void set_program_name(const std::string& name);

// Names of every tool in the table, for did-you-mean hints.
std::vector<std::string> all_tool_names();

// True when the args ask for help (-h/--help): only then are the option choices (which load
// the plugins of the runtime registry) spelled out in help texts.
bool asks_for_help(const std::vector<std::string>& args);

// Global options shared by both grammars, bound to `g`, each in its help_group.
void add_global_options(CLI::App& app, GlobalOptions& g);

// The tool grammar's global options: -i/--input-files and the shared ones (parse and help).
void add_tool_grammar_options(CLI::App& app, GlobalOptions& g);

// A tool's options from the table, added to a CLI11 app; after parsing, given() holds the ones
// the user gave (defaults are the engine's, from the same table).
struct BoundTool {
  const ToolSpec* spec = nullptr;
  std::map<std::string, std::string> strings;
  std::map<std::string, std::vector<std::string>> lists;
  std::map<std::string, long long> ints;
  std::map<std::string, double> floats;
  std::map<std::string, bool> flags;
  std::map<std::string, CLI::Option*> options;
  std::set<std::string> int_lists;  // IntList options (bound as text in `strings`)

  // `group`: the help section of these options ("" = CLI11's default "Options").
  void bind(CLI::App& app, const ToolSpec& s, bool with_choices,
            const std::set<std::string>& skip = {}, const std::string& group = "");
  nlohmann::json given() const;

 private:
  OptionSpec::Type spec_type(const std::string& key) const;
};

}  // namespace turnkey::cli
