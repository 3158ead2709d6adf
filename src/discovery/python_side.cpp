#include "turnkey/discovery/python_side.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/process.h"
#include "turnkey/discovery/interpreter.h"
#include "turnkey/discovery/protocol_schema.h"
#include "turnkey/discovery/sandbox.h"
#include "turnkey/discovery/script_end.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

std::string find_python(const std::string& override_path) {
  return find_interpreter(override_path).path;
}

fs::path python_package_dir() {
  if (const char* env = std::getenv("TURNKEY_PYTHON_DIR"); env && *env) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path candidate : {exe.parent_path().parent_path() / "python",
                               exe.parent_path().parent_path() / "share/turnkey/python"}) {
      if (fs::exists(candidate / "turnkeyml" / "__init__.py", ec)) return candidate;
    }
  }
  return TURNKEY_SOURCE_PYTHON_DIR;
}

std::vector<std::string> reply_strings(const json& reply, const char* key, ErrorKind kind) {
  std::vector<std::string> out;
  if (!reply.is_object() || !reply.contains(key)) return out;
  const json& list = reply[key];
  bool ok = list.is_array();
  for (size_t i = 0; ok && i < list.size(); ++i) {
    ok = list[i].is_string();
    if (ok) out.push_back(list[i].get<std::string>());
  }
  if (!ok) throw Error(kind, fmt::format("the Python side's '{}' is not a list of paths", key));
  return out;
}

std::pair<int, int> parse_attach_fds(const std::string& value) {
  int e = -1, c = -1;
  char extra = 0;
  if (std::sscanf(value.c_str(), "%d,%d%c", &e, &c, &extra) != 2 || e < 0 || c < 0 || e == c ||
      fcntl(e, F_GETFD) < 0 || fcntl(c, F_GETFD) < 0) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("--attach {}: expected two open descriptors E,C (the Python API "
                            "passes them)",
                            value));
  }
  return {e, c};
}

namespace {

// The installation an interpreter at PREFIX/bin/python runs from (a venv: its site-packages and
// pyvenv.cfg; pyenv's versions/X), as named and with links resolved; none for one in / or /usr,
// which every root shows anyway.
std::vector<std::string> interpreter_prefixes(const std::string& python) {
  std::vector<std::string> prefixes;
  std::error_code ec;
  for (fs::path exe : {fs::absolute(python, ec), fs::canonical(python, ec)}) {
    if (exe.empty() || exe.parent_path().filename() != "bin") continue;
    const fs::path prefix = exe.parent_path().parent_path();
    if (prefix == "/" || prefix == "/usr" || prefix == "/usr/local") continue;
    if (std::find(prefixes.begin(), prefixes.end(), prefix.string()) == prefixes.end()) {
      prefixes.push_back(prefix.string());
    }
  }
  return prefixes;
}

// TURNKEY_BIND_PATHS for the child: every host folder the Python side touches (the script's,
// turnkeyml's, the interpreter's own installation, the caller's), then what our own caller was
// given. In a sandbox they are read-only.
std::string bind_paths(const ScriptOptions& options) {
  std::vector<std::string> paths = {options.script.parent_path().string(),
                                    python_package_dir().string()};
  for (const std::string& prefix : interpreter_prefixes(options.python)) paths.push_back(prefix);
  for (const fs::path& p : options.bind_paths) {
    // A folder the Python side will write into must exist before it starts: a wrapper binds
    // only what exists (the cache is otherwise made at the first build).
    std::error_code ec;
    fs::create_directories(p, ec);
    paths.push_back(fs::absolute(p).string());
  }
  if (const char* existing = std::getenv("TURNKEY_BIND_PATHS"); existing && *existing) {
    paths.push_back(existing);
  }
  return fmt::format("{}", fmt::join(paths, ":"));
}

}  // namespace

ScriptSession::ScriptSession(const ScriptOptions& options) : python_(options.python) {
  if (options.attach_event_fd >= 0) {
    // The caller is the Python process: nothing to start. Our children (none today) must not
    // hold its pipes open.
    attached_ = true;
    event_fd_ = options.attach_event_fd;
    command_fd_ = options.attach_command_fd;
    fcntl(event_fd_, F_SETFD, FD_CLOEXEC);
    fcntl(command_fd_, F_SETFD, FD_CLOEXEC);
    return;
  }
  int events[2], commands[2];
  if (pipe2(events, O_CLOEXEC) != 0 || pipe2(commands, O_CLOEXEC) != 0) {
    throw Error(ErrorKind::Io, fmt::format("pipe failed: {}", strerror(errno)));
  }
  std::string pythonpath = python_package_dir().string();
  if (const char* existing = std::getenv("PYTHONPATH"); existing && *existing) {
    pythonpath += ":" + std::string(existing);
  }
  std::vector<std::string> argv = {options.python,
                                   "-m",
                                   "turnkeyml.discovery.runner",
                                   "--event-fd",
                                   std::to_string(events[1]),
                                   "--command-fd",
                                   std::to_string(commands[0]),
                                   "--script",
                                   options.script.string(),
                                   "--max-depth",
                                   std::to_string(options.max_depth)};
  if (!options.script_args.empty()) {
    argv.push_back("--script-args=" + options.script_args);
  }
  SpawnOptions spawn;
  std::string binds = bind_paths(options);
  if (options.sandbox) {
    // The cache is read-only inside; what the Python side writes for a build goes to a staging
    // folder of this input, from which the core takes what it asked for (staging.h).
    staging_ =
        std::make_unique<Staging>(options.cache_dir.empty() ? fs::path(".") : options.cache_dir);
    binds += ":" + staging_->root().string();  // for an interpreter wrapper that nests
    std::vector<fs::path> writable = {staging_->root()};
    writable.insert(writable.end(), options.sandbox_allow.begin(), options.sandbox_allow.end());
    std::vector<std::string> command = sandbox_command(writable, options.script.parent_path());
    argv.insert(argv.begin(), command.begin(), command.end());
  }
  // bind_paths() makes the folders the Python side uses (only existing ones can be bound).
  spawn.env = {{"PYTHONPATH", pythonpath}, {"TURNKEY_BIND_PATHS", binds}};
  spawn.inherit_fds = {events[1], commands[0]};
  // bwrap-run re-executes itself under setpriv to die with its caller unless told that the
  // caller has seen to it: die_with_parent below does (one process start less per input).
  if (options.sandbox) spawn.env.emplace_back("TURNKEY_BWRAP_RUN_PDEATHSIG", "1");
  // A killed turnkey must not leave the user's script running.
  spawn.die_with_parent = true;
  if (env_bool("TURNKEY_DEBUG", false)) {
    std::string line = "PYTHONPATH=" + pythonpath;
    for (const std::string& a : argv) line += " " + a;
    std::fprintf(stderr, "turnkey debug: starting the Python side: %s\n", line.c_str());
  }
  try {
    pid_ = spawn_process(argv, spawn);
  } catch (...) {
    for (int fd : {events[0], events[1], commands[0], commands[1]}) ::close(fd);
    throw;
  }
  ::close(events[1]);
  ::close(commands[0]);
  event_fd_ = events[0];
  command_fd_ = commands[1];
}

ScriptSession::~ScriptSession() {
  if (!closed_) {
    try {
      close();
    } catch (...) {
    }
  }
  reap();
  staging_.reset();
}

std::optional<json> ScriptSession::read_event() {
  for (;;) {
    const size_t nl = buffer_.find('\n', scanned_);
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      scanned_ = 0;
      if (line.empty()) continue;
      json message = json::parse(line, nullptr, false);
      if (message.is_discarded()) {
        broke_protocol(fmt::format("sent a line that is not JSON: {}", protocol::excerpt(line)));
      }
      try {
        return protocol::validate(message);
      } catch (const protocol::ProtocolError& e) {
        broke_protocol(e);
      }
    }
    // A line over the limit is refused once that many bytes came, never buffered whole.
    scanned_ = buffer_.size();
    if (buffer_.size() > protocol::kMaxLineBytes) {
      broke_protocol(fmt::format("sent a line longer than {} MiB", protocol::kMaxLineBytes >> 20));
    }
    char buf[65536];
    ssize_t n = ::read(event_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

void ScriptSession::broke_protocol(const std::string& reason) {
  broke_protocol(protocol::ProtocolError(reason));
}

void ScriptSession::broke_protocol(const protocol::ProtocolError& error) {
  // Nothing more it sends is read: the process we started is killed (its sandbox with it), the
  // pipes closed; the input fails with this one line and the run goes on.
  broken_ = error.what();
  if (!attached_ && pid_ > 0 && !reaped_) ::kill(pid_, SIGKILL);
  for (int* fd : {&command_fd_, &event_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  reap();
  closed_ = true;
  buffer_.clear();
  scanned_ = 0;
  throw error;
}

void ScriptSession::send(const json& command) {
  json message = command;
  message["v"] = kProtocolVersion;
  std::string line = message.dump() + "\n";
  size_t done = 0;
  // SIGPIPE would kill turnkey if the child is gone; main() ignores it, so write returns EPIPE.
  while (done < line.size()) {
    ssize_t n = ::write(command_fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(ErrorKind::Export, "the Python side is gone");
    done += static_cast<size_t>(n);
  }
}

DiscoveryResult ScriptSession::discover() {
  DiscoveryResult result;
  std::map<int, size_t> index;
  try {
    while (auto event = read_event()) {
      on_discovery_event(*event, result, index);
      if (result.ready) break;
    }
  } catch (const Error& e) {
    result.script_status = script_end::kCrashed;
    result.error = e.what();
  }
  if (!result.ready) {
    // The child ended (or broke the protocol) before it was ready: say how it ended.
    ::close(command_fd_);
    command_fd_ = -1;
    ::close(event_fd_);
    event_fd_ = -1;
    reap();
    closed_ = true;
    // A Python side that broke the protocol was killed by the core: no signal of its own.
    if (reaped_ && WIFSIGNALED(wait_status_) && broken_.empty()) {
      result.signal = WTERMSIG(wait_status_);
    }
    if (result.script_status.empty() || result.script_status == script_end::kCrashed) {
      result.error =
          result.error.empty()
              ? fmt::format("the Python side {} before the script finished", how_it_ended())
              : result.error;
      result.script_status = script_end::kCrashed;
    }
  }
  return result;
}

ExportResult ScriptSession::export_model(int id, const fs::path& onnx_path, int opset,
                                         const fs::path& io_dir,
                                         const std::vector<std::string>& exporters,
                                         bool float64_reference) {
  // The reply has passed the schema (protocol_schema.cpp): each field present has its type.
  const json e = request({{"type", "export"},
                          {"id", id},
                          {"path", onnx_path.string()},
                          {"opset", opset},
                          {"io_dir", io_dir.string()},
                          {"exporters", exporters},
                          {"float64", float64_reference}},
                         "exported", ErrorKind::Export);
  ExportResult r;
  r.ok = e["ok"].get<bool>();
  auto str = [&](const char* k) { return e.value(k, std::string()); };
  r.onnx_path = str("onnx_path");
  r.error = str("error");
  r.error_type = str("error_type");
  r.error_status = str("error_status");
  r.traceback = str("traceback");
  r.log = str("log");
  r.opset = e.value("opset", opset);
  r.export_s = e.value("export_s", 0.0);
  r.exporter = str("exporter");
  r.exporter_version = str("exporter_version");
  r.exporter_fallback = str("exporter_fallback");
  r.exporter_warning = str("exporter_warning");
  r.float64_left_out = str("float64_left_out");
  for (const auto& p : e.value("inputs", json::array())) r.inputs.push_back(p.get<std::string>());
  for (const auto& p : e.value("outputs", json::array())) r.outputs.push_back(p.get<std::string>());
  for (const auto& p : e.value("float64_outputs", json::array())) {
    r.float64_outputs.push_back(p.get<std::string>());
  }
  for (const auto& f : e.value("exporter_fixes", json::array())) {
    r.exporter_fixes.push_back(f.get<std::string>());
  }
  for (const auto& i : e.value("intermediates", json::array())) {
    if (!i.contains("tensor") || !i.contains("path")) {
      continue;  // a malformed entry is a check not made, never a failed export
    }
    r.intermediates.push_back({i.value("module", std::string()), i["tensor"].get<std::string>(),
                               i["path"].get<std::string>()});
  }
  return r;
}

json ScriptSession::request(json command, const std::string& reply_type, ErrorKind kind) {
  const std::string type = command.value("type", "?");
  if (closed_) {
    throw Error(kind, broken_.empty() ? "the Python side has already exited" : broken_);
  }
  try {
    send(command);
  } catch (const Error& e) {
    throw Error(kind, e.what());
  }
  for (;;) {
    auto event = read_event();
    if (!event) throw Error(kind, ended_during(fmt::format("'{}'", type)));
    const std::string got = (*event)["type"].get<std::string>();
    if (got == "warning") continue;  // a discovery hook may still warn
    if (got == "error") {
      throw Error(kind, "Python side: " + event->value("error", std::string("?")));
    }
    if (got != reply_type) {
      broke_protocol(fmt::format("a '{}' message in reply to '{}'", got, type));
    }
    if (command.contains("id") && event->contains("id") && (*event)["id"] != command["id"]) {
      broke_protocol(fmt::format("a '{}' for id {} in reply to '{}' of id {}", got,
                                 (*event)["id"].dump(), type, command["id"].dump()));
    }
    return *event;
  }
}

void ScriptSession::report_built(int id, const json& fields) {
  if (!attached_ || closed_ || command_fd_ < 0) return;
  json message = fields;
  message["type"] = "built";
  message["id"] = id;
  try {
    send(message);
  } catch (const Error&) {
    // The caller is gone; the build itself is in the cache either way.
  }
}

}  // namespace turnkey
