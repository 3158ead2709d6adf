// The management commands of the command table (cli.cpp). Each takes the arguments after its
// name and returns the exit code; usage errors are thrown as UsageError. Internal to src/cli.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace turnkey::cli {

int cmd_cache(const std::vector<std::string>& args);   // cache list|stats|delete|clean|...

// What `turnkey cache` binds; its parser is built by add_cache_commands (parse and help).
struct CacheArgs {
  std::string cache_dir;
  std::vector<std::string> names;
  bool all = false;
  CLI::App *location = nullptr, *list = nullptr, *stats = nullptr, *print = nullptr,
           *del = nullptr, *clean = nullptr, *report = nullptr;
};
void add_cache_commands(CLI::App& app, CacheArgs& a);
int cmd_models(const std::vector<std::string>& args);  // models location
int cmd_system_info(const std::vector<std::string>& args);

// Every registered runtime and device with "available" or the reason it is not (system-info and
// `turnkey benchmark -h`).
// As the interpreter `python` (--python; "" = the default) sees them.
void print_runtimes_and_devices(const std::string& python = "");

}  // namespace turnkey::cli
