// Environment variables of the reference tool, read and validated in one place. An invalid value
// is an Error(InvalidInput) naming the variable, its value and what is expected (never a crash).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace turnkey {

// True/False (also 1/0, yes/no, on/off, any case). Unset or empty -> fallback.
bool env_bool(const char* name, bool fallback);
// A whole number in [min, max]. Unset or empty -> nullopt.
std::optional<int64_t> env_int(const char* name, int64_t min, int64_t max);

// TURNKEY_TRACEBACK: whether a failure's Python traceback is shown on stderr as well as kept in
// its log. On unless set to False, as the reference tool's documents say.
bool show_tracebacks();

// Checks every TURNKEY_* variable turnkey knows (TURNKEY_TRACEBACK, TURNKEY_DEBUG,
// TURNKEY_BUILD_MONITOR, TURNKEY_SANDBOX, TURNKEY_ONNX_OPSET, TURNKEY_TIMEOUT_SECONDS,
// TURNKEY_FLOAT64_BUDGET_S, TURNKEY_ONNX_OPTIMIZER_BUDGET_S), so a bad value fails the command up
// front with one line.
void validate_environment();

// Puts back the LD_LIBRARY_PATH a caller had before it prepended the binary's own library path
// (TURNKEY_LD_LIBRARY_PATH_BEFORE, set by the Python API when its interpreter lives in another
// root: docs/torch_versions.md). The loader read the path at start, so turnkey keeps its
// libraries; its children get the caller's environment. Call first in main(), before threads.
void restore_library_path();

// Where turnkey remembers facts of this machine between runs (interpreter probes, the best
// machine-speed probe): TURNKEY_STATE_DIR, else $XDG_STATE_HOME/turnkey, else
// ~/.local/state/turnkey.
std::filesystem::path state_dir();

}  // namespace turnkey
