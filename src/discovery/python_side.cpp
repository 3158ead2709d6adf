#include "turnkey/discovery/python_side.h"
#include "turnkey/discovery/script_end.h"
#include "turnkey/discovery/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/process.h"
#include "turnkey/discovery/interpreter.h"
#include "turnkey/discovery/protocol_schema.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The data-segment limit this process (and so the Python side it starts) runs under, in MiB; 0
// when none. A corpus worker under --memory-limit has one (docs/corpus_runs.md).
uint64_t data_limit_mib() {
  rlimit limit{};
  if (getrlimit(RLIMIT_DATA, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<uint64_t>(limit.rlim_cur) >> 20;
}

// How the Python side ended, to follow "the Python side": "exited with code 1", "was killed by
// signal 11 (Segmentation fault)"; SIGKILL adds the likeliest sender, and a crash under a data
// limit names the limit and how to tell whether it is why (it may be: native code that does not
// check an allocation the limit refuses crashes so; measured: PyPI torch 2.15's ONNX export of a
// 537 MB MLP under --memory-limit 2000M, signal 11, successful at 2600M). For people only: the
// signal travels as a number (end_signal(), DiscoveryResult::signal).
std::string how_it_ended(int wait_status) {
  std::string how = describe_wait_status(wait_status);
  if (!WIFSIGNALED(wait_status)) return how;
  how = "was " + how;
  const int signal = WTERMSIG(wait_status);
  if (signal == SIGKILL) how += ", as the kernel does when memory runs out";
  if (const uint64_t limit = data_limit_mib();
      limit > 0 && (signal == SIGSEGV || signal == SIGBUS || signal == SIGABRT)) {
    how.insert(how.size() - 1,  // inside "(Segmentation fault)"
               fmt::format("; under --memory-limit's data limit of {} MiB, where an allocation "
                           "refused to native code that does not check it crashes so: a higher "
                           "limit tells whether that is why",
                           limit));
  }
  return how;
}

}  // namespace

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
      result.error = result.error.empty()
                         ? fmt::format("the Python side {} before the script finished",
                                       how_it_ended(wait_status_))
                         : result.error;
      result.script_status = script_end::kCrashed;
    }
  }
  return result;
}

ExportResult ScriptSession::export_model(int id, const fs::path& onnx_path, int opset,
                                         const fs::path& io_dir,
                                         const std::vector<std::string>& exporters) {
  // The reply has passed the schema (protocol_schema.cpp): each field present has its type.
  const json e = request({{"type", "export"},
                          {"id", id},
                          {"path", onnx_path.string()},
                          {"opset", opset},
                          {"io_dir", io_dir.string()},
                          {"exporters", exporters}},
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
  for (const auto& p : e.value("inputs", json::array())) r.inputs.push_back(p.get<std::string>());
  for (const auto& p : e.value("outputs", json::array())) r.outputs.push_back(p.get<std::string>());
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

std::string ScriptSession::ended_during(const std::string& what) {
  if (attached_) return fmt::format("the calling Python process stopped answering during {}", what);
  // The child closes its end of the pipe when it exits; a script that closed the descriptor
  // itself is still running, so wait a little, never forever (close() reaps it later).
  reap_until(std::chrono::steady_clock::now() + std::chrono::seconds(2));
  if (!reaped_) return fmt::format("the Python side stopped answering during {}", what);
  closed_ = true;
  for (int* fd : {&command_fd_, &event_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  return fmt::format("the Python side {} during {}", how_it_ended(wait_status_), what);
}

std::string ScriptSession::close() {
  if (closed_) return describe_wait_status(wait_status_);
  closed_ = true;
  if (command_fd_ >= 0) {
    try {
      send({{"type", "exit"}});
    } catch (const Error&) {
    }
    ::close(command_fd_);
    command_fd_ = -1;
  }
  // After `exit` the interpreter runs the script's atexit handlers and joins its non-daemon
  // threads: one that never ends must not hold the run (nor the results, printed after this).
  const auto deadline = std::chrono::steady_clock::now() + kExitGrace;
  drain_events_until(deadline);
  ::close(event_fd_);
  event_fd_ = -1;
  if (attached_) return "detached from the calling Python process";
  if (!reap_until(deadline)) {
    exit_overdue_ = true;
    ::kill(pid_, SIGKILL);  // its sandbox with it
    reap();
  }
  if (reaped_) staging_.reset();  // nothing in the sandbox is left to race the removal
  return describe_wait_status(wait_status_);
}

// Reads and drops what the child still sends (so it never blocks on a full pipe while exiting)
// until it closes the pipe or `deadline` passes: nothing it says after `exit` is used.
void ScriptSession::drain_events_until(std::chrono::steady_clock::time_point deadline) {
  buffer_.clear();
  scanned_ = 0;
  char buf[65536];
  while (event_fd_ >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd p{event_fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return;
    const ssize_t n = ::read(event_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
  }
}

// False when `deadline` passed with the child still running.
bool ScriptSession::reap_until(std::chrono::steady_clock::time_point deadline) {
  while (!reaped_ && !attached_ && pid_ > 0) {
    const pid_t r = waitpid(pid_, &wait_status_, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
    } else if (r < 0 && errno != EINTR) {
      return true;  // not ours to wait for (gone already)
    } else if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    } else {
      usleep(10 * 1000);
    }
  }
  return true;
}

void ScriptSession::reap() {
  if (reaped_ || attached_ || pid_ <= 0) return;
  pid_t r;
  while ((r = waitpid(pid_, &wait_status_, 0)) < 0 && errno == EINTR) {
  }
  reaped_ = r == pid_;
}

int ScriptSession::end_signal() const {
  // A Python side that broke the protocol was killed by the core: that is no crash of its own.
  if (!broken_.empty()) return 0;
  return reaped_ && WIFSIGNALED(wait_status_) ? WTERMSIG(wait_status_) : 0;
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
