#include <fmt/format.h>

#include "ort/ort_runtime.h"
#include "torch_eager/torch_eager_runtime.h"
#include "torchscript/torchscript_runtime.h"
#include "turnkey/common/process.h"
#include "turnkey/plugin/plugin_host.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey {

// The one list of built-in runtimes. Add a runtime here and nowhere else.
const std::vector<const Runtime*>& builtin_runtimes() {
  static const std::vector<const Runtime*> builtins = {
      &ort_runtime(), &torch_eager_runtime(), &torchscript_runtime(), &torch_compiled_runtime()};
  return builtins;
}

const std::vector<const Runtime*>& runtime_registry() {
  // Plugin runtimes (docs/plugins.md) follow the built-in ones, loaded once on first use.
  static const std::vector<const Runtime*> with_plugins = [] {
    std::vector<const Runtime*> all = builtin_runtimes();
    for (const Runtime* r : load_plugin_runtimes(builtin_runtimes())) all.push_back(r);
    return all;
  }();
  return with_plugins;
}

const Runtime* find_runtime(const std::string& name) {
  // A built-in name loads no plugin library (each may pull in a heavy library of its own).
  for (const Runtime* r : builtin_runtimes()) {
    if (r->name() == name) return r;
  }
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

namespace {

Availability probe_x86() {
#if defined(__x86_64__) || defined(__i386__)
  return {true, ""};
#else
  return {false, "this is not an x86 CPU"};
#endif
}

// An NVIDIA GPU needs its kernel driver (/proc/driver/nvidia/version), a device node and, to be
// usable by a runtime, a runtime build with a CUDA provider. Says which piece is missing.
Availability probe_nvidia() {
  std::error_code ec;
  const bool driver = std::filesystem::exists("/proc/driver/nvidia/version", ec);
  const bool device = std::filesystem::exists("/dev/nvidia0", ec);
  const bool smi = !find_on_path("nvidia-smi").empty();
  if (!driver && !device) {
    return {false, fmt::format("no NVIDIA GPU found: no driver (/proc/driver/nvidia/version is "
                               "missing), no /dev/nvidia0{}",
                               smi ? "" : ", nvidia-smi not on PATH")};
  }
  if (!device) return {false, "NVIDIA driver loaded but no GPU device (/dev/nvidia0 missing)"};
  return {false,
          "an NVIDIA GPU is present, but no runtime of this build has a CUDA provider (build "
          "with a GPU ONNX Runtime release through TURNKEY_ORT_ROOT)"};
}

}  // namespace

const std::vector<Device>& device_registry() {
  static const std::vector<Device> devices = {
      {"x86", "the host CPU", &probe_x86},
      {"nvidia", "an NVIDIA GPU through CUDA", &probe_nvidia},
  };
  return devices;
}

const Device* find_device(const std::string& name) {
  for (const Device& d : device_registry()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

}  // namespace turnkey
