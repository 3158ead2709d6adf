#include "turnkey/discovery/interpreter.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/process.h"
#include "turnkey/common/sha256.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Bump when the probe's answer or the key's material changes meaning: older entries are ignored.
constexpr int kProbeCacheVersion = 2;
constexpr size_t kMaxEntries = 64;

// Finds torch and onnx without importing them (import torch takes ~0.7 s): their versions come
// from their version.py, and the files and sys.path folders the answer rests on are listed.
constexpr const char* kProbeScript = R"PY(
import importlib.metadata, importlib.util, json, os, re, sys
def package(name):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        spec = None
    if spec is None or not spec.origin:
        return None, []
    version_py = os.path.join(os.path.dirname(spec.origin), "version.py")
    version = ""
    try:
        with open(version_py) as f:
            m = re.search(r"^(?:__version__|version)\s*=\s*['\"]([^'\"]+)", f.read(), re.M)
        version = m.group(1) if m else ""
    except OSError:
        pass
    if not version:
        try:
            version = importlib.metadata.version(name)
        except Exception:
            version = "unknown"
    return version, [spec.origin, version_py]
def export_opsets(files):
    # torch.onnx's range, read from its constants file without importing torch.
    if not files:
        return None, []
    constants = os.path.join(os.path.dirname(files[0]), "onnx", "_constants.py")
    try:
        with open(constants) as f:
            text = f.read()
    except OSError:
        return None, []
    def get(name):
        m = re.search(r"^" + name + r"\s*=\s*(\d+)", text, re.M)
        return int(m.group(1)) if m else None
    low = get("ONNX_MIN_OPSET")
    high = get("ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET") or get("ONNX_MAX_OPSET")
    return ([low, high] if low and high else None), [constants]
torch, torch_files = package("torch")
opsets, opset_files = export_opsets(torch_files)
onnx, onnx_files = package("onnx")
def distribution(*names):
    # TensorFlow's version from its distribution's metadata (no version.py; importing it takes
    # seconds): tensorflow-cpu or tensorflow.
    for name in names:
        try:
            return importlib.metadata.version(name)
        except Exception:
            pass
    return "unknown"
tf_spec = importlib.util.find_spec("tensorflow")
keras_spec = importlib.util.find_spec("keras")
tensorflow = distribution("tensorflow-cpu", "tensorflow") if tf_spec and tf_spec.origin else None
keras = distribution("keras") if keras_spec and keras_spec.origin else None
tf_files = [s.origin for s in (tf_spec, keras_spec) if s and s.origin]
paths = [p for p in sys.path if p and os.path.isdir(p)]
print("TURNKEY_PROBE " + json.dumps({"executable": sys.executable,
    "python": sys.version.split()[0], "torch": torch, "onnx": onnx, "opsets": opsets,
    "tensorflow": tensorflow, "keras": keras,
    "files": paths + torch_files + opset_files + onnx_files + tf_files}))
)PY";

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A pyenv shim is a short shell script that re-enters pyenv (~0.4-1.7 s per start here).
bool is_pyenv_shim(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[4096];
  in.read(head, sizeof head);
  const std::string text(head, static_cast<size_t>(in.gcount()));
  return text.rfind("#!", 0) == 0 && text.find("pyenv") != std::string::npos &&
         text.find("exec") != std::string::npos;
}

// What pyenv reads to pick a version: PYENV_VERSION, the nearest .python-version above the
// working folder, and the global version file.
std::string pyenv_selection() {
  std::string out = "PYENV_VERSION=" + env_or_empty("PYENV_VERSION") + "\n";
  std::error_code ec;
  for (fs::path dir = fs::current_path(ec); !ec && !dir.empty(); dir = dir.parent_path()) {
    const fs::path f = dir / ".python-version";
    if (fs::exists(f, ec)) {
      out += f.string() + "=" + read_file(f) + "\n";
      break;
    }
    if (dir == dir.root_path()) break;
  }
  std::string root = env_or_empty("PYENV_ROOT");
  if (root.empty()) root = env_or_empty("HOME") + "/.pyenv";
  if (fs::exists(root + "/version", ec)) out += "global=" + read_file(root + "/version");
  return out;
}

std::string probe_key(const std::string& candidate, bool shim) {
  // The probe's own text is part of the key: a turnkey whose probe asks differently never
  // trusts an answer to the old question.
  std::string material =
      fmt::format("v{}\n{}\n{}\n", kProbeCacheVersion, sha256_hex(kProbeScript), candidate);
  for (const char* name : {"PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE",
                           "PYTHONNOUSERSITE", "PYTHONSAFEPATH", "HOME", "VIRTUAL_ENV"}) {
    material += fmt::format("{}={}\n", name, env_or_empty(name));
  }
  if (shim) material += pyenv_selection();
  return sha256_hex(material);
}

// "mtime_ns:size" of a path (following links), or "missing".
std::string file_stamp(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "missing";
  return fmt::format("{}.{}:{}:{}", st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size,
                     st.st_ino);
}

struct Probe {
  // The probe ran to its end and answered. An inconclusive one (timed out on a loaded machine,
  // crashed, not a Python) is never remembered: the next run asks again.
  bool conclusive = false;
  bool has_torch = false;
  std::string executable, python_version, torch_version, onnx_version;
  std::string tensorflow_version, keras_version;   // "" when not installed
  int export_opset_min = 0, export_opset_max = 0;  // 0: torch.onnx's constants not found
  std::map<std::string, std::string> stamps;  // path -> file_stamp when probed
  std::string why;  // when !has_torch: "cannot import torch", "its probe timed out after 60 s"
};

json to_json(const Probe& p) {
  return {{"has_torch", p.has_torch},
          {"executable", p.executable},
          {"python", p.python_version},
          {"torch", p.torch_version},
          {"onnx", p.onnx_version},
          {"stamps", p.stamps},
          {"tensorflow", p.tensorflow_version},
          {"keras", p.keras_version},
          {"opsets", {p.export_opset_min, p.export_opset_max}}};
}

Probe from_json(const json& j) {
  Probe p;
  p.conclusive = true;
  p.why = "this interpreter cannot import torch";
  p.has_torch = j.at("has_torch").get<bool>();
  p.executable = j.at("executable").get<std::string>();
  p.python_version = j.at("python").get<std::string>();
  p.torch_version = j.at("torch").get<std::string>();
  p.onnx_version = j.at("onnx").get<std::string>();
  p.tensorflow_version = j.at("tensorflow").get<std::string>();
  p.keras_version = j.at("keras").get<std::string>();
  p.stamps = j.at("stamps").get<std::map<std::string, std::string>>();
  const json& opsets = j.at("opsets");
  p.export_opset_min = opsets.at(0).get<int>();
  p.export_opset_max = opsets.at(1).get<int>();
  return p;
}

bool still_true(const Probe& p) {
  for (const auto& [path, stamp] : p.stamps) {
    if (file_stamp(path) != stamp) return false;
  }
  return true;
}

Probe run_probe(const std::string& candidate) {
  Probe p;
  CaptureResult r = run_capture({candidate, "-c", kProbeScript}, 60.0);
  const size_t at = r.out.rfind("TURNKEY_PROBE ");
  if (r.timed_out || !WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0 ||
      at == std::string::npos) {
    p.why = r.timed_out ? "its probe timed out after 60 s (is the machine overloaded?)"
                        : "it does not run Python: its probe " + describe_wait_status(r.status);
    return p;  // not a working interpreter (or not now): no torch, and nothing to remember
  }
  json j = json::parse(r.out.substr(at + 14, r.out.find('\n', at) - at - 14), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return p;
  p.conclusive = true;
  p.why = "this interpreter cannot import torch";
  p.executable = j.value("executable", "");
  p.python_version = j.value("python", "");
  p.has_torch = j["torch"].is_string();
  if (p.has_torch) {
    const std::string v = j["torch"].get<std::string>();
    p.torch_version = v.substr(0, v.find('+'));  // Debian: "1.13.0a0+git..." -> "1.13.0a0"
  }
  if (j["onnx"].is_string()) p.onnx_version = j["onnx"].get<std::string>();
  if (j["tensorflow"].is_string()) p.tensorflow_version = j["tensorflow"].get<std::string>();
  if (j["keras"].is_string()) p.keras_version = j["keras"].get<std::string>();
  if (const json opsets = j.value("opsets", json()); opsets.is_array() && opsets.size() == 2 &&
                                                     opsets[0].is_number_integer() &&
                                                     opsets[1].is_number_integer()) {
    p.export_opset_min = opsets[0].get<int>();
    p.export_opset_max = opsets[1].get<int>();
  }
  std::vector<std::string> files = {candidate};
  std::error_code ec;
  const fs::path real = fs::canonical(candidate, ec);
  if (!ec) files.push_back(real.string());
  if (!p.executable.empty()) files.push_back(p.executable);
  for (const auto& f : j.value("files", json::array())) {
    if (f.is_string()) files.push_back(f.get<std::string>());
  }
  for (const std::string& f : files) p.stamps[f] = file_stamp(f);
  return p;
}

fs::path cache_file() { return state_dir() / "interpreters.json"; }

json read_cache() {
  std::error_code ec;
  if (!fs::exists(cache_file(), ec)) return json::object();
  try {
    json j = json::parse(read_file(cache_file()));
    if (j.is_object() && j.value("version", 0) == kProbeCacheVersion) return j;
  } catch (const std::exception&) {
    // Unreadable or damaged: probed again and rewritten.
  }
  return json::object();
}

// Remembered answers are an optimisation: failing to read or write them never fails a run.
void remember(const std::string& key, const Probe& p) {
  try {
    json cache = read_cache();
    json entries = cache.value("entries", json::object());
    json entry = to_json(p);
    entry["used"] = static_cast<int64_t>(time(nullptr));
    entries[key] = entry;
    while (entries.size() > kMaxEntries) {
      auto oldest = entries.begin();
      for (auto it = entries.begin(); it != entries.end(); ++it) {
        if (it->value("used", int64_t{0}) < oldest->value("used", int64_t{0})) oldest = it;
      }
      entries.erase(oldest);
    }
    fs::create_directories(state_dir());
    write_file_atomic(cache_file(), json{{"version", kProbeCacheVersion}, {"entries", entries}}
                                        .dump(1));
  } catch (const std::exception&) {
  }
}

Probe probe(const std::string& candidate, bool shim, bool& from_cache) {
  const std::string key = probe_key(candidate, shim);
  from_cache = false;
  try {
    json cache = read_cache();
    if (cache.contains("entries") && cache["entries"].contains(key)) {
      Probe p = from_json(cache["entries"][key]);
      if (still_true(p)) {
        from_cache = true;
        return p;
      }
    }
  } catch (const std::exception&) {
    // A mistyped entry: probe again.
  }
  Probe p = run_probe(candidate);
  if (p.conclusive) remember(key, p);
  return p;
}

struct Candidate {
  PythonInterpreter interpreter;
  bool has_torch = false;
  std::string why;  // when !has_torch
};

// What `candidate` is, probed or remembered. Through a shim, turnkey runs what it selects: the
// same interpreter without the shim's start-up.
Candidate examine(const std::string& candidate, const std::string& source) {
  const bool shim = is_pyenv_shim(candidate);
  bool from_cache = false;
  const Probe p = probe(candidate, shim, from_cache);
  Candidate c{{}, p.has_torch, p.why};
  PythonInterpreter& i = c.interpreter;
  i.candidate = candidate;
  i.source = source;
  i.path = candidate;
  if (shim && !p.executable.empty() &&
      access(p.executable.c_str(), X_OK) == 0) {
    i.path = p.executable;
  }
  i.python_version = p.python_version;
  i.torch_version = p.torch_version;
  i.onnx_version = p.onnx_version;
  i.tensorflow_version = p.tensorflow_version;
  i.keras_version = p.keras_version;
  i.export_opset_min = p.export_opset_min;
  i.export_opset_max = p.export_opset_max;
  i.from_cache = from_cache;
  return c;
}

}  // namespace

const PythonInterpreter& find_interpreter(const std::string& override_path) {
  static std::mutex mutex;
  static std::map<std::string, PythonInterpreter> chosen;  // per override, once per process
  std::lock_guard<std::mutex> lock(mutex);
  std::string named = override_path;
  std::string source = "--python";
  if (named.empty() && !env_or_empty("TURNKEY_PYTHON").empty()) {
    named = env_or_empty("TURNKEY_PYTHON");
    source = "TURNKEY_PYTHON";
  }
  if (auto it = chosen.find(named); it != chosen.end()) return it->second;
  if (!named.empty()) {
    const std::string resolved = named.find('/') == std::string::npos ? find_on_path(named) : named;
    if (resolved.empty() || access(resolved.c_str(), X_OK) != 0) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{} {}: not an executable interpreter", source, named));
    }
    const Candidate c = examine(resolved, source);
    if (!c.has_torch) {
      throw Error(ErrorKind::InvalidInput, fmt::format("{} {}: {}", source, resolved, c.why));
    }
    return chosen[named] = c.interpreter;
  }
  std::vector<std::string> tried;
  for (const auto& [candidate, from] :
       {std::pair{find_on_path("python3"), "PATH"}, std::pair{std::string("/usr/bin/python3"),
                                                              "default"}}) {
    if (candidate.empty() || access(candidate.c_str(), X_OK) != 0) continue;
    if (std::find(tried.begin(), tried.end(), candidate) != tried.end()) continue;
    tried.push_back(candidate);
    const Candidate c = examine(candidate, from);
    if (c.has_torch) return chosen[named] = c.interpreter;
  }
  throw Error(ErrorKind::InvalidInput,
              fmt::format("no Python interpreter with torch found (tried: {}); install "
                          "python3-torch (scripts/setup does) or set TURNKEY_PYTHON",
                          tried.empty() ? std::string("none") : fmt::format("{}", fmt::join(tried, ", "))));
}

}  // namespace turnkey
