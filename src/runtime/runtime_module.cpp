#include "turnkey/runtime/runtime_module.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <map>
#include <mutex>

#include "turnkey/common/error.h"

namespace turnkey {

namespace fs = std::filesystem;

const std::vector<RuntimeModuleInfo>& runtime_module_table() {
  static const std::vector<RuntimeModuleInfo> table = {
#ifdef TURNKEY_HAVE_TORCHSCRIPT_MODULE
      {"torchscript", true, ""},
#else
      {"torchscript", false, "install libtorch-dev, then rebuild"},
#endif
#ifdef TURNKEY_HAVE_OPENVINO_MODULE
      {"openvino", true, ""},
#else
      {"openvino", false, "run scripts/setup-openvino, then rebuild"},
#endif
  };
  return table;
}

std::vector<fs::path> runtime_module_dirs() {
  std::vector<fs::path> dirs;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path() / "runtimes");
    dirs.push_back((exe.parent_path() / ".." / "lib" / "turnkey" / "runtimes").lexically_normal());
  }
#ifdef TURNKEY_BUILD_RUNTIME_MODULE_DIR
  dirs.push_back(TURNKEY_BUILD_RUNTIME_MODULE_DIR);
#endif
  return dirs;
}

namespace {

RuntimeModuleStatus load(const std::string& runtime) {
  RuntimeModuleStatus status;
  const std::string file = "turnkey_" + runtime + ".so";
  for (const fs::path& dir : runtime_module_dirs()) {
    std::error_code ec;
    if (!fs::exists(dir / file, ec)) continue;
    status.path = dir / file;
    break;
  }
  if (status.path.empty()) {
    std::vector<std::string> dirs;
    for (const fs::path& d : runtime_module_dirs()) dirs.push_back(d.string());
    status.problem = fmt::format("its module {} is in none of {}", file, fmt::join(dirs, ", "));
    return status;
  }
  void* handle = dlopen(status.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    status.problem = fmt::format("its module {} cannot be loaded: {}", status.path.string(),
                                 e ? first_line(e) : "dlopen failed");
    return status;
  }
  using Entry = const RuntimeModule* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, TURNKEY_RUNTIME_MODULE_ENTRY));
  const RuntimeModule* module = entry ? entry() : nullptr;
  if (!module || module->abi != kRuntimeModuleAbi || runtime != module->runtime ||
      !module->open_session) {
    status.problem = fmt::format(
        "its module {} is not a turnkey {} module of ABI {} (a stale build? rebuild turnkey)",
        status.path.string(), runtime, kRuntimeModuleAbi);
    return status;  // left loaded: unloading code that may have run initializers is not safe
  }
  status.module = module;
  return status;
}

}  // namespace

const RuntimeModuleStatus& load_runtime_module(const std::string& runtime) {
  static std::mutex mutex;
  static std::map<std::string, RuntimeModuleStatus> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(runtime);
  if (it == loaded.end()) it = loaded.emplace(runtime, load(runtime)).first;
  return it->second;
}

}  // namespace turnkey
