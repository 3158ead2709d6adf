#include <fmt/format.h>

#include "ort/ort_runtime.h"
#include "torch_eager/torch_eager_runtime.h"
#include "torchscript/torchscript_runtime.h"
#include "turnkey/common/process.h"
#include "turnkey/machine/gpu_facts.h"
#include "turnkey/machine/system_info.h"
#include "turnkey/runtime/plugin_host.h"
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

// An NVIDIA GPU needs its kernel driver (/proc/driver/nvidia/version, or libcuda.so.1 where a
// container does not show /proc/driver) and a device node. Says which piece is missing. Whether
// a runtime can use it (a CUDA build of torch, ONNX Runtime's CUDA provider) is the runtime's
// answer (Runtime::probe_device, and torch's when the model is prepared).
Availability probe_nvidia() {
  const GpuFacts gpu = gpu_facts();
  const bool driver = gpu.driver || !gpu.cuda_driver_version.empty();
  if (!driver && gpu.device_nodes.empty()) {
    return {false,
            fmt::format("no NVIDIA GPU found: no driver (/proc/driver/nvidia/version is "
                        "missing), no /dev/nvidia0{}",
                        find_on_path("nvidia-smi").empty() ? ", nvidia-smi not on PATH" : "")};
  }
  if (gpu.device_nodes.empty()) {
    return {false, "NVIDIA driver loaded but no GPU device (no /dev/nvidia<N>)"};
  }
  if (!driver) {
    return {false, fmt::format("{} exists but no NVIDIA driver answers: "
                               "/proc/driver/nvidia/version is missing and {}",
                               gpu.device_nodes.front(), gpu.cuda_driver_error)};
  }
  return {true, ""};
}

std::string nvidia_model() {
  const GpuFacts gpu = gpu_facts();
  return gpu.models.empty() ? "" : gpu.models.front();
}

nlohmann::json nvidia_environment() { return gpu_environment(gpu_facts()); }

std::string x86_model() { return cpu_facts().model; }

nlohmann::json no_environment() { return nlohmann::json::object(); }

}  // namespace

const std::vector<Device>& device_registry() {
  static const std::vector<Device> devices = {
      {"x86", "the host CPU", &probe_x86, &x86_model, &no_environment},
      {"nvidia", "an NVIDIA GPU through CUDA", &probe_nvidia, &nvidia_model, &nvidia_environment},
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
