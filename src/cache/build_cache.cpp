#include "turnkey/cache/build_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "turnkey/cache/fields.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/sha256.h"
#include "turnkey/common/text.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path resolve_cache_dir(const std::string& flag_value) {
  if (!flag_value.empty()) return expand_user(flag_value);
  const char* env = std::getenv("TURNKEY_CACHE_DIR");
  if (env && *env) return expand_user(env);
  return expand_user("~/.cache/turnkey");
}

std::string make_build_name(const std::string& stem, const std::string& hash8) {
  std::string clean;
  for (char c : stem) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    clean += ok ? c : '_';
  }
  size_t first = clean.find_first_not_of('.');
  clean = first == std::string::npos ? "" : clean.substr(first);
  if (clean.empty()) clean = "model";
  if (clean.size() > 100) clean.resize(100);
  return hash8.empty() ? clean : clean + "_" + hash8;
}

json RunRecord::to_json() const {
  return {{"command_line", command_line}, {"cwd", cwd}, {"turnkey_version", turnkey_version}};
}

std::string RunRecord::id() const { return sha256_hex(to_json().dump()).substr(0, 16); }

fs::path run_record_path(const fs::path& cache_dir, const std::string& id) {
  return cache_dir / "inputs" / "runs" / (id + ".yaml");
}

std::string record_run(const fs::path& cache_dir, const RunRecord& run) {
  if (run.command_line.empty()) return "";
  const std::string id = run.id();
  const fs::path path = run_record_path(cache_dir, id);
  std::error_code ec;
  if (fs::exists(path, ec)) return id;  // the same content: its id is the content's hash
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    throw Error(ErrorKind::Cache,
                fmt::format("{}: cannot create: {}", path.parent_path().string(), ec.message()));
  }
  write_file_atomic(path, yaml_from_json(run.to_json()));
  return id;
}

bool is_safe_build_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\\\0", 3)) == std::string::npos;
}

namespace {

void emit(YAML::Emitter& out, const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      out << YAML::BeginMap;
      for (auto it = v.begin(); it != v.end(); ++it) {
        // YAML reads an implicit key of at most 1024 characters back, escapes included: a long
        // one (any bytes a damaged or hostile file held; turnkey's own keys are short) is
        // written as an explicit "? key".
        if (it.key().size() > 128) out << YAML::LongKey;
        out << YAML::Key << it.key() << YAML::Value;
        emit(out, it.value());
      }
      out << YAML::EndMap;
      break;
    case json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& e : v) emit(out, e);
      out << YAML::EndSeq;
      break;
    case json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      // Quote strings that YAML would otherwise read back as another type.
      out << YAML::DoubleQuoted << s;
      break;
    }
    case json::value_t::boolean: out << v.get<bool>(); break;
    case json::value_t::number_integer: out << v.get<int64_t>(); break;
    case json::value_t::number_unsigned: out << v.get<uint64_t>(); break;
    case json::value_t::number_float: out << v.get<double>(); break;
    default: out << YAML::Null; break;
  }
}

// Bounds on a YAML document's tree. yaml-cpp resolves an alias to the node it names, so a file
// can make a cycle (`a: &x [*x]`) or expand exponentially (each level aliasing the last twice):
// a walk without bounds overflows the stack or never ends. A file turnkey wrote has no aliases
// and no more values than bytes; the bound on values leaves room for a hand-edited file's few.
constexpr int kMaxYamlDepth = 256;

struct YamlWalk {
  size_t values_left;

  json from_node(const YAML::Node& n, int depth) {
    if (depth > kMaxYamlDepth) {
      throw Error(ErrorKind::Cache,
                  fmt::format("invalid YAML: nested deeper than {} levels (or an alias inside "
                              "the node it names)",
                              kMaxYamlDepth));
    }
    if (values_left == 0) {
      throw Error(ErrorKind::Cache,
                  "invalid YAML: its aliases expand to more values than the file has bytes");
    }
    --values_left;
    switch (n.Type()) {
      case YAML::NodeType::Map: {
        json o = json::object();
        for (const auto& kv : n) {
          o[valid_utf8(kv.first.as<std::string>())] = from_node(kv.second, depth + 1);
        }
        return o;
      }
      case YAML::NodeType::Sequence: {
        json a = json::array();
        for (const auto& e : n) a.push_back(from_node(e, depth + 1));
        return a;
      }
      case YAML::NodeType::Scalar: return from_scalar(n);
      default: return nullptr;
    }
  }

  static json from_scalar(const YAML::Node& n) {
    // A file another process (or node, or version) wrote may hold any bytes; JSON holds UTF-8.
    const std::string s = valid_utf8(n.Scalar());
    if (n.Tag() == "!") return s;  // double-quoted: a string
    int64_t i;
    double d;
    bool b;
    if (YAML::convert<int64_t>::decode(n, i)) return i;
    if (YAML::convert<double>::decode(n, d)) return d;
    if (YAML::convert<bool>::decode(n, b)) return b;
    return s;
  }
};

}  // namespace

std::string yaml_from_json(const json& value) {
  YAML::Emitter out;
  out.SetDoublePrecision(10);
  emit(out, value);
  return std::string(out.c_str()) + "\n";
}

json json_from_yaml(const std::string& yaml_text) {
  try {
    return YamlWalk{yaml_text.size() + 64}.from_node(YAML::Load(yaml_text), 0);
  } catch (const YAML::Exception& e) {
    throw Error(ErrorKind::Cache, fmt::format("invalid YAML: {}", e.what()));
  }
}

std::string utc_timestamp_now() { return iso_utc_timestamp_now(); }

BuildLock::BuildLock(const fs::path& build_dir, const std::function<void()>& on_wait) {
  std::error_code ec;
  fs::create_directories(build_dir, ec);
  const fs::path path = build_dir / ".lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw Error(ErrorKind::Cache, fmt::format("cannot open lock {}: {}", path.string(),
                                              strerror(errno)));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  if (on_wait) on_wait();
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      int err = errno;
      ::close(fd_);
      throw Error(ErrorKind::Cache, fmt::format("cannot lock {}: {}", path.string(), strerror(err)));
    }
  }
}

BuildLock::~BuildLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the flock
}

BuildDir::BuildDir(const fs::path& cache_dir, const std::string& build_name)
    : dir_(cache_dir / build_name), name_(build_name) {
  if (!is_safe_build_name(build_name)) {
    throw Error(ErrorKind::InvalidInput, fmt::format("unsafe build name '{}'", build_name));
  }
}

void BuildDir::create() const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) {
    throw Error(ErrorKind::Cache,
                fmt::format("cannot create build dir {}: {}", dir_.string(), ec.message()));
  }
}

void BuildDir::write_state(const json& state) const {
  json stamped = state;
  stamped["schema_version"] = kStateSchemaVersion;
  write_file_atomic(state_path(), yaml_from_json(stamped));
}

void BuildDir::write_stats(const json& stats) const {
  json stamped = stats;
  stamped["schema_version"] = kStatsSchemaVersion;
  write_file_atomic(stats_path(), yaml_from_json(stamped));
}

}  // namespace turnkey
