// Sequences and custom stages written in Python (docs/sequences.md): reading a sequence file
// (`python -m turnkeyml.build describe FILE`) and running one custom stage on an ONNX file
// (`... run FILE STAGE IN OUT`), each in an interpreter of its own. Thread-safe.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace turnkey {

// The Sequence a Python sequence file defines, as tool calls: [{"name", "options"}] (custom
// stages as `python-stage` calls). `python` as for find_python ("" = the default choice).
// Throws Error(InvalidInput) with the Python side's one-line reason.
nlohmann::json describe_python_sequence(const std::filesystem::path& file,
                                        const std::string& python);

struct PythonStageRun {
  bool ok = false;
  std::string output;  // what the stage printed (its traceback on failure)
  std::string error;   // one line, on failure
};

// Runs custom stage `stage` of sequence file `file` on `input`, writing `output`. Never throws
// for the stage's own failures (they are in the result); Error(Script) if no interpreter runs.
// With `sandbox_writable` (--sandbox, sandbox.h) it runs in the sandbox, where only those
// folders are writable (`output` must lie in one: a staging folder, staging.h).
PythonStageRun run_python_stage(
    const std::string& python, const std::filesystem::path& file, const std::string& stage,
    const std::filesystem::path& input, const std::filesystem::path& output, double timeout_s,
    const std::vector<std::filesystem::path>* sandbox_writable = nullptr);

}  // namespace turnkey
