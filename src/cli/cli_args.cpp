#include "cli_args.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>

#include "turnkey/corpus/corpus.h"

namespace turnkey::cli {

namespace {
std::string& program_name_storage() {
  static std::string name = "turnkey";
  return name;
}
}  // namespace

const std::string& program_name() { return program_name_storage(); }
void set_program_name(const std::string& name) { program_name_storage() = name; }

using nlohmann::json;

namespace {

std::string closest_option(const CLI::App& app, const std::string& given) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
  }
  return closest_name(given.substr(0, given.find('=')), names);
}

std::string prefixed(const std::string& context, const std::string& message) {
  return context.empty() ? message : context + ": " + message;
}

// An option of runs given to a command that does not take it (`turnkey system-info --rebuild
// never`): where it goes instead; "" when it is no run option or this is a run's own parse.
std::string run_option_elsewhere(const std::string& given, const std::string& context) {
  static const std::set<std::string> commands = {"version", "report", "compare",
                                                 "cache",   "models", "system-info"};
  if (!commands.count(context)) return "";
  CLI::App runs;
  GlobalOptions g;
  add_tool_grammar_options(runs, g);
  const std::string key = given.substr(0, given.find('='));
  if (runs.get_option_no_throw(key) == nullptr) return "";
  return fmt::format(
      "unknown option '{}': it is an option of runs ({} INPUT... {} ...), not of "
      "{}",
      key, program_name(), key, context);
}

}  // namespace

std::vector<std::string> all_tool_names() {
  std::vector<std::string> names;
  for (const ToolSpec& s : tool_specs()) names.push_back(s.name);
  return names;
}

bool asks_for_help(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& a) { return a == "-h" || a == "--help"; });
}

// CLI11's words for a value it could not convert or that its range check refused, in the words
// of turnkey's own option checks: "Could not convert: --iterations = abc" becomes "--iterations
// 'abc': expected a whole number"; "--timeout: Value -1 not in range 0.000000 to 1.79e308" becomes
// "--timeout -1: expected a number more than 0". Other messages pass as they are.
std::string plain_parse_error(const CLI::App& app, const std::string& what) {
  static const std::regex kConvert(R"(^Could not convert: (\S+) = (.*)$)");
  static const std::regex kRange(R"(^(\S+): Value (\S+) not in range (\S+) to (\S+)$)");
  static const std::regex kChoice(R"(^(\S+): (.*) not in \{(.*)\}$)");
  static const std::regex kTwice(R"(^(\S+): At Most (\d+) required but received (\d+)$)");
  static const std::regex kNamedTwice(R"(^(\S+): \1 (.*)$)");
  std::smatch m;
  if (std::regex_match(what, m, kChoice)) {
    std::vector<std::string> choices;
    std::stringstream list(m[3].str());
    for (std::string c; std::getline(list, c, ',');) choices.push_back(c);
    return not_one_of(m[1].str(), m[2].str(), choices);
  }
  if (std::regex_match(what, m, kTwice)) {
    return fmt::format("{} was given {} times: give it {}", m[1].str(), m[3].str(),
                       m[2].str() == "1" ? "once" : "at most " + m[2].str() + " times");
  }
  if (std::regex_match(what, m, kNamedTwice)) return fmt::format("{} {}", m[1].str(), m[2].str());
  if (std::regex_match(what, m, kConvert)) {
    const std::string name = m[1].str();
    std::string kind = "a value of the option's type";
    try {
      const std::string type = app.get_option(name)->get_type_name();
      kind = type == "INT" || type == "UINT" ? "a whole number"
             : type == "FLOAT"               ? "a number"
                                             : "a value of type " + type;
    } catch (const CLI::Error&) {
    }
    return fmt::format("{} '{}': expected {}", name, m[2].str(), kind);
  }
  if (std::regex_match(what, m, kRange)) {
    double low = 0, high = 0;
    try {
      low = std::stod(m[3].str());
      high = std::stod(m[4].str());
    } catch (const std::exception&) {
      return what;
    }
    const std::string range = high >= 1e300
                                  ? fmt::format("{} {:g}", low == 0 ? "more than" : "at least", low)
                                  : fmt::format("from {:g} to {:g}", low, high);
    return fmt::format("{} {}: expected a number {}", m[1].str(), m[2].str(), range);
  }
  return what;
}

bool parse_args(CLI::App& app, std::vector<std::string> args, const std::string& context) {
  // Before CLI11 reads them: it takes benchmark_app's -hint for -h (help) and -niter for -n.
  if (!asks_for_help(args)) {
    try {
      check_peer_flags(app, args);
    } catch (const UsageError& e) {
      throw UsageError(prefixed(context, e.what()));
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments reversed
  try {
    app.parse(args);
  } catch (const CLI::Success&) {
    std::cout << app.help();
    return false;
  } catch (const CLI::ExtrasError&) {
    const std::vector<std::string> extras = app.remaining();
    const std::string first = extras.empty() ? "" : extras.front();
    if (!first.empty() && first[0] == '-') {
      if (const std::string where = run_option_elsewhere(first, context); !where.empty()) {
        throw UsageError(prefixed(context, where));
      }
      const std::string c = closest_option(app, first);
      throw UsageError(
          prefixed(context, fmt::format("unknown option '{}'{}", first,
                                        c.empty() ? "" : " (did you mean '" + c + "'?)")));
    }
    // A mistyped subcommand (`cache lst`), else a mistyped tool.
    std::vector<std::string> words;
    for (const CLI::App* sub : app.get_subcommands({})) words.push_back(sub->get_name());
    const std::string c = closest_name(first, words.empty() ? all_tool_names() : words);
    throw UsageError(
        prefixed(context, fmt::format("unexpected argument '{}'{}", first,
                                      c.empty() ? "" : " (did you mean '" + c + "'?)")));
  } catch (const CLI::RequiresError& e) {
    // CLI11 says "--a requires --b"; the rest of turnkey's messages say "needs".
    std::string what = e.what();
    if (const size_t at = what.find(" requires "); at != std::string::npos) {
      what.replace(at, 10, " needs ");
    }
    throw UsageError(prefixed(context, what.substr(0, what.find_first_of("\r\n"))));
  } catch (const CLI::ParseError& e) {
    const std::string what = e.what();
    throw UsageError(
        prefixed(context, plain_parse_error(app, what.substr(0, what.find_first_of("\r\n")))));
  }
  return true;
}

void use_grouped_help(CLI::App& app) {
  // CLI11 2.1 shows option groups in the order of their first option; this shows help_group's
  // order. The rest is CLI11's own layout (Formatter::make_help).
  class GroupedFormatter : public CLI::Formatter {
   public:
    std::string make_help(const CLI::App* app, std::string name,
                          CLI::AppFormatMode mode) const override {
      if (mode == CLI::AppFormatMode::Sub) return CLI::Formatter::make_help(app, name, mode);
      std::vector<std::string> order = {help_group::kInputs, help_group::kDiscovery,
                                        help_group::kBuild,  help_group::kBenchmark,
                                        help_group::kCorpus, help_group::kOutput};
      for (const std::string& g : app->get_groups()) {
        if (std::find(order.begin(), order.end(), g) == order.end()) order.push_back(g);
      }
      std::string out = make_description(app) + make_usage(app, name) + make_positionals(app);
      for (const std::string& g : order) {
        std::vector<const CLI::Option*> opts = app->get_options(
            [&](const CLI::Option* o) { return o->get_group() == g && o->nonpositional(); });
        if (!g.empty() && !opts.empty()) out += make_group(g, false, opts);
      }
      return out + make_subcommands(app, mode) + "\n" + make_footer(app);
    }
  };
  auto formatter = std::make_shared<GroupedFormatter>();
  formatter->column_width(32);
  app.formatter(formatter);
}

namespace {

// Inputs, discovery, the cache and the output.
void add_build_options(CLI::App& app, GlobalOptions& g) {
  using namespace help_group;
  app.add_option("--labels", g.labels, "Only scripts whose labels match all of key::value ...")
      ->expected(1, -1)
      ->group(kInputs);
  app.add_option(
         "--python", g.python,
         "Python interpreter with torch (default: TURNKEY_PYTHON, python3, /usr/bin/python3)")
      ->group(kDiscovery);
  app.add_option("-d,--cache-dir", g.cache_dir,
                 "Cache directory (default: TURNKEY_CACHE_DIR, else ~/.cache/turnkey)")
      ->group(kBuild);
  app.add_option("--rebuild", g.rebuild, "Cache policy: if_needed (default), always, never")
      ->check(CLI::IsMember({"if_needed", "always", "never"}))
      ->group(kBuild);
  app.add_flag("--lean-cache", g.lean_cache,
               "After each build, delete its artifacts; keep logs and yaml/json")
      ->group(kBuild);
  app.add_flag("--json", g.json_output,
               "Print one JSON document of the run's results on stdout (the rows of turnkey "
               "report); everything else, scripts' output included, goes to stderr")
      ->group(kOutput);
  app.add_flag("--sandbox", g.sandbox,
               "Run scripts in a sandbox: no network, no home, the cache read-only "
               "(default: TURNKEY_SANDBOX; docs/sandbox.md)")
      ->group(kDiscovery);
  app.add_option("--sandbox-allow", g.sandbox_allow,
                 "A path a sandboxed script may also write (repeatable)")
      ->expected(1, -1)
      ->group(kDiscovery);
}

// Corpus runs (docs/corpus_runs.md): isolation, limits, -j and Slurm.
void add_corpus_options(CLI::App& app, GlobalOptions& g) {
  using namespace help_group;
  app.add_flag("--process-isolation", g.process_isolation,
               "Each input in its own supervised process (timeout, memory and process limits)")
      ->group(kCorpus);
  CLI::Option* use_slurm =
      app.add_flag("--use-slurm", g.use_slurm, "Each input in its own Slurm job (sbatch)")
          ->group(kCorpus);
  app.add_option("-j,--jobs", g.jobs,
                 "Inputs built at once, each isolated; benchmarks still run one at a time")
      ->check(CLI::Range(1, 1024))
      ->group(kCorpus);
  app.add_option("--timeout", g.timeout_s,
                 "Seconds per input before it is killed (default: TURNKEY_TIMEOUT_SECONDS, else "
                 "3600)")
      ->check(CLI::PositiveNumber)
      ->group(kCorpus);
  const CLI::Validator size(
      [](std::string& text) {
        try {
          parse_size(text);
        } catch (const Error& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "SIZE");
  app.add_option("--memory-limit", g.memory_limit,
                 "Memory per input, e.g. 4G: resident memory of all its processes and each "
                 "process's data size")
      ->check(size)
      ->group(kCorpus);
  app.add_option("--max-processes", g.max_processes,
                 "Processes per input before it is killed as a fork storm (default 512)")
      ->check(CLI::Range(2, 1000000))
      ->group(kCorpus);
  app.add_flag("--retry-failed", g.retry_failed,
               "Rerun inputs that failed in an earlier corpus run (complete ones are skipped)")
      ->group(kCorpus);
  app.add_option("--slurm-partition", g.slurm_partition, "sbatch --partition for --use-slurm")
      ->group(kCorpus);
  app.add_option("--slurm-account", g.slurm_account, "sbatch --account for --use-slurm")
      ->group(kCorpus);
  app.add_option("--slurm-constraint", g.slurm_constraint,
                 "sbatch --constraint for --use-slurm: node features, e.g. one CPU model")
      ->group(kCorpus);
  app.add_option("--slurm-mem", g.slurm_memory,
                 "sbatch --mem for --use-slurm (default: --memory-limit plus 256M)")
      ->group(kCorpus);
  app.add_option("--slurm-exclusive", g.slurm_exclusive,
                 "Jobs that get a whole node: benchmark (default: jobs that benchmark), always, "
                 "never")
      ->check(CLI::IsMember({"benchmark", "always", "never"}))
      ->group(kCorpus);
  app.add_option("--slurm-nodes", g.slurm_nodes,
                 "Slurm jobs at once, so whole nodes at once for jobs that benchmark (default: "
                 "all inputs)")
      ->check(CLI::Range(1, 1000000))
      ->group(kCorpus);
  app.add_option("--slurm-retries", g.slurm_retries,
                 "Times an input whose Slurm job's node failed runs again on another node "
                 "(default 2)")
      ->check(CLI::Range(0, 100))
      ->group(kCorpus);
  app.add_option("--slurm-controller-timeout", g.slurm_controller_timeout_s,
                 "Seconds the Slurm controller may stay silent before the inputs still out are "
                 "recorded slurm_unreachable (default 600)")
      ->check(CLI::Range(1.0, 1e7))
      ->group(kCorpus);
  // Every --slurm-* option needs --use-slurm: given without it, a usage error (whatever its value).
  for (CLI::Option* o : app.get_options()) {
    for (const std::string& name : o->get_lnames()) {
      if (name.rfind("slurm-", 0) == 0) o->needs(use_slurm);
    }
  }
}

}  // namespace

void add_global_options(CLI::App& app, GlobalOptions& g) {
  add_build_options(app, g);
  add_corpus_options(app, g);
}

void add_tool_grammar_options(CLI::App& app, GlobalOptions& g) {
  app.add_option("-i,--input-files", g.inputs,
                 "Inputs of the first tool: .py scripts (script.py::HASH selects models), .onnx "
                 "files, globs, .txt lists")
      ->expected(1, -1)
      ->group(help_group::kInputs);
  add_global_options(app, g);
}

void BoundTool::bind(CLI::App& app, const ToolSpec& s, bool with_choices,
                     const std::set<std::string>& skip, const std::string& group) {
  spec = &s;
  for (const OptionSpec& o : s.options) {
    if (skip.count(o.flags)) continue;
    const std::string help = option_help(o, with_choices);
    switch (o.type) {
      case OptionSpec::Type::Int:
        options[o.key] = app.add_option(o.flags, ints[o.key], help);
        break;
      case OptionSpec::Type::Float:
        options[o.key] = app.add_option(o.flags, floats[o.key], help);
        break;
      case OptionSpec::Type::String:
        options[o.key] = app.add_option(o.flags, strings[o.key], help);
        break;
      case OptionSpec::Type::List:
        options[o.key] = app.add_option(o.flags, lists[o.key], help)->expected(1, -1);
        break;
      case OptionSpec::Type::Strings:
        // One value per use (a positional input after it stays an input), any number of uses.
        options[o.key] = app.add_option(o.flags, lists[o.key], help)
                             ->expected(1)
                             ->allow_extra_args(false)
                             ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        break;
      case OptionSpec::Type::IntList:
        options[o.key] = app.add_option(o.flags, strings[o.key], help);
        int_lists.insert(o.key);
        break;
      case OptionSpec::Type::Flag:
        options[o.key] = app.add_flag(o.flags, flags[o.key], help);
        break;
    }
    if (!group.empty()) options[o.key]->group(group);
  }
}

OptionSpec::Type BoundTool::spec_type(const std::string& key) const {
  for (const OptionSpec& o : spec->options) {
    if (o.key == key) return o.type;
  }
  return OptionSpec::Type::String;
}

json BoundTool::given() const {
  json out = json::object();
  for (const auto& [key, opt] : options) {
    if (opt->count() == 0) continue;
    if (ints.count(key)) {
      out[key] = ints.at(key);
    } else if (floats.count(key)) {
      out[key] = floats.at(key);
    } else if (int_lists.count(key)) {
      // "1,2,4" -> [1, 2, 4]; text that is not stays text, for the table's check to name.
      out[key] = int_list_from_text(strings.at(key)).value_or(json(strings.at(key)));
    } else if (strings.count(key)) {
      out[key] = strings.at(key);
    } else if (lists.count(key)) {
      const auto& items = lists.at(key);
      // A Strings option used once is a string, as it was before it could be repeated.
      const bool one = spec_type(key) == OptionSpec::Type::Strings && items.size() == 1;
      out[key] = one ? json(items[0]) : json(items);
    } else if (flags.count(key)) {
      out[key] = flags.at(key);
    }
  }
  return out;
}

}  // namespace turnkey::cli
