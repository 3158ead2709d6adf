#include "turnkey/cli/cli.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "turnkey/cache/build_cache.h"
#include "turnkey/cache/cache_admin.h"
#include "turnkey/engine/report_printer.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/process.h"
#include "turnkey/common/version.h"
#include "turnkey/discovery/interpreter.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/engine/corpus.h"
#include "turnkey/engine/engine.h"
#include "turnkey/engine/tools.h"
#include "turnkey/measure/system_info.h"
#include "turnkey/plugin/plugin_host.h"
#include "turnkey/report/report_cli.h"
#include "turnkey/runtime/runtime.h"
#include "turnkey/runtime/runtime_module.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A usage error: printed as one line, exit code 2.
struct UsageError : Error {
  explicit UsageError(const std::string& m) : Error(ErrorKind::InvalidInput, m) {}
};

std::vector<std::string> all_tool_names() {
  std::vector<std::string> names;
  for (const ToolSpec& s : tool_specs()) names.push_back(s.name);
  return names;
}

bool is_sequence_tool_name(const std::string& token) {
  const ToolSpec* s = find_tool(token);
  return s && s->group != ToolGroup::Management;
}

// Global options shared by both grammars, bound to `g`.
void add_global_options(CLI::App& app, GlobalOptions& g) {
  app.add_option("-d,--cache-dir", g.cache_dir,
                 "Cache directory (default: TURNKEY_CACHE_DIR, else ~/.cache/turnkey)");
  app.add_option("--labels", g.labels, "Only scripts whose labels match all of key::value ...")
      ->expected(1, -1);
  app.add_option("--rebuild", g.rebuild, "Cache policy: if_needed, always, never")
      ->check(CLI::IsMember({"if_needed", "always", "never"}));
  app.add_flag("--lean-cache", g.lean_cache, "Delete build artifacts, keep logs and yaml/json");
  app.add_option("--python", g.python,
                 "Python interpreter with torch (default: TURNKEY_PYTHON, python3, /usr/bin/python3)");
  // Corpus runs (docs/corpus_runs.md).
  app.add_flag("--process-isolation", g.process_isolation,
               "Each input in its own supervised process (timeout, memory and process limits)");
  app.add_flag("--use-slurm", g.use_slurm, "Each input in its own Slurm job (sbatch)");
  app.add_option("-j,--jobs", g.jobs,
                 "Inputs built at once, each isolated; benchmarks still run one at a time")
      ->check(CLI::Range(1, 1024));
  app.add_option("--timeout", g.timeout_s,
                 "Seconds per input before it is killed (default: TURNKEY_TIMEOUT_SECONDS, else "
                 "3600)")
      ->check(CLI::PositiveNumber);
  app.add_option("--memory-limit", g.memory_limit,
                 "Memory per input, e.g. 4G: resident memory of all its processes and each "
                 "process's data size");
  app.add_option("--max-processes", g.max_processes,
                 "Processes per input before it is killed as a fork storm (default 512)")
      ->check(CLI::Range(2, 1000000));
  app.add_flag("--retry-failed", g.retry_failed,
               "Rerun inputs that failed in an earlier corpus run (complete ones are skipped)");
  app.add_option("--slurm-partition", g.slurm_partition, "sbatch --partition for --use-slurm");
  app.add_option("--slurm-mem", g.slurm_memory,
                 "sbatch --mem for --use-slurm (default: --memory-limit plus 256M)");
}

// Adds a tool's options to `app`, storing parsed values into `values` after parsing.
struct BoundTool {
  const ToolSpec* spec = nullptr;
  std::map<std::string, std::string> strings;
  std::map<std::string, std::vector<std::string>> lists;
  std::map<std::string, long long> ints;
  std::map<std::string, double> floats;
  std::map<std::string, bool> flags;
  std::map<std::string, CLI::Option*> options;

  void bind(CLI::App& app, const ToolSpec& s, const std::set<std::string>& skip = {}) {
    spec = &s;
    for (const OptionSpec& o : s.options) {
      if (skip.count(o.flags)) continue;
      std::string help = o.help;
      if (!o.default_value.is_null() && !(o.default_value.is_string() &&
                                         o.default_value.get<std::string>().empty()) &&
          !o.default_value.is_array()) {
        help += fmt::format(" (default: {})", o.default_value.is_string()
                                                  ? o.default_value.get<std::string>()
                                                  : o.default_value.dump());
      }
      switch (o.type) {
        case OptionSpec::Type::Int: options[o.key] = app.add_option(o.flags, ints[o.key], help); break;
        case OptionSpec::Type::Float:
          options[o.key] = app.add_option(o.flags, floats[o.key], help);
          break;
        case OptionSpec::Type::String:
          options[o.key] = app.add_option(o.flags, strings[o.key], help);
          break;
        case OptionSpec::Type::List:
          options[o.key] = app.add_option(o.flags, lists[o.key], help)->expected(1, -1);
          break;
        case OptionSpec::Type::Flag: options[o.key] = app.add_flag(o.flags, flags[o.key], help); break;
      }
    }
  }

  // Only options the user gave: defaults are filled later by the engine from the table.
  json given() const {
    json out = json::object();
    for (const auto& [key, opt] : options) {
      if (opt->count() == 0) continue;
      if (ints.count(key)) out[key] = ints.at(key);
      else if (floats.count(key)) out[key] = floats.at(key);
      else if (strings.count(key)) out[key] = strings.at(key);
      else if (lists.count(key)) out[key] = lists.at(key);
      else if (flags.count(key)) out[key] = flags.at(key);
    }
    return out;
  }
};

std::string closest_option(const CLI::App& app, const std::string& given) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
  }
  std::string bare = given.substr(0, given.find('='));
  return closest_name(bare, names);
}

// CLI11 parse with our one-line errors. Returns false when help was printed.
bool parse_app(CLI::App& app, std::vector<std::string> args, const std::string& context) {
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return false;
  } catch (const CLI::ExtrasError& e) {
    std::vector<std::string> extras = app.remaining();
    std::string first = extras.empty() ? "" : extras.front();
    std::string hint;
    if (!first.empty() && first[0] == '-') {
      std::string c = closest_option(app, first);
      hint = c.empty() ? "" : fmt::format(" (did you mean '{}'?)", c);
      throw UsageError(fmt::format("{}: unknown option '{}'{}", context, first, hint));
    }
    std::string c = closest_name(first, all_tool_names());
    hint = c.empty() ? "" : fmt::format(" (did you mean '{}'?)", c);
    throw UsageError(fmt::format("{}: unexpected argument '{}'{}", context, first, hint));
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    throw UsageError(fmt::format("{}: {}", context, msg));
  }
  return true;
}

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

// ---- management tools ------------------------------------------------------------------------

int cmd_version(const std::vector<std::string>& args) {
  CLI::App app("Print the turnkey version", "turnkey version");
  if (!parse_app(app, args, "version")) return 0;
  std::cout << kVersion << "\n";
  return 0;
}

int cmd_cache(const std::vector<std::string>& args) {
  CLI::App app("Manage the turnkey cache", "turnkey cache");
  std::string cache_dir;
  std::vector<std::string> names;
  bool all = false;
  app.add_option("-d,--cache-dir", cache_dir, "Cache directory");
  auto add = [&](const char* name, const char* help, bool takes_builds) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->add_option("-d,--cache-dir", cache_dir, "Cache directory");
    if (takes_builds) {
      sub->add_option("builds", names, "Build names");
      sub->add_flag("--all", all, "Every build in the cache");
    }
    return sub;
  };
  CLI::App* location = add("location", "Print the cache directory", false);
  CLI::App* list = add("list", "List the builds in the cache", false);
  CLI::App* stats = add("stats", "Print the stats of builds (turnkey_stats.yaml)", true);
  CLI::App* print = add("print", "Alias of stats", true);
  CLI::App* del = add("delete", "Delete builds (their whole build dirs)", true);
  CLI::App* clean = add("clean", "Delete builds' artifacts, keeping logs, yaml and json", true);
  app.require_subcommand(1);
  if (!parse_app(app, args, "cache")) return 0;
  const fs::path cache = resolve_cache_dir(cache_dir);
  if (location->parsed()) {
    std::cout << cache.string() << "\n";
    return 0;
  }
  if (list->parsed()) {
    std::vector<BuildSummary> builds = list_builds(cache);
    if (builds.empty()) {
      std::cout << "No builds in " << cache.string() << "\n";
      return 0;
    }
    std::cout << fmt::format("{:<44} {:<11} {:<24} {:<8} {:>12}\n", "build", "status", "model",
                             "runtime", "median (ms)");
    for (const BuildSummary& b : builds) {
      auto str = [](const json& j, const char* k) {
        return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>()
                                                                  : std::string("-");
      };
      std::string median = "-";
      if (b.stats.is_object() && b.stats.contains("median_latency_ms") &&
          b.stats["median_latency_ms"].is_number()) {
        median = format_latency(b.stats["median_latency_ms"].get<double>());
      }
      std::cout << fmt::format("{:<44} {:<11} {:<24} {:<8} {:>12}\n", b.name,
                               b.problem.empty() ? str(b.state, "build_status") : "unreadable",
                               str(b.stats, "model_name"), str(b.stats, "runtime"), median);
    }
    return 0;
  }
  // The rest act on named builds or --all.
  std::vector<fs::path> dirs;
  if (all) {
    if (!names.empty()) throw UsageError("cache: give build names or --all, not both");
    for (const BuildSummary& b : list_builds(cache)) dirs.push_back(b.dir);
  } else {
    if (names.empty()) throw UsageError("cache: name at least one build, or give --all");
    for (const std::string& n : names) {
      try {
        dirs.push_back(existing_build_dir(cache, n));
      } catch (const Error& e) {
        throw UsageError(std::string("cache: ") + e.what());
      }
    }
  }
  if (stats->parsed() || print->parsed()) {
    for (const fs::path& d : dirs) {
      std::cout << "# " << d.filename().string() << "\n";
      try {
        std::cout << read_file(d / "turnkey_stats.yaml") << "\n";
      } catch (const Error& e) {
        std::cout << "# no stats: " << e.what() << "\n\n";
      }
    }
  } else if (del->parsed()) {
    for (const fs::path& d : dirs) {
      delete_build(cache, d.filename().string());
      std::cout << "Deleted " << d.filename().string() << "\n";
    }
    if (all) {
      std::error_code ec;
      fs::remove_all(cache / "discovery_logs", ec);
    }
  } else if (clean->parsed()) {
    for (const fs::path& d : dirs) {
      uintmax_t freed = clean_build(d);
      std::cout << fmt::format("Cleaned {} ({} freed)\n", d.filename().string(),
                               format_bytes(static_cast<double>(freed)));
    }
  }
  return 0;
}

// Where the bundled corpora are: <install>/models, found beside the Python package folder.
int cmd_models(const std::vector<std::string>& args) {
  CLI::App app("The bundled model corpora", "turnkey models");
  bool quiet = false;
  CLI::App* location = app.add_subcommand("location", "Print the folder of the model corpora");
  location->add_flag("--quiet", quiet, "Print only the path");
  app.require_subcommand(1);
  if (!parse_app(app, args, "models")) return 0;
  fs::path models = python_package_dir().parent_path() / "models";
  if (quiet) {
    std::cout << models.string() << "\n";
  } else {
    std::cout << "The turnkey model corpora are in: " << models.string() << "\n";
  }
  return 0;
}

// Every registered runtime and device with "available" or the reason it is not (system-info and
// `turnkey benchmark -h`), as the interpreter `python` ("" = the default) sees them.
void print_runtimes_and_devices(const std::string& python = "") {
  std::cout << "Runtimes:\n";
  for (const Runtime* r : runtime_registry()) {
    Availability a = r->probe_for(PythonSide{python});
    std::string what = fmt::format("{}{} on {}", r->display_name(),
                                   a.available ? " " + r->version_for(PythonSide{python}) : std::string(""),
                                   fmt::join(r->devices(), ", "));
    std::cout << fmt::format("  {:<16}{}: {}\n", r->name(), what,
                             a.available ? "available" : "unavailable: " + a.reason);
  }
  std::cout << "Devices:\n";
  for (const Device& d : device_registry()) {
    Availability a = d.probe();
    std::cout << fmt::format("  {:<16}{}: {}\n", d.name, d.description,
                             a.available ? "available" : "unavailable: " + a.reason);
  }
}

std::string python_versions(const std::string& override_python) {
  try {
    const PythonInterpreter& p = find_interpreter(override_python);
    return fmt::format("{}{} (Python {}, from {}): torch {}, onnx {}", p.path,
                       p.path == p.candidate ? "" : " via " + p.candidate, p.python_version,
                       p.source, p.torch_version, p.onnx_version.empty() ? "not found" : p.onnx_version);
  } catch (const Error& e) {
    return std::string("unavailable: ") + e.what();
  }
}

// Runtimes whose heavy library lives in a module of its own (runtime_module.h), loaded here to
// say whether it can be.
void print_runtime_modules(std::ostream& out) {
  out << "Runtime modules:\n";
  for (const RuntimeModuleInfo& info : runtime_module_table()) {
    if (!info.built) {
      out << fmt::format("  {:<16}not built (its library was missing at build time)\n",
                         info.runtime);
      continue;
    }
    const RuntimeModuleStatus& m = load_runtime_module(info.runtime);
    out << fmt::format("  {:<16}{}\n", info.runtime,
                       m.module ? fmt::format("{} ({} {})", m.path.string(), info.runtime,
                                              m.module->library_version)
                                : "cannot be loaded: " + m.problem);
  }
}

// The plugin libraries looked at (docs/plugins.md), loaded or refused, and where we looked.
void print_plugins(std::ostream& out) {
  const std::vector<PluginRecord>& records = plugin_records();
  std::vector<std::string> path;
  for (const fs::path& p : plugin_search_path()) path.push_back(p.string());
  out << fmt::format("Plugins:          {}\n",
                     records.empty() ? "none found" : std::to_string(records.size()) + " found");
  for (const PluginRecord& r : records) {
    out << fmt::format("  {}: {}\n", r.library.string(),
                       r.problem.empty() ? "runtime " + r.runtime_name : "refused: " + r.problem);
  }
  out << fmt::format("  searched: {}\n", fmt::join(path, ":"));
}

int cmd_system_info(const std::vector<std::string>& args) {
  CLI::App app("Print facts about this machine and the software turnkey found",
               "turnkey system-info");
  std::string python;
  app.add_option("--python", python, "Python interpreter with torch");
  if (!parse_app(app, args, "system-info")) return 0;
  MachineFacts m = machine_facts();
  auto line = [](const std::string& k, const std::string& v) {
    std::cout << fmt::format("{:<18}{}\n", k + ":", v);
  };
  line("turnkey", kVersion);
  line("OS", m.os.empty() ? "unknown" : m.os);
  line("Kernel", m.kernel);
  line("CPU", m.cpu.model);
  line("Cores", fmt::format("{} physical, {} logical", m.cpu.physical_cores, m.cpu.logical_cpus));
  line("ISA", m.cpu.isa_flags.empty() ? "unknown" : fmt::format("{}", fmt::join(m.cpu.isa_flags, " ")));
  line("Memory", format_bytes(static_cast<double>(m.memory_bytes)));
  line("Governor", m.governor.empty() ? "not readable" : m.governor);
  line("Load average", fmt::format("{:.2f}", m.load_average_1m));
  line("Python", python_versions(python));
  print_runtimes_and_devices(python);
  print_runtime_modules(std::cout);
  print_plugins(std::cout);
  return 0;
}

// ---- the two grammars -----------------------------------------------------------------------

std::string join_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    s += argv[i];
  }
  return s;
}

// Inputs that do not exist but look like a mistyped tool name get a usage error.
void check_inputs_for_tool_typos(const std::vector<std::string>& inputs) {
  for (const std::string& in : inputs) {
    if (in.find_first_of("./*?:") != std::string::npos) continue;
    std::error_code ec;
    if (fs::exists(in, ec)) continue;
    std::string c = closest_name(in, all_tool_names());
    if (!c.empty()) {
      throw UsageError(fmt::format("unknown tool '{}' (did you mean '{}'?)", in, c));
    }
  }
}

// A YAML list: each item a tool name, or a one-key map {tool: {option: value}}.
std::vector<ToolCall> read_sequence_file(const std::string& path) {
  json doc;
  try {
    doc = json_from_yaml(read_file(path));
  } catch (const Error& e) {
    throw UsageError(fmt::format("--sequence-file {}: {}", path, e.what()));
  }
  if (!doc.is_array() || doc.empty()) {
    throw UsageError(fmt::format("--sequence-file {}: expected a YAML list of tools", path));
  }
  std::vector<ToolCall> calls;
  for (const json& item : doc) {
    ToolCall call;
    if (item.is_string()) {
      call.name = item.get<std::string>();
    } else if (item.is_object() && item.size() == 1) {
      call.name = item.begin().key();
      if (item.begin().value().is_object()) call.options = item.begin().value();
      else if (!item.begin().value().is_null()) {
        throw UsageError(fmt::format("--sequence-file {}: options of {} must be a map", path,
                                     call.name));
      }
    } else {
      throw UsageError(fmt::format("--sequence-file {}: each item is a tool name or "
                                   "{{tool: {{option: value}}}}", path));
    }
    const ToolSpec* spec = find_tool(call.name);
    if (!spec || spec->group != ToolGroup::Sequence) {
      std::string c = closest_name(call.name, all_tool_names());
      throw UsageError(fmt::format("--sequence-file {}: '{}' is not a sequence tool{}", path,
                                   call.name,
                                   c.empty() ? "" : fmt::format(" (did you mean '{}'?)", c)));
    }
    for (const auto& [key, value] : call.options.items()) {
      bool known = std::any_of(spec->options.begin(), spec->options.end(),
                               [&](const OptionSpec& o) { return o.key == key; });
      if (!known) {
        throw UsageError(fmt::format("--sequence-file {}: {} has no option '{}'", path,
                                     call.name, key));
      }
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

int run_tool_grammar(const std::vector<std::string>& args, const std::string& command_line) {
  // Split at tool names: [global...] TOOL [opts...] TOOL [opts...] ...
  std::vector<std::vector<std::string>> segments(1);
  std::vector<std::string> tools;
  for (const std::string& a : args) {
    if (is_sequence_tool_name(a)) {
      tools.push_back(a);
      segments.emplace_back();
    } else {
      segments.back().push_back(a);
    }
  }
  RunRequest request;
  request.command_line = command_line;
  CLI::App global("turnkey global options", "turnkey");
  global.set_help_flag("-h,--help");
  global.add_option("-i,--input-files", request.global.inputs, "Inputs for the first tool")
      ->expected(1, -1);
  add_global_options(global, request.global);
  if (!parse_app(global, segments[0], "turnkey")) return 0;
  check_inputs_for_tool_typos(request.global.inputs);
  if (tools.empty()) {
    throw UsageError("no tool given: name a first tool such as discover or load-onnx (see turnkey -h)");
  }
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolSpec* spec = find_tool(tools[i]);
    CLI::App app(spec->help, "turnkey " + spec->name);
    BoundTool bound;
    bound.bind(app, *spec);
    if (!parse_app(app, segments[i + 1], spec->name)) return 0;
    request.sequence.push_back({spec->name, bound.given()});
  }
  if (request.global.inputs.empty()) {
    throw UsageError("no inputs: give them with -i/--input-files");
  }
  try {
    check_sequence(tools);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  return run_sequence(request);
}

bool is_live_runtime(const json& benchmark_options) {
  if (!benchmark_options.contains("runtime") || !benchmark_options["runtime"].is_string()) {
    return false;
  }
  const Runtime* r = find_runtime(benchmark_options["runtime"].get<std::string>());
  return r && r->needs_live_model();
}

int run_classic_grammar(std::vector<std::string> args, const std::string& command_line) {
  if (!args.empty() && args.front() == "benchmark") args.erase(args.begin());
  RunRequest request;
  request.command_line = command_line;
  CLI::App app("Benchmark the models in scripts and ONNX files", "turnkey benchmark");
  app.add_option("inputs", request.global.inputs, "Scripts, ONNX files, globs, .txt lists");
  add_global_options(app, request.global);
  app.add_option("-s,--search-dir", request.global.search_dir, "Folder the inputs are in");
  bool all = false, analyze_only = false, build_only = false;
  app.add_flag("--all", all, "Every .py script in --search-dir");
  app.add_flag("--analyze-only", analyze_only, "Discover and list models; no build or benchmark");
  app.add_flag("--build-only", build_only, "Discover and build models; no benchmark");
  BoundTool discover, load, exporter, bench;
  discover.bind(app, *find_tool("discover"));
  load.bind(app, *find_tool("load-onnx"));
  exporter.bind(app, *find_tool("export-pytorch"), {"--opset"});
  long long opset = 0;
  CLI::Option* opset_opt = app.add_option("--onnx-opset,--opset", opset, "ONNX opset for export");
  bench.bind(app, *find_tool("benchmark"));
  std::string sequence_name, sequence_file;
  std::string sequence_names;
  for (const auto& [name, tools] : named_sequences()) {
    sequence_names += (sequence_names.empty() ? "" : ", ") + name;
  }
  app.add_option("--sequence", sequence_name,
                 "Named build sequence: " + sequence_names + " (default: onnx-fp32)");
  app.add_option("--sequence-file", sequence_file,
                 "YAML list of tools with options, e.g. [export-pytorch, {optimize-ort: {level: "
                 "extended}}]");
  if (!parse_app(app, args, "turnkey")) return 0;
  if (!sequence_name.empty() && !sequence_file.empty()) {
    throw UsageError("--sequence and --sequence-file exclude each other");
  }
  if (analyze_only && build_only) {
    throw UsageError("--analyze-only and --build-only exclude each other");
  }
  if (all) {
    std::string dir = request.global.search_dir.empty() ? "." : request.global.search_dir;
    request.global.inputs.push_back((fs::path(dir) / "*.py").string());
    request.global.search_dir.clear();
  }
  if (request.global.inputs.empty()) throw UsageError("no inputs given (see turnkey -h)");
  check_inputs_for_tool_typos(request.global.inputs);
  json first_options = discover.given();
  first_options.update(load.given());
  request.sequence.push_back({"auto", json::object()});
  request.sequence.push_back({"discover", discover.given()});
  request.sequence.push_back({"load-onnx", load.given()});
  if (!analyze_only) {
    json export_options = exporter.given();
    if (opset_opt->count()) export_options["opset"] = opset;
    std::vector<ToolCall> build_tools;
    if (!sequence_file.empty()) {
      build_tools = read_sequence_file(sequence_file);
    } else if (sequence_name.empty() && is_live_runtime(bench.given())) {
      // torch-eager, torchscript, torch-compiled start from the live model: no ONNX export
      // unless a sequence asks for one (the reference outputs come from the Python side).
    } else {
      std::string name = sequence_name.empty() ? "onnx-fp32" : sequence_name;
      const std::vector<std::string>* tools = nullptr;
      for (const auto& [n, t] : named_sequences()) {
        if (n == name) tools = &t;
      }
      if (!tools) {
        std::vector<std::string> names;
        for (const auto& [n, t] : named_sequences()) names.push_back(n);
        std::string c = closest_name(name, names);
        throw UsageError(fmt::format("--sequence {}: unknown (known: {}){}", name,
                                     sequence_names,
                                     c.empty() ? "" : fmt::format("; did you mean '{}'?", c)));
      }
      for (const std::string& t : *tools) build_tools.push_back({t, json::object()});
    }
    for (ToolCall& call : build_tools) {
      if (call.name == "export-pytorch") call.options.update(export_options);
      if (call.name == "benchmark" && build_only) continue;
      request.sequence.push_back(call);
    }
    bool has_benchmark = std::any_of(build_tools.begin(), build_tools.end(),
                                     [](const ToolCall& c) { return c.name == "benchmark"; });
    if (!build_only && !has_benchmark) request.sequence.push_back({"benchmark", bench.given()});
    // Checked as for a script (discover first), the sequence also holds for ONNX inputs, which
    // skip the PyTorch-only tools.
    std::vector<std::string> names = {"discover"};
    for (size_t i = 3; i < request.sequence.size(); ++i) names.push_back(request.sequence[i].name);
    try {
      check_sequence(names);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  return run_sequence(request);
}

}  // namespace

int cli_main(int argc, char** argv) {
  // The Python side may die while we write to it: get EPIPE, not a fatal signal.
  signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  const std::string command_line = join_command_line(argc, argv);
  try {
    // Hidden entry points of corpus runs (the parent re-runs this binary on one input).
    if (!args.empty() && args.front() == "__worker") {
      return corpus_worker_main(std::vector<std::string>(args.begin() + 1, args.end()));
    }
    if (!args.empty() && args.front() == "__isolate") {
      return corpus_isolate_main(std::vector<std::string>(args.begin() + 1, args.end()));
    }
    validate_environment();
    if (args.empty() || args.front() == "-h" || args.front() == "--help") {
      print_main_help();
      return args.empty() ? 2 : 0;
    }
    if (args.front() == "--version") return cmd_version({});
    const std::string& first = args.front();
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (first == "version") return cmd_version(rest);
    if (first == "report") return report::report_main(rest);
    if (first == "compare") return report::compare_main(rest);
    if (first == "cache" && !rest.empty() && rest.front() == "report") {
      return report::report_main(std::vector<std::string>(rest.begin() + 1, rest.end()));
    }
    if (first == "cache") return cmd_cache(rest);
    if (first == "models") return cmd_models(rest);
    if (first == "system-info") return cmd_system_info(rest);
    // `turnkey TOOL -h`
    if (find_tool(first) && rest.size() == 1 && (rest[0] == "-h" || rest[0] == "--help")) {
      const ToolSpec* spec = find_tool(first);
      CLI::App app(spec->help, "turnkey " + spec->name);
      BoundTool bound;
      bound.bind(app, *spec);
      std::cout << app.help();
      if (spec->name == "benchmark") print_runtimes_and_devices();
      return 0;
    }
    bool tool_grammar = std::find(args.begin(), args.end(), "-i") != args.end() ||
                        std::find(args.begin(), args.end(), "--input-files") != args.end() ||
                        std::any_of(args.begin(), args.end(), [](const std::string& a) {
                          return a.rfind("--input-files=", 0) == 0;
                        });
    if (tool_grammar) return run_tool_grammar(args, command_line);
    if (first != "benchmark" && is_sequence_tool_name(first)) {
      throw UsageError(fmt::format("'{}' needs inputs: turnkey -i INPUT... {} ...", first, first));
    }
    if (first.size() > 1 && first[0] == '-' && first != "benchmark") {
      // Options before inputs are fine in the classic grammar; fall through.
    }
    return run_classic_grammar(args, command_line);
  } catch (const UsageError& e) {
    std::cout << std::flush;
    std::cerr << "turnkey: error: " << e.what() << "\n";
    return 2;
  } catch (const Error& e) {
    std::cout << std::flush;
    std::cerr << "turnkey: error: " << e.what() << "\n";
    return e.kind() == ErrorKind::InvalidInput ? 2 : 1;
  }
}

}  // namespace turnkey
