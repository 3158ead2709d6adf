#include "turnkey/common/env.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "turnkey/common/error.h"

namespace turnkey {

namespace {

const char* value_of(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

}  // namespace

bool env_bool(const char* name, bool fallback) {
  const char* raw = value_of(name);
  if (!raw) return fallback;
  std::string v(raw);
  std::transform(v.begin(), v.end(), v.begin(), ::tolower);
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  throw Error(ErrorKind::InvalidInput,
              fmt::format("{}={}: expected True or False", name, raw));
}

std::optional<int64_t> env_int(const char* name, int64_t min, int64_t max) {
  const char* raw = value_of(name);
  if (!raw) return std::nullopt;
  try {
    size_t used = 0;
    long long v = std::stoll(raw, &used);
    if (used == std::string(raw).size() && v >= min && v <= max) return v;
  } catch (const std::exception&) {
  }
  throw Error(ErrorKind::InvalidInput,
              fmt::format("{}={}: expected a whole number from {} to {}", name, raw, min, max));
}

bool show_tracebacks() { return env_bool("TURNKEY_TRACEBACK", true); }

void validate_environment() {
  show_tracebacks();
  env_bool("TURNKEY_DEBUG", false);
  env_bool("TURNKEY_BUILD_MONITOR", true);
  env_bool("TURNKEY_SANDBOX", false);
  env_int("TURNKEY_ONNX_OPSET", 7, 30);
  env_int("TURNKEY_TIMEOUT_SECONDS", 1, 365LL * 24 * 3600);
  // Read by the Python side when it exports (float64_reference.py, onnx_optimizer.py); refused
  // here so a bad value stops the command before any script runs.
  env_int("TURNKEY_FLOAT64_BUDGET_S", 0, 365LL * 24 * 3600);
  env_int("TURNKEY_ONNX_OPTIMIZER_BUDGET_S", 0, 365LL * 24 * 3600);
}

void restore_library_path() {
  const char* before = std::getenv("TURNKEY_LD_LIBRARY_PATH_BEFORE");
  if (!before) return;
  if (*before) {
    setenv("LD_LIBRARY_PATH", before, 1);
  } else {
    unsetenv("LD_LIBRARY_PATH");
  }
  unsetenv("TURNKEY_LD_LIBRARY_PATH_BEFORE");
}

std::filesystem::path state_dir() {
  if (const char* d = value_of("TURNKEY_STATE_DIR")) return d;
  if (const char* d = value_of("XDG_STATE_HOME")) return std::filesystem::path(d) / "turnkey";
  const char* home = value_of("HOME");
  return std::filesystem::path(home ? home : "") / ".local" / "state" / "turnkey";
}

}  // namespace turnkey
