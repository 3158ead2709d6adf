// The management commands of the command table (cli.cpp). Each takes the arguments after its
// name and returns the exit code; usage errors are thrown as UsageError. Internal to src/cli.
#pragma once

#include <string>
#include <vector>

namespace turnkey::cli {

int cmd_cache(const std::vector<std::string>& args);   // cache list|stats|delete|clean|...
int cmd_models(const std::vector<std::string>& args);  // models location
int cmd_system_info(const std::vector<std::string>& args);

// Every registered runtime and device with "available" or the reason it is not (system-info and
// `turnkey benchmark -h`).
// As the interpreter `python` (--python; "" = the default) sees them.
void print_runtimes_and_devices(const std::string& python = "");

}  // namespace turnkey::cli
