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
#include "turnkey/discovery/python_side.h"
#include "turnkey/engine/report_printer.h"
#include "turnkey/report/cache_list.h"

namespace turnkey::cli {

namespace fs = std::filesystem;
using nlohmann::json;

int cmd_cache(const std::vector<std::string>& args) {
  // `cache report` is `report` (the reference tool's spelling).
  if (!args.empty() && args.front() == "report") {
    return report_main(std::vector<std::string>(args.begin() + 1, args.end()));
  }
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
  if (!cli::parse_args(app, args, "cache")) return 0;
  const fs::path cache = resolve_cache_dir(cache_dir);
  if (location->parsed()) {
    std::cout << cache.string() << "\n";
    return 0;
  }
  if (list->parsed()) {
    std::cout << report::cache_list_text(cache);
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
