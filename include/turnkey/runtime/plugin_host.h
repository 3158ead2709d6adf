// turnkey's side of the runtime plugin ABI (turnkey_plugin.h): finding plugin libraries,
// loading them once per process, refusing the ones that cannot be used (with a one-line reason,
// and the run goes on), and registering their runtimes in the runtime registry. Thread-safe:
// loading happens once, inside runtime_registry()'s static initialisation.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "turnkey/runtime/runtime.h"

namespace turnkey {

// One library looked at.
struct PluginRecord {
  std::filesystem::path library;
  std::string runtime_name;  // the runtime it registered; "" when refused
  std::string problem;       // one line when refused ("built for plugin ABI 2, turnkey speaks 1")
};

// Where plugins are looked for, in order: each entry of TURNKEY_PLUGIN_PATH (colon-separated
// folders or library files), then `plugins/` next to the turnkey binary, then
// `../lib/turnkey/plugins/` from the binary's folder (an installation).
std::vector<std::filesystem::path> plugin_search_path();

// Loads every plugin on the search path and returns its runtimes, skipping names already in
// `builtins`. Refusals are recorded and printed to stderr once ("turnkey: plugin X refused:
// ..."). Called once, by runtime_registry(); never throws.
std::vector<const Runtime*> load_plugin_runtimes(const std::vector<const Runtime*>& builtins);

// Every library looked at, loaded or refused (loads the registry first).
const std::vector<PluginRecord>& plugin_records();

}  // namespace turnkey
