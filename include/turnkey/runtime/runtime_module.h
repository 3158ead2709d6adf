// Runtime modules: a runtime whose library is heavy (LibTorch pulls in OpenCV, ffmpeg, gloo, ...
// and costs ~0.65 s and ~165 MB at every start of a binary that links it) lives in a shared module
// of its own, `turnkey_<name>.so`, loaded on first use of that runtime. Unlike plugins (a C ABI
// for code built elsewhere), a module is built with turnkey from the same sources and speaks C++:
// its entry returns a RuntimeModule; a module of another ABI revision is refused.
// Loading is thread-safe (once per module per process); modules are never unloaded.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "turnkey/runtime/runtime.h"

namespace turnkey {

// Bump when RuntimeModule, Session or RuntimeOptions change layout.
inline constexpr int kRuntimeModuleAbi = 3;  // 3: initialize, RuntimeOptions::concurrency
#define TURNKEY_RUNTIME_MODULE_ENTRY "turnkey_runtime_module_v1"

struct RuntimeModule {
  int abi = kRuntimeModuleAbi;
  const char* runtime = "";          // the runtime it serves: "torchscript"
  const char* library_version = "";  // of the heavy library: "1.13.1"
  // Opens a model file the runtime's way (throws Error); the Session runs inside the module.
  std::unique_ptr<Session> (*open_session)(const std::filesystem::path& model,
                                           const std::vector<HostTensor>& inputs,
                                           const RuntimeOptions& options) = nullptr;
  // The library's one-time, process-wide start (Runtime::initialize); null when it has none.
  void (*initialize)() = nullptr;
};

struct RuntimeModuleStatus {
  const RuntimeModule* module = nullptr;  // null when it cannot be loaded
  std::filesystem::path path;             // the file loaded, or the first one tried
  std::string problem;                    // one line when module is null
};

// Loads `turnkey_<runtime>.so` once from the module folders: `runtimes/` next to the binary,
// `../lib/turnkey/runtimes/` from it (an installation), then the build tree's folder (for test
// binaries elsewhere in the build). Never throws.
const RuntimeModuleStatus& load_runtime_module(const std::string& runtime);

// The folders looked in, in order.
std::vector<std::filesystem::path> runtime_module_dirs();

// The modules this build has (name, the file it would load), and whether loading was tried.
struct RuntimeModuleInfo {
  std::string runtime;
  bool built = false;  // turnkey was built with this module
  std::string missing;  // what makes it when not built: "scripts/setup-openvino, then rebuild"
};
const std::vector<RuntimeModuleInfo>& runtime_module_table();

}  // namespace turnkey
