// `turnkey system-info`: facts about this machine and the software turnkey found; also the
// runtime and device list of `turnkey benchmark -h`.
#include <iostream>

#include <fmt/format.h>

#include "cli_args.h"
#include "commands.h"
#include "turnkey/common/files.h"
#include "turnkey/common/process.h"
#include "turnkey/common/version.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/measure/system_info.h"
#include "turnkey/plugin/plugin_host.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey::cli {

namespace fs = std::filesystem;

// Every registered runtime and device with "available" or the reason it is not (system-info and
// `turnkey benchmark -h`).
void print_runtimes_and_devices() {
  std::cout << "Runtimes:\n";
  for (const Runtime* r : runtime_registry()) {
    Availability a = r->probe();
    std::string what = fmt::format("{}{} on {}", r->display_name(),
                                   a.available ? " " + r->version() : std::string(""),
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

namespace {

std::string python_versions(const std::string& override_python) {
  std::string python;
  try {
    python = find_python(override_python);
  } catch (const Error& e) {
    return std::string("unavailable: ") + e.what();
  }
  CaptureResult r = run_capture(
      {python, "-c",
       "import sys\n"
       "def v(m):\n"
       "    try:\n"
       "        return __import__(m).__version__\n"
       "    except Exception as e:\n"
       "        return 'not found'\n"
       "print(sys.version.split()[0], v('torch'), v('onnx'))"},
      60.0);
  if (r.timed_out) return python + ": timed out after 60 s";
  std::string out = r.out.substr(0, r.out.find('\n'));
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < out.size()) {
    size_t sp = out.find(' ', start);
    parts.push_back(out.substr(start, sp == std::string::npos ? std::string::npos : sp - start));
    if (sp == std::string::npos) break;
    start = sp + 1;
  }
  if (parts.size() != 3) return python + ": could not read versions";
  return fmt::format("{} (Python {}): torch {}, onnx {}", python, parts[0], parts[1], parts[2]);
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
               "turnkey system-info");
  std::string python;
  app.add_option("--python", python, "Python interpreter with torch");
  if (!cli::parse_args(app, args, "system-info")) return 0;
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
  print_runtimes_and_devices();
  print_plugins(std::cout);
  return 0;
}

}  // namespace turnkey::cli
