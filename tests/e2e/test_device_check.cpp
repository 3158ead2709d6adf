// End-to-end: --device nvidia on a machine without a GPU (every runtime refuses with one line
// naming why), and bench/device-check's pack (docs/gpu.md): within 64 MiB, startable with its
// own libraries under `env -i`, and running a script with the interpreter's library path left
// as the caller had it. What needs a GPU runs on one (bench/device-check run).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "e2e_util.h"
#include "support/temp_dir.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = TURNKEY_SOURCE_DIR;

bool machine_has_gpu_node() {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    if (std::regex_match(e.path().filename().string(), std::regex("nvidia[0-9]+"))) return true;
  }
  return fs::exists("/proc/driver/nvidia/version", ec);
}

TEST(NvidiaDevice, EveryRuntimeRefusesWithOneLineWithoutAGpu) {
  if (machine_has_gpu_node()) GTEST_SKIP() << "this machine has an NVIDIA GPU";
  TempDir dir("tk-nvidia");
  const std::string line =
      "device nvidia: unavailable: no NVIDIA GPU found: no driver (/proc/driver/nvidia/version "
      "is missing), no /dev/nvidia0";
  for (const char* runtime : {"ort", "torch-eager", "torch-compiled", "torchscript"}) {
    RunResult r = run_turnkey({(kSource / "examples/cli/scripts/hello_world.py").string(),
                               "--runtime", runtime, "--device", "nvidia", "--iterations", "5"},
                              dir / runtime);
    EXPECT_EQ(r.exit_code, 1) << runtime << "\n" << r.all();
    EXPECT_FALSE(looks_like_crash(r)) << r.all();
    EXPECT_NE(r.out.find(line), std::string::npos) << runtime << "\n" << r.all();
    // The reason is one line: what follows it on its line is the end of the line.
    const size_t at = r.out.find(line);
    if (at != std::string::npos) {
      const size_t end = r.out.find('\n', at);
      EXPECT_LT(end - at, line.size() + 40) << r.out.substr(at, end - at);
    }
  }
}

class DeviceCheckPack : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("tk-gpu-pack");
    pack_ = dir_->path() / "pack";
    packed_ = run_command({"/bin/bash", (kSource / "bench/device-check").string(), "pack"},
                          {{"TURNKEY_GPU_PACK", pack_.string()},
                           {"TURNKEY_BUILD_DIR", fs::path(turnkey_binary()).parent_path()}},
                          kSource, 300);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static inline TempDir* dir_ = nullptr;
  static inline fs::path pack_;
  static inline RunResult packed_;
};

TEST_F(DeviceCheckPack, FitsIn64MiBWithTheWorkingTree) {
  ASSERT_EQ(packed_.exit_code, 0) << packed_.all();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(packed_.out, m,
                                std::regex(R"(together ([0-9.]+) of 64 MiB; needs .*GLIBC_)")))
      << packed_.out;
  EXPECT_LE(std::stod(m[1]), 64.0);
  EXPECT_GT(std::stod(m[1]), 10.0);  // ONNX Runtime alone is larger: the libraries are there
  EXPECT_TRUE(fs::exists(pack_ / "lib/libonnxruntime.so.1"));
  EXPECT_TRUE(fs::exists(pack_ / "lib-compat/libstdc++.so.6"));
  EXPECT_TRUE(fs::exists(pack_ / "bin/turnkey"));
  EXPECT_FALSE(fs::exists(pack_ / "lib/libc.so.6"));
}

// Under `env -i` the loader finds every library but glibc's and GCC's in the pack.
TEST_F(DeviceCheckPack, TheWrapperStartsWithThePacksLibraries) {
  ASSERT_EQ(packed_.exit_code, 0) << packed_.all();
  RunResult version = run_command(
      {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin", (pack_ / "turnkey").string(), "version"});
  EXPECT_EQ(version.exit_code, 0) << version.all();
  EXPECT_TRUE(std::regex_search(version.out, std::regex(R"(^[0-9]+\.[0-9]+)"))) << version.out;

  RunResult traced = run_command({"/usr/bin/env", "-i", "PATH=/usr/bin:/bin",
                                  (pack_ / "turnkey").string(), "--pack-libraries"});
  ASSERT_EQ(traced.exit_code, 0) << traced.all();
  const std::regex entry(R"(^\s*(\S+) => (\S+))");
  const std::regex system(R"(^(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s)\.so.*)");
  int from_pack = 0;
  std::istringstream lines(traced.out);
  for (std::string l; std::getline(lines, l);) {
    std::smatch m;
    if (!std::regex_search(l, m, entry) || std::regex_match(m[1].str(), system)) continue;
    EXPECT_EQ(m[2].str().rfind((pack_ / "lib").string() + "/", 0), 0u) << l;
    ++from_pack;
  }
  EXPECT_GE(from_pack, 3) << traced.out;
}

// A script run through the pack gets no LD_LIBRARY_PATH of the pack's (torch loads its own).
TEST_F(DeviceCheckPack, TheScriptSeesTheCallersLibraryPath) {
  ASSERT_EQ(packed_.exit_code, 0) << packed_.all();
  const fs::path script = dir_->path() / "no_pack_libs.py";
  {
    std::ofstream out(script);
    out << "import os, torch\n"
           "assert 'LD_LIBRARY_PATH' not in os.environ, os.environ['LD_LIBRARY_PATH']\n"
           "model = torch.nn.Linear(4, 2)\n"
           "model(torch.ones(1, 4))\n";
  }
  RunResult r = run_command(
      {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "HOME=" + dir_->path().string(),
       "TURNKEY_BUILD_MONITOR=False", "TURNKEY_PYTHON_DIR=" + (kSource / "python").string(),
       (pack_ / "turnkey").string(), script.string(), "--runtime", "torch-eager", "--iterations",
       "5", "-d", (dir_->path() / "cache").string()});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("Successfully benchmarked"), std::string::npos) << r.all();
}

// The run mode as it travels, tried here on the CPU with Debian's torch (docs/gpu.md): turnkey
// and the bare loop alternated for two rounds give one row whose note lists both rounds' ratios,
// and the refusals and the summary files are there.
TEST_F(DeviceCheckPack, TheRunModeAlternatesTurnkeyAndTheBareLoop) {
  ASSERT_EQ(packed_.exit_code, 0) << packed_.all();
  const fs::path out = dir_->path() / "run-out";
  RunResult r = run_command(
      {"/bin/bash", (kSource / "bench/device-check").string(), "run", "--device", "x86",
       "--models", "hello_world", "--runtimes", "torch-eager", "--iterations", "30",
       "--rounds", "2", "--budget-s", "240"},
      {{"TURNKEY_GPU_PACK", pack_.string()}, {"TURNKEY_PYTHON", "/usr/bin/python3"},
       {"OUT", out.string()}},
      kSource, 300);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(torch-eager +hello_world +[0-9.]+ +[0-9.]+ +[0-9.]+.*within_tolerance.*rounds: [0-9.]+ [0-9.]+)")))
      << r.out;
  // On x86 the runtimes that refuse nvidia run: their rows are results.
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\nort +hello_world +[0-9.]+ )"))) << r.out;
  for (const char* file : {"summary.txt", "results.json", "turnkey.log", "bare.log"}) {
    EXPECT_TRUE(fs::exists(out / file)) << file;
  }
}

// gap_probe.py: turnkey's own timed loop and the bare loop interleaved in one process.
TEST(DeviceCheckGapProbe, InterleavesBothLoopsInOneProcess) {
  RunResult r = run_command({"/usr/bin/python3",
                             (kSource / "bench/device_check/gap_probe.py").string(),
                             (kSource / "examples/cli/scripts/hello_world.py").string(),
                             "--rounds", "2", "--calls", "50"},
                            {}, kSource, 120);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(GAP hello_world.py eager round 2: bare [0-9.]+ ms)")))
      << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(GAP hello_world.py eager all: bare [0-9.]+ ms, turnkey loop [0-9.]+ ms, ratio [0-9.]+)")))
      << r.out;
}

}  // namespace
}  // namespace turnkey::test
