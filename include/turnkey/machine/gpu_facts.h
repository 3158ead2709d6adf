// Facts about this machine's NVIDIA GPUs for the `nvidia` device's probe and the environment of
// a result (docs/gpu.md): read from the kernel driver's files under /proc and /dev and from
// libcuda's cuDriverGetVersion (dlopen, no CUDA context is made); no external command, never
// blocks. Thread-safe; not cached (the probe runs once per benchmark).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace turnkey {

struct GpuFacts {
  bool driver = false;                    // <root>/proc/driver/nvidia/version exists
  std::string driver_version;             // "550.54.14" from that file; "" when unreadable
  std::vector<std::string> device_nodes;  // "/dev/nvidia0", ... (a container may see only one)
  std::vector<std::string> models;        // each GPU's "Model:" of /proc/driver/nvidia/gpus/*
  // The CUDA version libcuda.so.1 supports ("13.0"); "" when it cannot be loaded, with the reason
  // in cuda_driver_error.
  std::string cuda_driver_version, cuda_driver_error;
};

// The facts under `root` ("/" on a real machine; a folder laid out like it in tests). libcuda is
// only asked when `root` is "/".
GpuFacts gpu_facts(const std::filesystem::path& root = "/");

// "550.54.14" out of a /proc/driver/nvidia/version text ("NVRM version: NVIDIA UNIX x86_64
// Kernel Module  550.54.14  ..."); "" when there is none.
std::string parse_nvidia_driver_version(const std::string& text);

// The facts for a result's environment: gpu_name, gpu_count, nvidia_driver_version,
// cuda_driver_version (keys whose value is unknown are left out).
nlohmann::json gpu_environment(const GpuFacts& facts);

}  // namespace turnkey
