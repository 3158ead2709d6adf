// python-stage: a custom stage written in Python (docs/sequences.md), run by the Python side.
// ONNX file in, ONNX file out; the engine caches it like any other tool (its key holds the
// options, the sequence file's SHA-256 and the key the Python side made of the stage's source).
#include "turnkey/discovery/python_stage.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include "stages/build.h"
#include "catalog/tool_checks.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/sha256.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

namespace engine_internal {

namespace {

constexpr double kStageTimeoutS = 3600;

}  // namespace

std::string python_stage_versions(const Build&, const json& options) {
  const std::string file = options.value("file", "");
  if (file.empty()) return "the calling process";
  try {
    return "sequence file sha256 " + sha256_hex(read_file(file)).substr(0, 16);
  } catch (const Error&) {
    return "sequence file unreadable";
  }
}

// Only the Python API's stages run in the process of the models (attached); the others in a
// fresh interpreter.
bool python_stage_uses_script_process(const Build& build, const json& /*options*/) {
  return build.session && build.session->attached();
}

void tool_python_stage(Build& build, const json& options, std::string& log) {
  const std::string stage = options.value("stage", "");
  const std::string file = options.value("file", "");
  const fs::path output =
      build.dir->path() / "onnx" / fmt::format("{}-{}.onnx", build.build_name, stage);
  fs::create_directories(output.parent_path());
  log += fmt::format("stage {} of {}\ninput {}\n", stage,
                     file.empty() ? "the calling process" : file, build.onnx_path.string());
  if (file.empty()) {
    // A Sequence object given to the Python API: the stage lives in the calling process.
    if (!build.session || !build.session->attached()) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("python-stage {}: no --file, and no calling Python process holds "
                              "the stage (only the Python API runs stages without a file)",
                              stage));
    }
    json reply = build.session->request({{"type", "stage"},
                                         {"stage", stage},
                                         {"input", build.onnx_path.string()},
                                         {"output", output.string()}},
                                        "stage_done", ErrorKind::Export);
    log += reply.value("log", "");
    if (!reply.value("ok", false)) {
      log += reply.value("traceback", "");
      if (show_tracebacks()) {
        std::fprintf(stderr, "%s", reply.value("traceback", "").c_str());
      }
      throw Error(ErrorKind::Export, reply.value("error", "the stage failed"));
    }
  } else {
    // The script's interpreter; for an ONNX input or the Python API, turnkey's usual choice.
    const std::string python = build.session && !build.session->attached()
                                   ? build.session->python()
                                   : find_python(build.python_override);
    // --sandbox: the stage runs sandboxed too, writing to a staging folder of its own (gone with
    // it: its processes end with the sandbox's first one, which run_python_stage reaps).
    std::optional<Staging> staging;
    std::vector<fs::path> writable;
    if (build.sandbox) {
      staging.emplace(build.dir->path().parent_path());
      writable.push_back(staging->root());
      writable.insert(writable.end(), build.sandbox_allow.begin(), build.sandbox_allow.end());
    }
    Outbox outbox(staging ? &*staging : nullptr);
    const fs::path staged = outbox.file(output);
    PythonStageRun run = run_python_stage(python, file, stage, build.onnx_path, staged,
                                          kStageTimeoutS, staging ? &writable : nullptr);
    log += run.output;
    if (!run.ok) {
      // As for export-pytorch (stages.cpp): the traceback on screen unless TURNKEY_TRACEBACK=False.
      if (show_tracebacks()) std::fprintf(stderr, "%s", run.output.c_str());
      throw Error(ErrorKind::Export, run.error);
    }
    build.onnx_path = take_onnx(outbox, staged.string(), ErrorKind::Export);
    return;
  }
  build.onnx_path = output;
}

}  // namespace engine_internal
}  // namespace turnkey
