// Shared by the corpus-run tests (test_corpus_*.cpp, one program): the hostile corpus and its
// expected statuses, the pids its scripts record, input records read back, tiny good scripts.
// Inline definitions.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "e2e_util.h"
#include "support/temp_dir.h"

namespace turnkey::test {

namespace fs = std::filesystem;

inline const fs::path kHostile = fs::path(TURNKEY_SOURCE_DIR) / "tests" / "data" / "hostile";

// A process that still exists and is not a zombie waiting for its reaper.
inline bool alive(pid_t pid) {
  std::string stat = slurp(fs::path("/proc") / std::to_string(pid) / "stat");
  if (stat.empty()) return false;
  size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

inline std::vector<pid_t> recorded_pids(const fs::path& pid_dir) {
  std::vector<pid_t> pids;
  std::ifstream in(pid_dir / "pids.txt");
  pid_t p;
  while (in >> p) pids.push_back(p);
  return pids;
}

inline std::string still_running(const std::vector<pid_t>& pids) {
  // A killed process can be a zombie for a moment; give reapers a short while.
  std::string left;
  for (int attempt = 0; attempt < 20; ++attempt) {
    left.clear();
    for (pid_t p : pids) {
      if (!alive(p)) continue;
      left.push_back(' ');
      left.append(std::to_string(p));
    }
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return left;
}

// The input record of `script` (inputs/<stem>_<hash8>.yaml) as text; "" when missing.
inline std::string record_of(const fs::path& cache, const std::string& stem) {
  for (const auto& e : fs::directory_iterator(cache / "inputs")) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".yaml" && name.rfind(stem + "_", 0) == 0 &&
        name.size() == stem.size() + 1 + 8 + 5) {
      return slurp(e.path());
    }
  }
  return "";
}

inline std::string yaml_string(const std::string& text, const std::string& key) {
  std::smatch m;
  if (std::regex_search(text, m, std::regex("(^|\n)" + key + ": \"?([^\"\n]*)\"?"))) return m[2];
  return "";
}

inline std::vector<std::pair<std::string, std::string>> expected_statuses() {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream in(kHostile / "expected_status.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t sp = line.find(' ');
    std::string status = line.substr(line.find_first_not_of(' ', sp));
    out.push_back({line.substr(0, sp), status});
  }
  return out;
}

inline std::string write_script(const fs::path& dir, const std::string& name, int width) {
  fs::create_directories(dir);
  fs::path p = dir / name;
  std::ofstream(p) << "import torch\n\ntorch.manual_seed(0)\nmodel = torch.nn.Sequential("
                      "torch.nn.Linear("
                   << width << ", 8), torch.nn.ReLU())\n"
                   << "model(torch.randn(1, " << width << "))\n";
  return p.string();
}

// Starts turnkey with `args` in a process group of its own (as a shell starts a job), its output
// in dir/out.txt, its cache in dir/cache, the hostile scripts noting their pids in dir/pids.
inline pid_t start_turnkey_job(const fs::path& dir, const std::vector<std::string>& args) {
  fs::create_directories(dir / "pids");
  const fs::path out = dir / "out.txt";
  std::vector<std::string> words = {turnkey_binary()};
  words.insert(words.end(), args.begin(), args.end());
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    setenv("HOSTILE_PID_DIR", (dir / "pids").c_str(), 1);
    setenv("TURNKEY_CACHE_DIR", (dir / "cache").c_str(), 1);
    setenv("TURNKEY_BUILD_MONITOR", "False", 1);
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// The pids the job's scripts noted, once there are `n` of them (a minute at most).
inline std::vector<pid_t> wait_for_pids(const fs::path& dir, size_t n) {
  std::vector<pid_t> pids;
  for (int i = 0; i < 600 && pids.size() < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pids = recorded_pids(dir / "pids");
  }
  return pids;
}

}  // namespace turnkey::test
