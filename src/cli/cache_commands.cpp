// The management tools for caches and the bundled corpora: `turnkey cache ...` and
// `turnkey models ...`.
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "cli_args.h"
#include "commands.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/cache/cache_admin.h"
#include "turnkey/cli/report_commands.h"
#include "turnkey/common/files.h"
#include "turnkey/common/text.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/console/report_printer.h"
#include "turnkey/report/cache_list.h"

namespace turnkey::cli {

namespace fs = std::filesystem;
using nlohmann::json;

void add_cache_commands(CLI::App& app, CacheArgs& a) {
  app.add_option("-d,--cache-dir", a.cache_dir,
                 "Cache directory (default: TURNKEY_CACHE_DIR, else ~/.cache/turnkey)");
  auto add = [&](const char* name, const char* help, bool takes_builds) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->add_option("-d,--cache-dir", a.cache_dir, "Cache directory");
    if (takes_builds) {
      sub->add_option("builds", a.names, "Build names");
      sub->add_flag("--all", a.all, "Every build in the cache");
    }
    return sub;
  };
  a.location = add("location", "Print the cache directory", false);
  a.list = add("list", "List the builds in the cache", false);
  a.stats = add("stats",
                "Print the state of builds (status, sequence, tools and their times) and their "
                "stats",
                true);
  a.print = add("print", "Alias of stats", true);
  a.del = add("delete", "Delete builds (their whole build dirs)", true);
  a.clean = add("clean", "Delete builds' artifacts, keeping logs, yaml and json", true);
  a.report = app.add_subcommand(
      "report", fmt::format("Write CSV, JSON and (--html) HTML reports: {0} report (see {0} "
                            "report -h)",
                            program_name()));
  a.report->prefix_command();  // everything after it is report's
}

namespace {

std::string text_or(const json& j, const char* key, const std::string& fallback = "-") {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return fallback;
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

// The state at a glance: status, sequence, each tool with its status and time, the failure.
std::string state_summary(const json& state) {
  std::string out = fmt::format("build_status: {}\n", text_or(state, "build_status"));
  std::vector<std::string> sequence;
  for (const json& t : state.value("sequence", json::array())) {
    sequence.push_back(t.is_string() ? t.get<std::string>() : t.dump());
  }
  out += fmt::format("sequence:     {}\n", fmt::join(sequence, ", "));
  if (state.contains("tools") && state["tools"].is_array()) {
    out += "tools:\n";
    for (const json& t : state["tools"]) {
      if (!t.is_object()) continue;
      const json& d = t.contains("duration_s") ? t["duration_s"] : json();
      const std::string time = d.is_number() ? fmt::format("{:.3f} s", d.get<double>()) : "-";
      out += fmt::format("  {:<16} {:<12} {:>10}{}\n", text_or(t, "name"), text_or(t, "status"),
                         time, t.value("reused", false) ? "  (reused from cache)" : "");
    }
  }
  if (state.contains("error")) {
    out += fmt::format("error:        {} (at {})\n", text_or(state, "error"),
                       text_or(state, "failed_tool"));
  }
  out += fmt::format("started:      {}\nfinished:     {}\n", text_or(state, "started"),
                     text_or(state, "finished"));
  return out;
}

void print_build(const fs::path& cache, const fs::path& dir) {
  const std::string name = dir.filename().string();
  std::cout << fmt::format("Info: The state of build {} in cache {} is:\n", name, cache.string());
  const fs::path state_file = dir / (name + "_state.yaml");
  try {
    const std::string text = read_file(state_file);
    try {
      std::cout << state_summary(json_from_yaml(text));
    } catch (const Error& e) {
      std::cout << "(state unreadable: " << one_line(e.what()) << ")\n";
    }
    std::cout << fmt::format("\n# {}\n{}", state_file.string(), text);
  } catch (const Error& e) {
    std::cout << "(no state: " << one_line(e.what()) << ")\n";
  }
  const fs::path stats_file = dir / "turnkey_stats.yaml";
  try {
    std::cout << fmt::format("\n# {}\n{}", stats_file.string(), read_file(stats_file));
  } catch (const Error& e) {
    std::cout << "\n(no stats: " << one_line(e.what()) << ")\n";
  }
  std::cout << "\n";
}

}  // namespace

int cmd_cache(const std::vector<std::string>& args) {
  // `cache report` is `report` (the reference tool's spelling).
  if (!args.empty() && args.front() == "report") {
    return report_main(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  CLI::App app("Manage the turnkey cache", program_name() + " cache");
  CacheArgs a;
  add_cache_commands(app, a);
  if (!cli::parse_args(app, args, "cache")) return 0;
  if (a.report->parsed()) {  // `cache -d DIR report ...`
    std::vector<std::string> rest = a.report->remaining();
    if (!a.cache_dir.empty()) rest.insert(rest.begin(), {"-d", a.cache_dir});
    return report_main(rest);
  }
  if (app.get_subcommands().empty()) {
    throw UsageError("cache: name a command: location, list, stats, print, delete, clean, report");
  }
  const fs::path cache = resolve_cache_dir(a.cache_dir);
  if (a.location->parsed()) {
    std::cout << cache.string() << "\n";
    return 0;
  }
  // A -d naming no dir is a mistake on this command line; the cache of TURNKEY_CACHE_DIR or the
  // default one before the first run just has no builds yet.
  std::error_code ec;
  if (!fs::is_directory(cache, ec) && (!a.cache_dir.empty() || fs::exists(cache, ec))) {
    throw UsageError(fmt::format("cache: cache dir {} {}", cache.string(),
                                 fs::exists(cache, ec) ? "is not a directory" : "does not exist"));
  }
  if (a.list->parsed()) {
    std::cout << report::cache_list_text(cache);
    return 0;
  }
  // The rest act on named builds or --all.
  std::vector<fs::path> dirs;
  if (a.all) {
    if (!a.names.empty()) throw UsageError("cache: give build names or --all, not both");
    for (const BuildSummary& b : list_builds(cache)) dirs.push_back(b.dir);
  } else {
    if (a.names.empty()) throw UsageError("cache: name at least one build, or give --all");
    for (const std::string& n : a.names) {
      try {
        dirs.push_back(existing_build_dir(cache, n));
      } catch (const Error& e) {
        throw UsageError(std::string("cache: ") + e.what());
      }
    }
  }
  if (a.stats->parsed() || a.print->parsed()) {
    for (const fs::path& d : dirs) print_build(cache, d);
  } else if (a.del->parsed()) {
    for (const fs::path& d : dirs) {
      delete_build(cache, d.filename().string());
      std::cout << "Deleted " << d.filename().string() << "\n";
    }
    if (a.all) {
      std::error_code ec;
      fs::remove_all(cache / "discovery_logs", ec);
    }
  } else if (a.clean->parsed()) {
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
  CLI::App app("The bundled model corpora", program_name() + " models");
  bool quiet = false;
  CLI::App* location = app.add_subcommand("location", "Print the folder of the model corpora");
  location->add_flag("--quiet", quiet, "Print only the path");
  app.require_subcommand(1);
  if (!cli::parse_args(app, args, "models")) return 0;
  fs::path models = python_package_dir().parent_path() / "models";
  if (quiet) {
    std::cout << models.string() << "\n";
  } else {
    std::cout << "The turnkey model corpora are in: " << models.string() << "\n";
  }
  return 0;
}

}  // namespace turnkey::cli
