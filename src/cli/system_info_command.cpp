// `turnkey system-info`: facts about this machine and the software turnkey found; also the
// runtime and device list of `turnkey benchmark -h`.
#include <iostream>

#include <fmt/format.h>

#include "cli_args.h"
#include "commands.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/env.h"
#include "turnkey/common/files.h"
#include "turnkey/common/version.h"
#include "turnkey/discovery/interpreter.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/machine/system_info.h"
#include "turnkey/runtime/plugin_host.h"
#include "turnkey/runtime/runtime.h"
#include "turnkey/runtime/runtime_module.h"

namespace turnkey::cli {

namespace fs = std::filesystem;

// Every registered runtime and device with "available" or the reason it is not (system-info and
// `turnkey benchmark -h`).
void print_runtimes_and_devices(const std::string& python) {
  std::cout << "Runtimes:\n";
  for (const Runtime* r : runtime_registry()) {
    Availability a = r->probe_for(PythonSide{python});
    std::string what = fmt::format("{}{} on {}", r->display_name(),
                                   a.available ? " " + r->version_for(PythonSide{python}) : std::string(""),
                                   fmt::join(r->devices(), ", "));
    std::cout << fmt::format("  {:<16}{}: {}\n", r->name(), what,
                             a.available ? "available" : "unavailable: " + a.reason);
    if (!a.available) continue;
    // A device the runtime lists but this build of it cannot use (docs/gpu.md).
    for (const std::string& device : r->devices()) {
      if (Availability d = r->probe_device(device, PythonSide{python}); !d.available) {
        std::cout << fmt::format("  {:<16}on {}: unavailable: {}\n", "", device, d.reason);
      }
    }
  }
  std::cout << "Devices:\n";
  for (const Device& d : device_registry()) {
    Availability a = d.probe();
    std::cout << fmt::format("  {:<16}{}: {}\n", d.name, d.description,
                             a.available ? "available" : "unavailable: " + a.reason);
  }
}

namespace {

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

}  // namespace

int cmd_system_info(const std::vector<std::string>& args) {
  CLI::App app("Print facts about this machine and the software turnkey found",
               program_name() + " system-info");
  std::string python;
  std::string cache_dir;
  app.add_option("--python", python, "Python interpreter with torch");
  app.add_option("-d,--cache-dir", cache_dir,
                 "The cache to name (default: TURNKEY_CACHE_DIR, else ~/.cache/turnkey)");
  if (!cli::parse_args(app, args, "system-info")) return 0;
  MachineFacts m = machine_facts();
  auto line = [](const std::string& k, const std::string& v) {
    std::cout << fmt::format("{:<18}{}\n", k + ":", v);
  };
  line("turnkey", kVersion);
  line("OS", m.os.empty() ? "unknown" : m.os);
  line("Kernel", m.kernel);
  line("CPU", m.cpu.model);
  line("Cores", fmt::format("{} physical (kernel topology{}), {} logical", m.cpu.physical_cores,
                            m.cpu.cpuinfo_cores > 0 && m.cpu.cpuinfo_cores != m.cpu.physical_cores
                                ? fmt::format("; libcpuinfo counts {}", m.cpu.cpuinfo_cores)
                                : "",
                            m.cpu.logical_cpus));
  const CpuBudget budget = cpu_budget();
  line("Default threads", fmt::format("{} ({})", budget.default_threads, budget.basis));
  line("CPU quota", budget.quota_cpus > 0
                        ? fmt::format("{:.2f} CPUs ({})", budget.quota_cpus, budget.quota_source)
                        : "none");
  line("ISA", m.cpu.isa_flags.empty() ? "unknown" : fmt::format("{}", fmt::join(m.cpu.isa_flags, " ")));
  line("Memory", format_bytes(static_cast<double>(m.memory_bytes)));
  line("Governor", m.governor.empty() ? "not readable" : m.governor);
  line("Load average", fmt::format("{:.2f}", m.load_average_1m));
  line("Python", python_versions(python));
  // Where a run keeps what it writes: the cache, and the per-machine records outside it.
  line("Cache dir", resolve_cache_dir(cache_dir).string());
  line("State dir", state_dir().string() +
                        " (machine_speed.json, interpreters.json; TURNKEY_STATE_DIR moves it)");
  print_runtimes_and_devices(python);
  print_runtime_modules(std::cout);
  print_plugins(std::cout);
  return 0;
}

}  // namespace turnkey::cli
