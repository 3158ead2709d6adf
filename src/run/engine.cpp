// The engine's entry points: a run over every input (input_loop.h), or a corpus run that hands
// each input to a supervised worker (corpus.h).
#include "turnkey/run/run.h"

#include <cstdlib>

#include "stages/build.h"
#include "run/input_loop.h"
#include "console/json_output.h"
#include "catalog/tool_checks.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/discovery/sandbox.h"
#include "turnkey/corpus/corpus.h"
#include "turnkey/catalog/tools.h"

namespace turnkey {

namespace {

bool env_bool_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

}  // namespace

namespace {

int run_request(const RunRequest& request, nlohmann::json& inputs) {
  if (sandbox_requested(request.global.sandbox)) check_sandbox(request.global.sandbox_allow);
  if (is_corpus_run(request.global)) return run_corpus(request, &inputs);
  validate_environment();
  // Option values are checked before anything runs, so a bad one is one usage error, not a
  // failure of every model.
  for (const ToolCall& call : request.sequence) {
    if (const ToolSpec* spec = find_tool(call.name)) validate_tool_options(*spec, call.options);
  }
  // An interpreter the user named must work before any script runs: one usage error, not one
  // failure per script.
  if (!request.global.python.empty() || env_bool_set("TURNKEY_PYTHON")) {
    find_python(request.global.python);
  }
  tool_checks::check_export_opset(request);
  engine_internal::InputLoop loop(request);
  const int code = loop.run();
  inputs = loop.input_outcomes();
  return code;
}

}  // namespace

int run_sequence(const RunRequest& request) {
  if (request.sequence.empty()) throw Error(ErrorKind::InvalidInput, "no tool given");
  engine_internal::JsonOutput json_output(request);  // --json: stdout to stderr until the end
  nlohmann::json inputs = nlohmann::json::array();
  try {
    const int code = run_request(request, inputs);
    json_output.finish(inputs, code);
    return code;
  } catch (const Error& e) {
    // A run refused before its inputs (exit 2) prints no document; one stopped later says why.
    if (e.kind() != ErrorKind::InvalidInput) json_output.finish(inputs, 1, e.what());
    throw;
  }
}

int run_worker_main(const std::vector<std::string>& args) {
  return corpus_worker_main(args, [](const RunRequest& request, const InputItem& item,
                                     engine_internal::Supervisor& link) {
    engine_internal::InputLoop loop(request, &link);
    return loop.run_one(item);
  });
}

}  // namespace turnkey
