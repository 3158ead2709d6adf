#include "turnkey/runtime/runtime.h"

#include "ort/ort_runtime.h"
#include "turnkey/plugin/plugin_host.h"

namespace turnkey {

// The one list of runtimes. Add a runtime here and nowhere else.
const std::vector<const Runtime*>& runtime_registry() {
  static const std::vector<const Runtime*> registry = {&ort_runtime()};
  // Plugin runtimes (docs/plugins.md) follow the built-in ones, loaded once on first use.
  static const std::vector<const Runtime*> with_plugins = [] {
    std::vector<const Runtime*> all = registry;
    for (const Runtime* r : load_plugin_runtimes(registry)) all.push_back(r);
    return all;
  }();
  return with_plugins;
}

const Runtime* find_runtime(const std::string& name) {
  for (const Runtime* r : runtime_registry()) {
    if (r->name() == name) return r;
  }
  return nullptr;
}

std::vector<std::string> runtime_names() {
  std::vector<std::string> names;
  for (const Runtime* r : runtime_registry()) names.push_back(r->name());
  return names;
}

}  // namespace turnkey
