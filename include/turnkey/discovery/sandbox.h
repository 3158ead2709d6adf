// --sandbox (docs/sandbox.md): the Python side of each script runs through scripts/bwrap-run in
// sandbox mode — a read-only view of the machine, a private /tmp, an empty read-only home, no
// network, its own process ids — writable only in a staging folder of its input (staging.h) and
// the paths given with --sandbox-allow. One bwrap helper
// serves this and the torch 2 interpreter wrapper (which nests inside it). Thread-safe.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace turnkey {

// The run summary's line for a sandboxed run.
inline constexpr const char* kSandboxedLine =
    "Sandboxed: scripts ran with no network and no home, the cache read-only "
    "(docs/sandbox.md)";

// True when --sandbox was given or TURNKEY_SANDBOX is true (an invalid value is an InvalidInput).
bool sandbox_requested(bool flag);

// The bwrap-run helper this binary uses: next to it (build/bwrap-run), under
// <prefix>/libexec/turnkey, else the source tree's scripts/bwrap-run.
std::filesystem::path bwrap_run_path();

// Throws Error(InvalidInput) in one line when a sandbox cannot be made here (no bwrap, no
// helper, a --sandbox-allow path that does not exist). Called before any script runs.
void check_sandbox(const std::vector<std::string>& allow);

// The command prefix that runs what follows in the sandbox: `writable` folders (a staging
// folder, the --sandbox-allow paths) stay writable; the command starts in `start_dir` when the
// caller's working directory is hidden (under $HOME or /tmp).
std::vector<std::string> sandbox_command(const std::vector<std::filesystem::path>& writable,
                                         const std::filesystem::path& start_dir);

}  // namespace turnkey
