#include "turnkey/machine/gpu_facts.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "turnkey/common/text.h"

namespace turnkey {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// "Model: \t\t NVIDIA H100 80GB HBM3" -> "NVIDIA H100 80GB HBM3".
std::string model_line(const std::string& information) {
  std::istringstream lines(information);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("Model:", 0) == 0) return trim(line.substr(6));
  }
  return "";
}

// libcuda's own version (what the driver supports), without creating a context: cuDriverGetVersion
// needs no cuInit. The library stays loaded (unloading libcuda is not safe while others use it).
std::string cuda_driver_version(std::string* error) {
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!lib) {
    *error = std::string("libcuda.so.1 cannot be loaded: ") + one_line(dlerror());
    return "";
  }
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(dlsym(lib, "cuDriverGetVersion"));
  int version = 0;
  if (!get || get(&version) != 0 || version <= 0) {
    *error = "libcuda.so.1 does not say its version (cuDriverGetVersion failed)";
    return "";
  }
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

}  // namespace

std::string parse_nvidia_driver_version(const std::string& text) {
  // The first word after "Kernel Module" that is a version (the open module's line names its
  // architecture in between: "Open Kernel Module for x86_64  580.82.07  Release Build").
  static const std::regex version(R"(Kernel Module.*?\s([0-9]+\.[0-9]+(\.[0-9]+)?)(\s|$))");
  std::smatch m;
  return std::regex_search(text, m, version) ? m[1].str() : "";
}

GpuFacts gpu_facts(const fs::path& root) {
  GpuFacts f;
  std::error_code ec;
  const fs::path proc = root / "proc/driver/nvidia";
  f.driver = fs::exists(proc / "version", ec);
  if (f.driver) f.driver_version = parse_nvidia_driver_version(read_text(proc / "version"));
  for (const auto& entry : fs::directory_iterator(proc / "gpus", ec)) {
    const std::string model = model_line(read_text(entry.path() / "information"));
    if (!model.empty()) f.models.push_back(model);
  }
  // A container given one GPU sees its own node only (/dev/nvidia3), not /dev/nvidia0.
  static const std::regex node(R"(nvidia[0-9]+)");
  for (const auto& entry : fs::directory_iterator(root / "dev", ec)) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, node)) f.device_nodes.push_back("/dev/" + name);
  }
  std::sort(f.device_nodes.begin(), f.device_nodes.end());
  if (root == "/") f.cuda_driver_version = cuda_driver_version(&f.cuda_driver_error);
  return f;
}

nlohmann::json gpu_environment(const GpuFacts& facts) {
  nlohmann::json e = nlohmann::json::object();
  if (!facts.models.empty()) e["gpu_name"] = facts.models.front();
  e["gpu_count"] = std::max(facts.models.size(), facts.device_nodes.size());
  if (!facts.driver_version.empty()) e["nvidia_driver_version"] = facts.driver_version;
  if (!facts.cuda_driver_version.empty()) e["cuda_driver_version"] = facts.cuda_driver_version;
  return e;
}

}  // namespace turnkey
