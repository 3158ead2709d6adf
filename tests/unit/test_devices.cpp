// The device table and the nvidia device (docs/gpu.md): the driver facts read from a folder laid
// out like /proc and /dev, the hardware probe on this machine, and each runtime's answer for
// nvidia (ONNX Runtime's providers, the runtimes that list it). What needs a GPU is tested where
// one is (bench/device-check); here the refusals are.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/common/error.h"
#include "turnkey/machine/gpu_facts.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

bool lists(const Runtime& r, const std::string& device) {
  const auto d = r.devices();
  return std::find(d.begin(), d.end(), device) != d.end();
}

TEST(GpuFacts, DriverVersionOfProprietaryAndOpenModules) {
  EXPECT_EQ(parse_nvidia_driver_version(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 "
                "UTC 2023\nGCC version:  gcc version 12.2.0\n"),
            "535.104.05");
  EXPECT_EQ(parse_nvidia_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                                        "580.82.07  Release Build  (dvs-builder@U16)\n"),
            "580.82.07");
  EXPECT_EQ(parse_nvidia_driver_version("no version here\n"), "");
}

TEST(GpuFacts, ReadFromTheDriversFiles) {
  test::TempDir root("tk-gpu");
  write(root / "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.82.07  Release Build\n");
  write(root / "proc/driver/nvidia/gpus/0000:19:00.0/information",
        "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nGPU UUID: \t GPU-0\n");
  // A container given its fourth GPU sees /dev/nvidia3; nvidiactl and nvidia-uvm are not GPUs.
  write(root / "dev/nvidia3", "");
  write(root / "dev/nvidiactl", "");
  write(root / "dev/nvidia-uvm", "");
  const GpuFacts f = gpu_facts(root.path());
  EXPECT_TRUE(f.driver);
  EXPECT_EQ(f.driver_version, "580.82.07");
  EXPECT_EQ(f.models, std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
  EXPECT_EQ(f.device_nodes, std::vector<std::string>{"/dev/nvidia3"});
  EXPECT_EQ(f.cuda_driver_version, "");  // libcuda is asked for the real root only
  const nlohmann::json e = gpu_environment(f);
  EXPECT_EQ(e["gpu_name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(e["gpu_count"], 1);
  EXPECT_EQ(e["nvidia_driver_version"], "580.82.07");
  EXPECT_FALSE(e.contains("cuda_driver_version"));
}

TEST(GpuFacts, NothingUnderAnEmptyRoot) {
  test::TempDir root("tk-gpu");
  const GpuFacts f = gpu_facts(root.path());
  EXPECT_FALSE(f.driver);
  EXPECT_TRUE(f.models.empty());
  EXPECT_TRUE(f.device_nodes.empty());
  EXPECT_EQ(gpu_environment(f), nlohmann::json({{"gpu_count", 0}}));
}

// The hardware probe says in one line what is missing, or passes where a GPU is.
TEST(DeviceTable, NvidiaProbeOnThisMachine) {
  const Device* nvidia = find_device("nvidia");
  ASSERT_NE(nvidia, nullptr);
  const Availability a = nvidia->probe();
  const GpuFacts f = gpu_facts();
  if (f.device_nodes.empty() && !f.driver && f.cuda_driver_version.empty()) {
    EXPECT_FALSE(a.available);
    EXPECT_EQ(a.reason.rfind("no NVIDIA GPU found: no driver (/proc/driver/nvidia/version is "
                             "missing), no /dev/nvidia0",
                             0),
              0u)
        << a.reason;
    EXPECT_EQ(a.reason.find('\n'), std::string::npos);
    EXPECT_EQ(nvidia->model(), "");
  } else if (!f.device_nodes.empty() && (f.driver || !f.cuda_driver_version.empty())) {
    EXPECT_TRUE(a.available) << a.reason;
    if (!f.models.empty()) {
      EXPECT_EQ(nvidia->model(), f.models.front());
    }
  }
  const Device* x86 = find_device("x86");
  ASSERT_NE(x86, nullptr);
  EXPECT_TRUE(x86->environment().empty());
  EXPECT_FALSE(x86->model().empty());
}

// Which runtimes list nvidia: the torch ones (their Python side answers for torch.cuda) and ort
// (its probe for the providers); torchscript's LibTorch 1.13 is a CPU build.
TEST(DeviceTable, RuntimesThatListNvidia) {
  for (const char* name : {"ort", "torch-eager", "torch-compiled"}) {
    const Runtime* r = find_runtime(name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_TRUE(lists(*r, "nvidia")) << name;
    EXPECT_TRUE(lists(*r, "x86")) << name;
  }
  const Runtime* torchscript = find_runtime("torchscript");
  ASSERT_NE(torchscript, nullptr);
  EXPECT_FALSE(lists(*torchscript, "nvidia"));
}

// ONNX Runtime on nvidia needs the CUDA provider in the library this process loaded: the npm
// package's (the default build) has none, and says so; loading refuses the same way.
TEST(DeviceTable, OrtOnNvidiaNeedsTheCudaProvider) {
  const Runtime* ort = find_runtime("ort");
  ASSERT_NE(ort, nullptr);
  EXPECT_TRUE(ort->probe_device("x86", PythonSide{}).available);
  const Availability a = ort->probe_device("nvidia", PythonSide{});
  if (a.available) GTEST_SKIP() << "this ONNX Runtime has the CUDA provider";
  EXPECT_NE(a.reason.find("has no CUDA execution provider (it has "), std::string::npos)
      << a.reason;
  EXPECT_NE(a.reason.find("CPUExecutionProvider"), std::string::npos) << a.reason;
  EXPECT_NE(a.reason.find("TURNKEY_ORT_ROOT"), std::string::npos) << a.reason;
  EXPECT_EQ(a.reason.find('\n'), std::string::npos);

  test::TempDir dir("tk-gpu");
  const fs::path model = dir / "linear.onnx";
  test::linear_relu(model);
  RuntimeOptions options;
  options.device = "nvidia";
  try {
    ort->load(model, {}, options);
    FAIL() << "ort loaded a model on nvidia without the CUDA provider";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "ort on nvidia: " + a.reason);
  }
}

}  // namespace
}  // namespace turnkey
