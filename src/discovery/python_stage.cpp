#include "turnkey/discovery/python_stage.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdlib>

#include "turnkey/common/error.h"
#include "turnkey/common/process.h"
#include "turnkey/common/text.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/discovery/sandbox.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kMarker = "TURNKEY_SEQUENCE ";

// PYTHONPATH with turnkeyml first, and the folders a wrapped interpreter must see.
std::vector<std::pair<std::string, std::string>> python_env(const std::vector<fs::path>& folders) {
  std::string pythonpath = python_package_dir().string();
  if (const char* existing = std::getenv("PYTHONPATH"); existing && *existing) {
    pythonpath.append(":").append(existing);
  }
  std::string binds = python_package_dir().string();
  for (const fs::path& f : folders) binds.append(":").append(fs::absolute(f).string());
  if (const char* existing = std::getenv("TURNKEY_BIND_PATHS"); existing && *existing) {
    binds.append(":").append(existing);
  }
  return {{"PYTHONPATH", pythonpath}, {"TURNKEY_BIND_PATHS", binds}};
}

// The `error: ...` line the Python side ends a failure with, else how the process ended.
std::string failure_of(const CaptureResult& r) {
  if (r.timed_out) return "timed out";
  const std::string& out = r.out;
  size_t at = out.rfind("error: ");
  while (at != std::string::npos && at > 0 && out[at - 1] != '\n') {
    at = out.rfind("error: ", at - 1);
  }
  if (at != std::string::npos) return one_line(out.substr(at + 7));
  return "the Python side " + describe_wait_status(r.status);
}

bool succeeded(const CaptureResult& r) {
  return !r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
}

}  // namespace

json describe_python_sequence(const fs::path& file, const std::string& python) {
  const std::string interpreter = find_python(python);
  CaptureResult r =
      run_capture({interpreter, "-m", "turnkeyml.build", "describe", fs::absolute(file).string()},
                  300, python_env({fs::absolute(file).parent_path()}));
  if (!succeeded(r)) throw Error(ErrorKind::InvalidInput, failure_of(r));
  size_t at = r.out.rfind(kMarker);
  if (at == std::string::npos || (at > 0 && r.out[at - 1] != '\n')) {
    throw Error(ErrorKind::Internal, "the Python side did not describe the sequence");
  }
  const size_t start = at + std::string(kMarker).size();
  const size_t end = r.out.find('\n', start);
  json described;
  try {
    described = json::parse(
        r.out.substr(start, end == std::string::npos ? std::string::npos : end - start));
  } catch (const json::exception& e) {
    throw Error(ErrorKind::Internal, fmt::format("the Python side's sequence: {}", e.what()));
  }
  if (!described.is_object() || !described.contains("tools") || !described["tools"].is_array()) {
    throw Error(ErrorKind::Internal, "the Python side's sequence has no tool list");
  }
  return described["tools"];
}

PythonStageRun run_python_stage(const std::string& python, const fs::path& file,
                                const std::string& stage, const fs::path& input,
                                const fs::path& output, double timeout_s,
                                const std::vector<fs::path>* sandbox_writable) {
  std::vector<std::string> argv = {python,        "-m",  "turnkeyml.build", "run",
                                   file.string(), stage, input.string(),    output.string()};
  // Sandboxed, the output's folder is bound with the writable ones (a folder named in
  // TURNKEY_BIND_PATHS is read-only there).
  std::vector<fs::path> folders = {file.parent_path(), input.parent_path()};
  if (sandbox_writable) {
    folders.insert(folders.end(), sandbox_writable->begin(), sandbox_writable->end());
    std::vector<std::string> prefix = sandbox_command(*sandbox_writable, file.parent_path());
    argv.insert(argv.begin(), prefix.begin(), prefix.end());
  } else {
    folders.push_back(output.parent_path());
  }
  CaptureResult r = run_capture(argv, timeout_s, python_env(folders));
  PythonStageRun run;
  run.output = r.out;
  run.ok = succeeded(r);
  if (!run.ok) run.error = failure_of(r);
  return run;
}

}  // namespace turnkey
