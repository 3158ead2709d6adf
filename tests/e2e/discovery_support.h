// Shared by the discovery acceptance tests (test_discovery_*.cpp, one program): the turnkey runs
// several tests look at (run_once: each command once per program, `import torch` costs ~1.5 s
// per script), and readers of the printed report and the cache. Inline definitions: one
// SharedRuns for the whole program.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include "e2e_util.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

#include <gtest/gtest.h>

namespace turnkey::test {

namespace fs = std::filesystem;
using nlohmann::json;
using Env = std::vector<std::pair<std::string, std::string>>;

inline const fs::path kScripts = fs::path(TURNKEY_SOURCE_DIR) / "tests" / "data" / "scripts";
inline const fs::path kExamples = fs::path(TURNKEY_SOURCE_DIR) / "examples" / "cli" / "scripts";
inline const std::vector<std::string> kFastBenchmark = {"--iterations", "5", "--warmup", "1"};
inline const char* const kTraceback = "Traceback (most recent call last)";

inline std::string script(const std::string& name) { return (kScripts / name).string(); }
inline std::string example(const std::string& name) { return (kExamples / name).string(); }

// The interpreter with torch for running a script without turnkey.
inline std::string torch_python() {
  const char* env = std::getenv("TURNKEY_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

// ---- one turnkey run per key, shared by the tests -------------------------------------------

struct SharedRuns {
  TempDir root{"tk-e2e-discovery"};
  std::map<std::string, RunResult> done;
};

inline SharedRuns& shared() {
  static SharedRuns runs;
  return runs;
}

inline fs::path cache_of(const std::string& key) { return shared().root.path() / ("cache-" + key); }

inline const RunResult& run_once(const std::string& key, const std::vector<std::string>& args,
                          const Env& env = {}, const fs::path& cwd = {}) {
  auto found = shared().done.find(key);
  if (found != shared().done.end()) return found->second;
  // A developer's own settings must not change what the tests see (an empty value unsets);
  // TURNKEY_PYTHON stays: it says where torch is on this machine. Tracebacks off: the tests read
  // the one-line statuses (TurnkeyTraceback* turn them on).
  Env full = {{"TURNKEY_TRACEBACK", "False"}, {"TURNKEY_ONNX_OPSET", ""}, {"TURNKEY_PYTHON_DIR", ""}};
  full.insert(full.end(), env.begin(), env.end());
  auto t0 = std::chrono::steady_clock::now();
  RunResult r = run_turnkey(args, cache_of(key), full, cwd, 300);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cerr << "[turnkey run '" << key << "': " << s << " s, exit " << r.exit_code << "]\n";
  return shared().done.emplace(key, std::move(r)).first->second;
}

// ---- reading the printed report --------------------------------------------------------------

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline size_t indent_of(const std::string& line) {
  size_t n = line.find_first_not_of(' ');
  return n == std::string::npos ? line.size() : n;
}

inline std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// The results of one script: the lines after its "name.py:" line, up to the next line that is
// not indented (the next script's output or block, or the closing message).
inline std::string script_block(const std::string& out, const std::string& script_name) {
  std::vector<std::string> lines = lines_of(out);
  std::string block;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] != script_name + ":") continue;
    for (size_t j = i + 1; j < lines.size() && (lines[j].empty() || lines[j][0] == ' '); ++j) {
      block += lines[j] + "\n";
    }
    break;
  }
  return block;
}

// Whether a line is the title of a model called `name`: "name (executed ...)", or just "name"
// for a model listed with several input signatures.
inline bool is_title(const std::string& line, const std::string& name) {
  std::string t = trim(line);
  return t == name || t.rfind(name + " (executed", 0) == 0;
}

// The lines of the nth (from 0) model called `name`: its title and everything indented deeper
// below it (its fields, its input signatures, and the sub-modules nested under it).
inline std::string model_block(const std::string& block, const std::string& name, int nth = 0) {
  std::vector<std::string> lines = lines_of(block);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!is_title(lines[i], name) || nth-- > 0) continue;
    std::string text = lines[i] + "\n";
    size_t level = indent_of(lines[i]);
    for (size_t j = i + 1; j < lines.size(); ++j) {
      if (!lines[j].empty() && indent_of(lines[j]) <= level) break;
      text += lines[j] + "\n";
    }
    return text;
  }
  return "";
}

inline std::string title_of(const std::string& model) { return trim(model.substr(0, model.find('\n'))); }

inline std::vector<std::string> fields(const std::string& text, const std::string& label) {
  std::vector<std::string> values;
  for (const std::string& line : lines_of(text)) {
    std::string t = trim(line);
    if (t.rfind(label + ":", 0) == 0) values.push_back(trim(t.substr(label.size() + 1)));
  }
  return values;
}

// The first `label:` field of a text ("" when absent).
inline std::string field(const std::string& text, const std::string& label) {
  std::vector<std::string> v = fields(text, label);
  return v.empty() ? "" : v.front();
}

inline int count_titles(const std::string& block, const std::string& name) {
  int n = 0;
  for (const std::string& line : lines_of(block)) n += is_title(line, name) ? 1 : 0;
  return n;
}

inline size_t title_indent(const std::string& block, const std::string& name) {
  for (const std::string& line : lines_of(block)) {
    if (is_title(line, name)) return indent_of(line);
  }
  return std::string::npos;
}

inline bool is_hash8(const std::string& s) { return std::regex_match(s, std::regex("[0-9a-f]{8}")); }

inline bool benchmarked(const std::string& model) {
  return field(model, "Status").find("Successfully benchmarked") != std::string::npos;
}

// 1-based number of the first line of `file` containing `text` (0 when none does).
inline int line_of(const fs::path& file, const std::string& text) {
  std::vector<std::string> lines = lines_of(slurp(file));
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(text) != std::string::npos) return static_cast<int>(i + 1);
  }
  return 0;
}

// ---- reading the cache -------------------------------------------------------------------------

// Build directories: those holding their own <name>_state.yaml.
inline std::vector<fs::path> build_dirs(const fs::path& cache) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  if (!fs::is_directory(cache, ec)) return dirs;
  for (const auto& e : fs::directory_iterator(cache)) {
    const fs::path state = e.path() / (e.path().filename().string() + "_state.yaml");
    if (e.is_directory() && fs::exists(state)) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

inline json stats_of(const fs::path& build) { return json_from_yaml(slurp(build / "turnkey_stats.yaml")); }
inline json state_of(const fs::path& build) {
  return json_from_yaml(slurp(build / (build.filename().string() + "_state.yaml")));
}

inline std::vector<fs::path> files_in(const fs::path& dir, const std::string& extension) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == extension) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The text of every log_*.txt of a build, concatenated.
inline std::string build_logs(const fs::path& build) {
  std::string all;
  for (const fs::path& f : files_in(build, ".txt")) {
    if (f.filename().string().rfind("log_", 0) == 0) all += slurp(f);
  }
  return all;
}

inline onnx::TensorProto read_tensor(const fs::path& pb) {
  onnx::TensorProto t;
  EXPECT_TRUE(t.ParseFromString(slurp(pb))) << pb;
  return t;
}

inline std::vector<float> floats_of(const onnx::TensorProto& t) {
  if (!t.raw_data().empty()) {
    std::vector<float> v(t.raw_data().size() / sizeof(float));
    std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
    return v;
  }
  return {t.float_data().begin(), t.float_data().end()};
}

inline onnx::ModelProto read_model(const fs::path& file) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(slurp(file))) << file;
  return m;
}

// ---- the shared runs ---------------------------------------------------------------------------

// The PyTorch examples: keras.py needs TensorFlow (.deps/keras; its tests are test_keras.cpp).
inline std::vector<std::string> example_scripts() {
  std::vector<std::string> paths;
  for (const fs::path& p : files_in(kExamples, ".py")) {
    if (p.filename() != "keras.py") paths.push_back(p.string());
  }
  return paths;
}

// Acceptance 1: `turnkey examples/cli/scripts/*.py --analyze-only` (the shell expands the glob).
inline const RunResult& examples_analyze_only() {
  std::vector<std::string> args = example_scripts();
  args.push_back("--analyze-only");
  return run_once("examples-analyze", args);
}

inline std::string example_hash(const std::string& script_name, const std::string& model) {
  return field(model_block(script_block(examples_analyze_only().out, script_name), model), "Hash");
}

// Scripts that are only discovered.
inline const RunResult& analyzed_scripts() {
  return run_once("analyzed", {script("noisy.py"), script("class_attr.py"), script("loop_three.py"),
                               script("hash_variants.py"), script("integrity.py"),
                               script("imports_sibling.py"), "--analyze-only"});
}

// Scripts that are discovered, exported and benchmarked, several of them failing on purpose.
inline const RunResult& benchmarked_scripts() {
  std::vector<std::string> args = {
      script("dict_output.py"),  script("unexportable.py"),    script("fail_before.py"),
      script("fail_after.py"),   script("fail_in_forward.py"), script("exit_code.py"),
      script("syntax_error.py"), script("odd_calls.py"),       script("shadow/onnx.py"),
      script("killed.py"),       script("containers.py")};
  args.insert(args.end(), kFastBenchmark.begin(), kFastBenchmark.end());
  return run_once("benchmarked", args);
}

inline fs::path build_dir_of(const std::string& model) { return fs::path(field(model, "Build dir")); }

// ================================================================================================
// Acceptance: the tutorial scripts
// ================================================================================================

}  // namespace turnkey::test
