// A runtime provided by a plugin library (include/turnkey/plugin/turnkey_plugin.h): the adapter
// from the C ABI to Runtime/Session, and the loader that finds, checks and registers plugins.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>

#include "turnkey/common/error.h"
#include "turnkey/runtime/plugin_host.h"
#include "turnkey/plugin/turnkey_plugin.h"

namespace turnkey {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMessageBytes = 1024;

int32_t to_abi(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return TURNKEY_DTYPE_FLOAT32;
    case DType::Float16:
      return TURNKEY_DTYPE_FLOAT16;
    case DType::Float64:
      return TURNKEY_DTYPE_FLOAT64;
    case DType::Int8:
      return TURNKEY_DTYPE_INT8;
    case DType::Uint8:
      return TURNKEY_DTYPE_UINT8;
    case DType::Int16:
      return TURNKEY_DTYPE_INT16;
    case DType::Int32:
      return TURNKEY_DTYPE_INT32;
    case DType::Int64:
      return TURNKEY_DTYPE_INT64;
    case DType::Bool:
      return TURNKEY_DTYPE_BOOL;
    default:  // the plugin ABI (turnkey_plugin.h) has no other element types
      break;
  }
  return 0;
}

DType from_abi(int32_t dtype) {
  switch (dtype) {
    case TURNKEY_DTYPE_FLOAT32:
      return DType::Float32;
    case TURNKEY_DTYPE_FLOAT16:
      return DType::Float16;
    case TURNKEY_DTYPE_FLOAT64:
      return DType::Float64;
    case TURNKEY_DTYPE_INT8:
      return DType::Int8;
    case TURNKEY_DTYPE_UINT8:
      return DType::Uint8;
    case TURNKEY_DTYPE_INT16:
      return DType::Int16;
    case TURNKEY_DTYPE_INT32:
      return DType::Int32;
    case TURNKEY_DTYPE_INT64:
      return DType::Int64;
    case TURNKEY_DTYPE_BOOL:
      return DType::Bool;
    default:
      return DType::Unknown;
  }
}

// The plugin's message, NUL-terminated whatever it wrote, as one line.
std::string message_of(const char* buffer, const char* fallback) {
  std::string text(buffer, strnlen(buffer, kMessageBytes));
  return text.empty() ? fallback : first_line(text);
}

class PluginSession final : public Session {
 public:
  PluginSession(const turnkey_plugin* plugin, turnkey_session* session, std::string name)
      : plugin_(plugin), session_(session), name_(std::move(name)) {}
  ~PluginSession() override { plugin_->destroy(session_); }

  void run() override {
    if (plugin_->run(session_, error_, kMessageBytes) != 0) {
      throw Error(ErrorKind::Runtime,
                  fmt::format("{}: {}", name_, message_of(error_, "run failed (no reason given)")));
    }
  }

  std::vector<HostTensor> outputs() override {
    std::vector<HostTensor> out;
    if (!plugin_->output_count || !plugin_->output) return out;
    const size_t n = plugin_->output_count(session_);
    for (size_t i = 0; i < n; ++i) {
      turnkey_tensor t{};
      if (plugin_->output(session_, i, &t) != 0) continue;
      HostTensor h;
      h.name = t.name ? t.name : fmt::format("output_{}", i);
      h.dtype = from_abi(t.dtype);
      h.shape.assign(t.shape, t.shape + std::max(t.rank, 0));
      const size_t expected = static_cast<size_t>(h.element_count()) * dtype_size_bytes(h.dtype);
      if (h.dtype == DType::Unknown || expected != t.size_bytes || (!t.data && expected)) {
        throw Error(ErrorKind::Runtime,
                    fmt::format("{}: output {} is malformed ({} bytes for shape {})", name_, i,
                                t.size_bytes, shape_to_string(h.shape)));
      }
      h.data.resize(expected);
      if (expected) std::memcpy(h.data.data(), t.data, expected);
      out.push_back(std::move(h));
    }
    return out;
  }

 private:
  const turnkey_plugin* plugin_;
  turnkey_session* session_;
  std::string name_;
  char error_[kMessageBytes] = {0};
};

class PluginRuntime final : public Runtime {
 public:
  PluginRuntime(const turnkey_plugin* plugin, fs::path library)
      : plugin_(plugin), library_(std::move(library)) {
    for (const char* const* d = plugin->devices; d && *d; ++d) devices_.push_back(*d);
  }

  std::string name() const override { return plugin_->name; }
  std::string display_name() const override {
    return plugin_->display_name ? plugin_->display_name : plugin_->name;
  }
  std::vector<std::string> devices() const override { return devices_; }
  std::string version() const override {
    const char* v = plugin_->version();
    return v ? v : "unknown";
  }
  // The ABI (v1) lets different sessions run at once, one thread each; one session is used by
  // one thread at a time.
  ConcurrencySupport concurrency() const override { return {false, true, ""}; }
  Availability probe() const override {
    char reason[kMessageBytes] = {0};
    if (plugin_->probe(reason, sizeof reason)) return {true, ""};
    return {false, message_of(reason, "the plugin gave no reason")};
  }

  std::unique_ptr<Session> load(const fs::path& onnx_path, const std::vector<HostTensor>& inputs,
                                const RuntimeOptions& options) const override {
    if (std::find(devices_.begin(), devices_.end(), options.device) == devices_.end()) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{}: device '{}' is not supported (devices: {})", name(),
                              options.device, fmt::join(devices_, ", ")));
    }
    std::vector<turnkey_tensor> tensors;
    for (const HostTensor& t : inputs) {
      if (!t.is_tensor() || to_abi(t.dtype) == 0) {
        throw Error(ErrorKind::InvalidInput,
                    fmt::format("{}: input '{}' is a {}, which the plugin interface does not carry",
                                name(), t.name, describe_value(t)));
      }
      tensors.push_back({t.name.c_str(), to_abi(t.dtype), static_cast<int32_t>(t.shape.size()),
                         t.shape.data(), t.data.data(), static_cast<uint64_t>(t.data.size())});
    }
    std::vector<turnkey_option> rt_args;
    for (const auto& [key, value] : options.runtime_args) {
      rt_args.push_back({key.c_str(), value.c_str()});
    }
    const std::string path = onnx_path.string();
    turnkey_load_request request{path.c_str(),   options.device.c_str(), options.threads,
                                 tensors.data(), tensors.size(),         rt_args.data(),
                                 rt_args.size()};
    char error[kMessageBytes] = {0};
    turnkey_session* session = plugin_->load(&request, error, sizeof error);
    if (!session) {
      throw Error(
          ErrorKind::Runtime,
          fmt::format("{}: {}", name(), message_of(error, "load failed (no reason given)")));
    }
    return std::make_unique<PluginSession>(plugin_, session, name());
  }

 private:
  const turnkey_plugin* plugin_;
  fs::path library_;
  std::vector<std::string> devices_;
};

bool valid_runtime_name(const char* name) {
  if (!name || !*name || std::strlen(name) > 64) return false;
  for (const char* c = name; *c; ++c) {
    bool ok =
        (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.';
    if (!ok) return false;
  }
  return true;
}

bool is_library_file(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() > 3 &&
         (name.compare(name.size() - 3, 3, ".so") == 0 || name.find(".so.") != std::string::npos);
}

// TURNKEY_PLUGIN_PATH split at ':' (empty entries skipped).
std::vector<fs::path> env_plugin_entries() {
  std::vector<fs::path> entries;
  const char* env = std::getenv("TURNKEY_PLUGIN_PATH");
  if (!env) return entries;
  const std::string s(env);
  size_t start = 0;
  for (;;) {
    const size_t colon = s.find(':', start);
    const std::string entry = s.substr(start, colon == std::string::npos ? colon : colon - start);
    if (!entry.empty()) entries.emplace_back(entry);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return entries;
}

fs::path exe_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// Libraries on the search path, each once, in search order; entries that do not exist are
// recorded as problems (a typo in TURNKEY_PLUGIN_PATH must not go unnoticed).
std::vector<fs::path> candidate_libraries(std::vector<PluginRecord>& records) {
  std::vector<fs::path> found;
  std::set<fs::path> seen;
  const std::vector<fs::path> env_entries = env_plugin_entries();
  const std::set<fs::path> from_env(env_entries.begin(), env_entries.end());
  for (const fs::path& entry : plugin_search_path()) {
    std::error_code ec;
    std::vector<fs::path> files;
    if (fs::is_directory(entry, ec)) {
      for (const auto& e : fs::directory_iterator(entry, ec)) {
        if (is_library_file(e.path()) && fs::is_regular_file(e.path(), ec)) {
          files.push_back(e.path());
        }
      }
      std::sort(files.begin(), files.end());
    } else if (fs::exists(entry, ec)) {
      files.push_back(entry);
    } else if (from_env.count(entry)) {
      records.push_back({entry, "", "TURNKEY_PLUGIN_PATH entry does not exist"});
      continue;
    }
    for (const fs::path& f : files) {
      fs::path canonical = fs::weakly_canonical(f, ec);
      if (ec) canonical = f;
      if (seen.insert(canonical).second) found.push_back(f);
    }
  }
  return found;
}

// Loads one library; returns its runtime or records why not.
const Runtime* load_one(const fs::path& library, const std::set<std::string>& taken,
                        PluginRecord& record) {
  // RTLD_NOW: a missing symbol fails here, with dlerror's reason, not at the first call.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    record.problem = fmt::format("cannot be loaded: {}", e ? first_line(e) : "dlopen failed");
    return nullptr;
  }
  // From here on the library stays loaded: turnkey never unloads plugins (their strings and
  // code must stay valid), and a refused one costs only its mapping.
  auto entry =
      reinterpret_cast<turnkey_plugin_entry_fn>(dlsym(handle, TURNKEY_PLUGIN_ENTRY_SYMBOL));
  if (!entry) {
    record.problem = fmt::format("not a turnkey plugin: it exports no {}() (see docs/plugins.md)",
                                 TURNKEY_PLUGIN_ENTRY_SYMBOL);
    return nullptr;
  }
  const turnkey_plugin* plugin = entry();
  if (!plugin) {
    record.problem = fmt::format("{}() returned NULL", TURNKEY_PLUGIN_ENTRY_SYMBOL);
    return nullptr;
  }
  if (plugin->abi_version != TURNKEY_PLUGIN_ABI_VERSION) {
    record.problem = fmt::format(
        "built for turnkey plugin ABI version {}, this turnkey speaks version {} (rebuild it "
        "against include/turnkey/plugin/turnkey_plugin.h)",
        plugin->abi_version, TURNKEY_PLUGIN_ABI_VERSION);
    return nullptr;
  }
  if (plugin->struct_size < sizeof(turnkey_plugin)) {
    record.problem =
        fmt::format("its turnkey_plugin struct is {} bytes, ABI version {} needs {}",
                    plugin->struct_size, TURNKEY_PLUGIN_ABI_VERSION, sizeof(turnkey_plugin));
    return nullptr;
  }
  if (!valid_runtime_name(plugin->name)) {
    record.problem = "its runtime name is missing or not [a-z0-9._-]+ (at most 64 characters)";
    return nullptr;
  }
  if (!plugin->version || !plugin->probe || !plugin->load || !plugin->run || !plugin->destroy ||
      !plugin->devices || !plugin->devices[0]) {
    record.problem = fmt::format(
        "runtime '{}' leaves a required function or its device list "
        "empty",
        plugin->name);
    return nullptr;
  }
  if (taken.count(plugin->name)) {
    record.problem = fmt::format("runtime name '{}' is already taken", plugin->name);
    return nullptr;
  }
  record.runtime_name = plugin->name;
  static std::vector<std::unique_ptr<PluginRuntime>> runtimes;  // live for the process
  runtimes.push_back(std::make_unique<PluginRuntime>(plugin, library));
  return runtimes.back().get();
}

std::vector<PluginRecord>& records_storage() {
  static std::vector<PluginRecord> records;
  return records;
}

}  // namespace

std::vector<fs::path> plugin_search_path() {
  std::vector<fs::path> path = env_plugin_entries();
  const fs::path dir = exe_dir();
  if (!dir.empty()) {
    path.push_back(dir / "plugins");
    path.push_back((dir / ".." / "lib" / "turnkey" / "plugins").lexically_normal());
  }
  return path;
}

std::vector<const Runtime*> load_plugin_runtimes(const std::vector<const Runtime*>& builtins) {
  std::vector<PluginRecord>& records = records_storage();
  std::vector<const Runtime*> loaded;
  std::set<std::string> taken;
  for (const Runtime* r : builtins) taken.insert(r->name());
  try {
    for (const fs::path& library : candidate_libraries(records)) {
      PluginRecord record{library, "", ""};
      if (const Runtime* r = load_one(library, taken, record)) {
        taken.insert(r->name());
        loaded.push_back(r);
      }
      records.push_back(std::move(record));
    }
  } catch (const std::exception& e) {
    records.push_back({"", "", fmt::format("plugin search failed: {}", first_line(e.what()))});
  }
  for (const PluginRecord& r : records) {
    if (!r.problem.empty()) {
      std::cerr << fmt::format("turnkey: plugin {} refused: {}\n", r.library.string(), r.problem)
                << std::flush;
    }
  }
  return loaded;
}

const std::vector<PluginRecord>& plugin_records() {
  runtime_registry();
  return records_storage();
}

}  // namespace turnkey
