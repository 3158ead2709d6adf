// Fixed costs (issue 14): commands load only the libraries they use (LibTorch only for the
// torchscript runtime, from its module), the interpreter probe is remembered across runs but
// never used once its answer may have changed, and the script's process (its models' weights)
// is not kept beside the runtime's copy once no tool needs it.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <ctime>
#include <sstream>

#include <filesystem>
#include <fstream>
#include <map>

#include "e2e_util.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;

void write_executable(const fs::path& p, const std::string& text) {
  fs::remove(p);  // a new file (new inode), as an editor or installer would leave it
  std::ofstream(p) << text;
  fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                         fs::perms::others_read | fs::perms::others_exec);
}

int lines_of(const fs::path& p) {
  std::ifstream in(p);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// The libraries the dynamic loader opened in turnkey's own process while running `args`
// (LD_DEBUG=files; its lines start with the pid, and the first line is turnkey's: children
// such as the script's Python process load torch on their own and are not counted).
std::string libraries_loaded(const std::vector<std::string>& args, const fs::path& cache) {
  RunResult r = run_turnkey(args, cache, {{"LD_DEBUG", "files"}}, {}, 300);
  EXPECT_EQ(r.exit_code, 0) << r.all().substr(r.all().size() > 4000 ? r.all().size() - 4000 : 0);
  std::string loaded, own_pid;
  std::istringstream in(r.err);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string pid = line.substr(0, colon);
    pid.erase(0, pid.find_first_not_of(' '));
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (own_pid.empty()) own_pid = pid;
    if (pid != own_pid) continue;
    const size_t at = line.find("file=");
    if (at != std::string::npos && line.find("generating link map") != std::string::npos) {
      loaded += line.substr(at + 5, line.find(' ', at) - at - 5) + "\n";
    }
  }
  return loaded;
}

class FixedCosts : public ::testing::Test {
 protected:
  TempDir dir;
  fs::path cache() { return dir.path() / "cache"; }
};

TEST_F(FixedCosts, CommandsThatMeasureNothingLoadNoHeavyLibrary) {
  for (const auto& args : {std::vector<std::string>{"version"},
                           std::vector<std::string>{"cache", "list"},
                           std::vector<std::string>{"-h"}}) {
    const std::string loaded = libraries_loaded(args, cache());
    EXPECT_NE(loaded.find("libstdc++"), std::string::npos) << "LD_DEBUG gave nothing: " << loaded;
    for (const char* heavy : {"libtorch", "libc10", "libopencv", "libavcodec"}) {
      EXPECT_EQ(loaded.find(heavy), std::string::npos) << args[0] << " loaded " << heavy;
    }
  }
}

TEST_F(FixedCosts, TorchscriptLoadsItsModuleAndOrtRunsWithoutIt) {
  const fs::path script = fs::path(TURNKEY_SOURCE_DIR) / "examples/cli/scripts/hello_world.py";
  const std::string ort = libraries_loaded({script.string()}, cache());
  EXPECT_EQ(ort.find("libtorch"), std::string::npos);
  EXPECT_EQ(ort.find("turnkey_torchscript"), std::string::npos);
  EXPECT_EQ(ort.find("turnkey_openvino"), std::string::npos);  // nor OpenVINO's module
  EXPECT_EQ(ort.find("libopenvino"), std::string::npos);
  EXPECT_EQ(ort.find("libopencv"), std::string::npos) << "a built-in runtime loaded the plugins";
  const std::string ts =
      libraries_loaded({script.string(), "--runtime", "torchscript"}, cache());
  EXPECT_NE(ts.find("turnkey_torchscript.so"), std::string::npos);
  EXPECT_NE(ts.find("libtorch"), std::string::npos);
}

// Seconds since the epoch of a state file's "2026-11-29T02:34:24.570Z".
double epoch_of(const std::string& iso) {
  std::tm tm{};
  if (iso.size() < 20 || !strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return -1;
  return static_cast<double>(timegm(&tm)) + std::strtod(iso.c_str() + 19, nullptr);  // ".570Z"
}

struct ToolTimes {
  double started = 0, ended = 0;  // seconds since the epoch
};

// {model variable: {tool: times}} of every build in the cache.
std::map<std::string, std::map<std::string, ToolTimes>> tool_times(const fs::path& cache) {
  std::map<std::string, std::map<std::string, ToolTimes>> out;
  for (const auto& e : fs::directory_iterator(cache)) {
    const fs::path state = e.path() / (e.path().filename().string() + "_state.yaml");
    if (!fs::exists(state)) continue;
    const nlohmann::json s = json_from_yaml(slurp(state));
    for (const auto& tool : s["tools"]) {
      if (!tool.contains("started")) continue;
      const double started = epoch_of(tool["started"].get<std::string>());
      out[s["model_name"]][tool["name"]] = {started,
                                             started + tool["duration_s"].get<double>()};
    }
  }
  return out;
}

const char* const kEndedNote = "the script's process ended before this tool";

// A script's process holds its models' weights: turnkey ends it before the benchmark of the
// script's last model when no tool from there on needs the live model (ONNX Runtime times its
// own copy), so the two copies are not in memory together; the earlier model's benchmark runs
// while it lives (the last model is still to be exported), and a runtime that times the live
// model (torch-eager) keeps it to the end, as does PyTorch's float64 reference made on demand
// (a model of at most 256 MiB: the judge may ask for it after the benchmark). Times from the
// build states (ms) against the script's atexit note (time.time(), the same clock).
TEST_F(FixedCosts, TheScriptsProcessEndsBeforeItsLastModelsBenchmarkWhenNothingAfterNeedsIt) {
  const fs::path script = fs::path(TURNKEY_SOURCE_DIR) / "tests/data/scripts/process_end.py";
  const fs::path note = dir.path() / "ended.txt";
  const double ms = 0.002;  // the states' millisecond timestamps are cut, not rounded
  // Runs the script with `args` in a fresh cache; the process's end and the tools' times.
  double ended = 0;
  std::map<std::string, std::map<std::string, ToolTimes>> times;
  auto run = [&](std::vector<std::string> args) {
    fs::remove_all(cache());
    fs::remove(note);
    args.insert(args.begin(), {script.string(), "--iterations", "3"});
    const RunResult r = run_turnkey(args, cache(), {{"EXIT_NOTE", note.string()}});
    ASSERT_EQ(r.exit_code, 0) << r.all();
    ended = std::stod(slurp(note));
    times = tool_times(cache());
    ASSERT_EQ(times.size(), 2u);
  };

  run({"--no-float64-reference"});
  EXPECT_LT(times["first"]["benchmark"].ended, ended);
  EXPECT_LT(times["second"]["export-pytorch"].ended, ended + ms);
  EXPECT_LE(ended, times["second"]["benchmark"].started + ms);
  const std::vector<fs::path> noted = files_holding(cache(), kEndedNote);
  ASSERT_EQ(noted.size(), 1u) << "only the last model's benchmark log says the process ended";
  EXPECT_EQ(noted[0].filename(), "log_benchmark.txt");
  EXPECT_EQ(json_from_yaml(slurp(noted[0].parent_path() /
                                 (noted[0].parent_path().filename().string() + "_state.yaml")))
                .value("model_name", std::string()),
            "second");

  run({"--runtime", "torch-eager"});
  EXPECT_LT(times["second"]["benchmark"].ended, ended + ms);
  EXPECT_TRUE(files_holding(cache(), kEndedNote).empty()) << "torch-eager times the live model";

  // By default the float64 reference is made on demand: the export makes none, and the process
  // lives until the last benchmark is judged.
  run({});
  EXPECT_LT(times["second"]["benchmark"].ended, ended + ms);
  EXPECT_TRUE(files_holding(cache(), kEndedNote).empty()) << "the judge may ask for float64";
  EXPECT_EQ(files_holding(cache(), "float64 reference: made on demand").size(), 2u);
  EXPECT_TRUE(files_holding(cache(), "float64 reference outputs in").empty())
      << "outputs within the tolerance ask for no float64 run";
}

// A python3 on PATH that counts its starts and passes through to the interpreter with torch.
class InterpreterChoice : public FixedCosts {
 protected:
  fs::path bin() { return dir.path() / "bin"; }
  fs::path counter() { return dir.path() / "starts.txt"; }
  void SetUp() override {
    fs::create_directories(bin());
    write_python3("");
  }
  void write_python3(const std::string& extra_args) {
    write_executable(bin() / "python3", "#!/bin/sh\necho start >> '" + counter().string() +
                                            "'\nexec /usr/bin/python3 " + extra_args +
                                            " \"$@\"\n");
  }
  RunResult system_info(std::vector<std::pair<std::string, std::string>> env = {}) {
    env.insert(env.begin(), {"TURNKEY_STATE_DIR", (dir.path() / "state").string()});
    env.insert(env.begin(), {"PATH", bin().string() + ":/usr/bin:/bin"});
    env.insert(env.begin(), {"TURNKEY_PYTHON", ""});
    return run_turnkey({"system-info"}, cache(), env, {}, 120);
  }
  std::string python_line(const RunResult& r) {
    const size_t at = r.out.find("Python:");
    return at == std::string::npos ? "" : r.out.substr(at, r.out.find('\n', at) - at);
  }
};

TEST_F(InterpreterChoice, ASecondRunDoesNotProbeAgain) {
  RunResult first = system_info();
  ASSERT_EQ(first.exit_code, 0) << first.all();
  EXPECT_NE(python_line(first).find((bin() / "python3").string()), std::string::npos)
      << python_line(first);
  EXPECT_NE(python_line(first).find("torch 1."), std::string::npos) << python_line(first);
  const int probes = lines_of(counter());
  EXPECT_EQ(probes, 1);
  RunResult second = system_info();
  ASSERT_EQ(second.exit_code, 0) << second.all();
  EXPECT_EQ(python_line(second), python_line(first));
  EXPECT_EQ(lines_of(counter()), probes) << "the remembered probe was not used";
}

TEST_F(InterpreterChoice, AChangedAnswerIsNeverTakenFromMemory) {
  ASSERT_EQ(system_info().exit_code, 0);
  ASSERT_EQ(lines_of(counter()), 1);
  // The same file name now starts an interpreter that cannot import torch (-S: no site
  // packages): turnkey must notice and fall back to /usr/bin/python3.
  write_python3("-S");
  RunResult r = system_info();
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(lines_of(counter()), 2) << "the changed interpreter was not probed again";
  EXPECT_NE(python_line(r).find("/usr/bin/python3"), std::string::npos) << python_line(r);
  EXPECT_EQ(python_line(r).find((bin() / "python3").string()), std::string::npos)
      << python_line(r);

  // Back to an interpreter with torch, and an environment variable that can change the answer.
  write_python3("");
  ASSERT_EQ(system_info().exit_code, 0);
  const int before = lines_of(counter());
  RunResult with_path = system_info({{"PYTHONPATH", dir.path().string()}});
  ASSERT_EQ(with_path.exit_code, 0) << with_path.all();
  EXPECT_EQ(lines_of(counter()), before + 1) << "PYTHONPATH changed but no probe ran";
}

TEST_F(InterpreterChoice, ADamagedMemoryIsProbedAgainAndRewritten) {
  fs::create_directories(dir.path() / "state");
  std::ofstream(dir.path() / "state" / "interpreters.json") << "{\"version\": 1, \"entries\": 7";
  RunResult r = system_info();
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(lines_of(counter()), 1);
  EXPECT_NE(python_line(r).find((bin() / "python3").string()), std::string::npos);
  ASSERT_EQ(system_info().exit_code, 0);
  EXPECT_EQ(lines_of(counter()), 1) << "the rewritten memory was not used";
}

}  // namespace
}  // namespace turnkey::test
