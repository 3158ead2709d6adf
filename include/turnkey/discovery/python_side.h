// The C++ end of the pipe to the Python side (docs/protocol.md): finds an interpreter with
// torch, runs a user's script under turnkeyml.discovery.runner, collects discovered models, and
// asks the live process to export them. One ScriptSession per script; not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "turnkey/common/error.h"
#include "turnkey/discovery/protocol_schema.h"
#include "turnkey/discovery/staging.h"

namespace turnkey {

// 2: errors carry `error_type` and `error_status` apart from their one line (docs/protocol.md).
// 3: `bench_profile` (benchmark --profile on torch-eager and torch-compiled).
inline constexpr int kProtocolVersion = 3;

// The path of find_interpreter(override_path) (interpreter.h): --python, TURNKEY_PYTHON, `python3`
// on PATH, /usr/bin/python3, the first that has torch. Throws Error(InvalidInput).
std::string find_python(const std::string& override_path);

// The folder holding the `turnkeyml` package: TURNKEY_PYTHON_DIR, else <exe>/../python, else the
// source tree's python/ (compiled in).
std::filesystem::path python_package_dir();

struct DiscoveredModel {
  int id = -1;
  std::optional<int> parent_id;
  int depth = 0;
  std::string name, class_name, class_path, model_type, file;
  int line = 0;
  int64_t parameters = 0, parameter_bytes = 0;
  nlohmann::json inputs = nlohmann::json::array();  // [{name, shape, dtype}]
  int signature_index = 0;
  int module_id = -1;  // equal for the entries (input signatures) of one module object
  std::string hash;    // 64 hex
  double first_call_s = -1;  // wall seconds of the first call's forward; -1 when unknown
  // Keras models: "tensorflow 2.21.0, keras 3.15.1, tf2onnx 1.17.0" (what exports them); ""
  // for PyTorch models, whose versions are the run's (DiscoveryResult).
  std::string framework_versions;
  // The batch size the script parsed (turnkeyml.parser's `batch_size`), 0 when it parsed none:
  // the batch of a model whose first input is not batch-major (benchmark.cpp batch_of).
  int64_t script_batch_size = 0;
  int64_t executed = 0;

  std::string hash8() const { return hash.substr(0, 8); }
};

struct DiscoveryResult {
  std::vector<DiscoveredModel> models;
  // "ok", "exception", "exit" (sys.exit), or "crashed" (the process ended without script_end).
  std::string script_status;
  int exit_code = 0;
  std::string error;         // one line, for people: no status is read out of it
  std::string error_type;    // the exception's class name ("MemoryError"); "" when none
  std::string error_status;  // a status name the Python side gave the error ("out_of_memory")
  int signal = 0;            // the signal that ended the child before it was ready, else 0
  std::string traceback;     // full, may be empty
  bool ready = false;        // the Python side waits for export commands
  std::vector<std::string> warnings;  // discovery problems on single calls (one line each)
  size_t warnings_dropped = 0;        // more than protocol::kMaxWarnings / kMaxWarningBytes
  std::string python_version, torch_version, onnx_version;
  std::string onnxscript_version;  // empty where the interpreter has no onnxscript
};

// A tensor inside the graph the correctness check compares when the outputs carry no signal
// (docs/measurement.md): captured from PyTorch, named by the ONNX value that holds it.
struct IntermediateTensor {
  std::string module;        // the PyTorch module whose input it is ("heads.head")
  std::string tensor;        // the ONNX value name ("/Gather_output_0")
  std::filesystem::path pb;  // PyTorch's value, a TensorProto .pb
};

struct ExportResult {
  bool ok = false;
  std::filesystem::path onnx_path;
  std::vector<std::filesystem::path> inputs, outputs;  // TensorProto .pb files
  std::string error, traceback, log;
  std::string error_type, error_status;  // as in DiscoveryResult
  int opset = 0;  // the ai.onnx opset the file declares
  double export_s = 0;
  std::string exporter;          // the exporter that wrote the file: torchscript or dynamo
  std::string exporter_version;  // "torch 2.15.0, onnxscript 0.7.2"
  std::string exporter_fallback;  // why the exporters tried before it failed; empty if none
  // The exporter's own warning that its graph computes other values for some inputs; or "".
  std::string exporter_warning;
  // turnkey's own symbolic functions the graph used (python/turnkeyml/discovery/exporter_fixes.py)
  std::vector<std::string> exporter_fixes;
  // Only when the outputs carry no signal (empty, all zero, constant): see IntermediateTensor.
  std::vector<IntermediateTensor> intermediates;
  // Only when they do: PyTorch's outputs of the call run in float64 (.pb files, output order),
  // for the check to tell a model that amplifies float32 rounding; empty when not made.
  std::vector<std::filesystem::path> float64_outputs;
  std::string float64_left_out;  // why none were made, when asked ("2.3 GB of float weights")
};

struct ScriptOptions {
  std::string python;  // interpreter (from find_python)
  std::filesystem::path script;
  std::string script_args;  // split like a shell by the Python side, no shell involved
  int max_depth = 0;
  // Host folders the Python side reads or writes besides the script's folder and the turnkeyml
  // package (the cache): handed to the interpreter in TURNKEY_BIND_PATHS, so that one running in
  // another root (scripts/bwrap-run, .deps/torch2/bin/python3) sees them at the same paths.
  std::vector<std::filesystem::path> bind_paths;
  // --sandbox (sandbox.h): the interpreter runs inside bwrap-run's sandbox, where bind_paths are
  // read-only and only a staging folder made in `cache_dir` (staging.h) and sandbox_allow are
  // writable. Without it bind_paths are writable.
  bool sandbox = false;
  std::filesystem::path cache_dir;
  std::vector<std::filesystem::path> sandbox_allow;
  // Attach mode (the Python API, docs/python_api.md): no interpreter is started; the Python
  // process that started turnkey speaks the protocol on these inherited descriptors (event pipe
  // read end, command pipe write end). -1 = start `python` on `script` as usual.
  int attach_event_fd = -1;
  int attach_command_fd = -1;
};

// The list of strings `key` of a reply (file paths); empty when absent. Throws Error(kind) when it
// is something else.
std::vector<std::string> reply_strings(const nlohmann::json& reply, const char* key,
                                       ErrorKind kind);

// "E,C" of `discover --attach`: two descriptor numbers, each open in this process. Throws
// Error(InvalidInput) naming the value otherwise.
std::pair<int, int> parse_attach_fds(const std::string& value);

class ScriptSession {
 public:
  // Starts the interpreter; throws Error(Script) if it cannot be started.
  explicit ScriptSession(const ScriptOptions& options);
  ~ScriptSession();  // closes the pipes and reaps the child
  ScriptSession(const ScriptSession&) = delete;
  ScriptSession& operator=(const ScriptSession&) = delete;

  // Reads events until `ready` or the end of the child. Never throws for script failures: they
  // are reported in the result.
  DiscoveryResult discover();
  // Only after discover() returned ready. Throws Error(Export) when the Python side is gone.
  // `exporters`: "torchscript" and/or "dynamo", in the order to try (the first that writes the
  // file wins; --exporter auto gives both).
  // `float64_reference`: also PyTorch's outputs of a float64 run (ExportResult::float64_outputs).
  ExportResult export_model(int id, const std::filesystem::path& onnx_path, int opset,
                            const std::filesystem::path& io_dir,
                            const std::vector<std::string>& exporters = {"torchscript"},
                            bool float64_reference = true);
  // Any other command of docs/protocol.md (bench_prepare, bench_run, bench_outputs, trace):
  // sends `command` (v is added) and returns the reply of type `reply_type`. Throws
  // Error(kind) when the Python side is gone or does not understand the command; a reply with
  // ok=false is returned as is (the caller turns its `error` into its own failure).
  nlohmann::json request(nlohmann::json command, const std::string& reply_type, ErrorKind kind);
  pid_t pid() const { return pid_; }
  // The process that runs the model: the one the hello named (an interpreter wrapper such as
  // bwrap may stand between us and it), else the child we started.
  pid_t python_pid() const { return python_pid_ > 0 ? python_pid_ : pid_; }
  // The interpreter we started ("" in attach mode) and the versions its hello named.
  const std::string& python() const { return python_; }
  const std::string& torch_version() const { return torch_version_; }
  bool alive() const { return !closed_; }
  // Attach mode: the Python process that started turnkey speaks the protocol (the Python API).
  bool attached() const { return attached_; }
  // The signal that ended the child, once it has been reaped (after an end of the event pipe);
  // 0 while it runs, when it exited, and in attach mode. From its wait status, never a message.
  int end_signal() const;
  // Why the Python side was cut off for breaking the protocol (one line), or "".
  const std::string& broken() const { return broken_; }
  // Sends `exit` and waits for the child, at most kExitGrace: a child still running then (an
  // atexit handler or a non-daemon thread of the script that does not end) is killed, and
  // exit_overdue() says so. Returns its wait status description.
  std::string close();
  static constexpr std::chrono::seconds kExitGrace{10};
  bool exit_overdue() const { return exit_overdue_; }

  // Where the Python side writes the files of one command (staging.h): a staging folder when it
  // runs sandboxed, else the build's own paths.
  Outbox outbox() { return Outbox(staging_.get()); }

  // Attach mode only (a no-op otherwise): tells the calling Python process where the build of
  // model `id` went and how it ended (the `built` command of docs/protocol.md). Never throws.
  void report_built(int id, const nlohmann::json& fields);

 private:
  // The next message, checked against its schema (protocol_schema.h); nullopt at end of file.
  // Throws ProtocolError (after broke_protocol()) for a line that breaks the protocol.
  std::optional<nlohmann::json> read_event();
  // Ends the session for a message that broke the protocol: kills the process started (never the
  // caller in attach mode), closes the pipes, and throws `error`; later commands fail with it.
  [[noreturn]] void broke_protocol(const std::string& reason);
  [[noreturn]] void broke_protocol(const protocol::ProtocolError& error);
  void on_discovery_event(const nlohmann::json& e, DiscoveryResult& result,
                          std::map<int, size_t>& index);
  DiscoveredModel model_of(const nlohmann::json& e, const std::map<int, size_t>& index);
  pid_t own_python_pid(pid_t pid);
  void send(const nlohmann::json& command);
  // The event pipe closed in the middle of `what`: reaps the child if it has exited and says
  // how it ended ("the Python side was killed by signal 9 (...) during export").
  std::string ended_during(const std::string& what);
  // How the child we reaped ended, for people: "exited with code 1", "was killed by signal 11
  // (...)" with what may have sent it (python_side_end.cpp).
  std::string how_it_ended() const;
  void reap();  // waits for the child we started (once)
  bool reap_until(std::chrono::steady_clock::time_point deadline);
  void drain_events_until(std::chrono::steady_clock::time_point deadline);

  pid_t pid_ = -1;
  pid_t python_pid_ = -1;
  std::string python_, torch_version_;
  int event_fd_ = -1;
  int command_fd_ = -1;
  std::string buffer_;
  size_t scanned_ = 0;  // bytes of buffer_ known to hold no newline
  bool said_hello_ = false, said_counts_ = false;
  size_t warning_bytes_ = 0;  // of the warnings kept
  bool exit_overdue_ = false;
  std::string broken_;  // why the protocol was broken; "" while it holds
  bool closed_ = false;
  bool attached_ = false;
  bool reaped_ = false;
  int wait_status_ = 0;
  std::unique_ptr<Staging> staging_;  // with --sandbox only; removed once the child is reaped
};

}  // namespace turnkey
