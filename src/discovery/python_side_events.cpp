// ScriptSession's reading of discovery's messages (python_side.h, docs/protocol.md): each message
// has passed its schema (protocol_schema.h); here its turn and what it names are checked.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "turnkey/common/process.h"
#include "turnkey/discovery/protocol_schema.h"
#include "turnkey/discovery/python_side.h"

namespace turnkey {

using nlohmann::json;

namespace {

// Whether `ancestor` is `pid` or a process above it (parents by /proc/<pid>/stat, 64 levels).
bool is_ancestor(pid_t ancestor, pid_t pid) {
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    if (pid == ancestor) return true;
    std::ifstream stat(fmt::format("/proc/{}/stat", pid));
    const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');  // the command name may hold spaces and parentheses
    char state = 0;
    int parent = 0;
    if (paren == std::string::npos ||
        std::sscanf(text.c_str() + paren + 1, " %c %d", &state, &parent) != 2) {
      return false;
    }
    pid = parent;
  }
  return pid == ancestor;
}

}  // namespace

// Discovery's messages in their order (docs/protocol.md): hello first; models and warnings while
// the script runs; script_end once, then counts, then ready. Anything else, or out of turn, breaks
// the protocol.
void ScriptSession::on_discovery_event(const json& e, DiscoveryResult& result,
                                       std::map<int, size_t>& index) {
  const std::string& type = e["type"].get_ref<const std::string&>();
  if (type != "hello" && !said_hello_) broke_protocol(fmt::format("'{}' before 'hello'", type));
  if (type == "hello") {
    if (said_hello_) broke_protocol("a second 'hello'");
    said_hello_ = true;
    auto str = [&](const char* k) { return e.value(k, std::string()); };
    result.python_version = str("python");
    result.torch_version = str("torch");
    result.onnx_version = str("onnx");
    result.onnxscript_version = str("onnxscript");
    torch_version_ = result.torch_version;
    if (e.contains("pid")) python_pid_ = own_python_pid(e["pid"].get<int>());
  } else if (type == "model") {
    if (result.script_status.size()) broke_protocol("a 'model' after 'script_end'");
    result.models.push_back(model_of(e, index));
    index[result.models.back().id] = result.models.size() - 1;
  } else if (type == "script_end") {
    if (!result.script_status.empty()) broke_protocol("a second 'script_end'");
    result.script_status = e["status"].get<std::string>();
    result.exit_code = e.value("exit_code", 0);
    result.error = e.value("error", std::string());
    result.error_type = e.value("error_type", std::string());
    result.error_status = e.value("error_status", std::string());
    result.traceback = e.value("traceback", std::string());
  } else if (type == "counts") {
    if (result.script_status.empty() || said_counts_) broke_protocol("'counts' out of turn");
    said_counts_ = true;
    for (const char* key : {"counts", "first_call_s"}) {
      const json map = e.value(key, json::object());  // items() of a temporary would dangle
      for (const auto& [id, value] : map.items()) {
        auto found = index.find(std::atoi(id.c_str()));
        if (found == index.end()) continue;
        DiscoveredModel& m = result.models[found->second];
        if (key[0] == 'c') m.executed = value.get<int64_t>();
        else m.first_call_s = value.get<double>();
      }
    }
  } else if (type == "warning") {
    std::string message = e.value("message", std::string("discovery warning"));
    if (result.warnings.size() < protocol::kMaxWarnings &&
        warning_bytes_ + message.size() <= protocol::kMaxWarningBytes) {
      warning_bytes_ += message.size();
      result.warnings.push_back(std::move(message));
    } else {
      ++result.warnings_dropped;
    }
  } else if (type == "ready") {
    if (result.script_status.empty()) broke_protocol("'ready' before 'script_end'");
    result.ready = true;
  } else {
    broke_protocol(fmt::format("a '{}' message during discovery", type));
  }
}

// The process the hello names, as the core sees it. The core measures that process and resets its
// memory peak, so a pid is taken only where it is the Python side: the child started or one
// below it (an interpreter wrapper between), mapped from the sandbox's pid namespace under
// --sandbox (the child started when the mapping finds none), in attach mode a process above this
// one. Any other pid is forged: the protocol is broken.
pid_t ScriptSession::own_python_pid(pid_t pid) {
  if (staging_) {
    const pid_t mapped = find_namespaced_descendant(pid_, pid);
    return mapped > 0 ? mapped : pid_;
  }
  if (attached_ ? pid > 1 && is_ancestor(pid, getpid()) : is_ancestor(pid_, pid)) return pid;
  if (!attached_) {
    if (const pid_t mapped = find_namespaced_descendant(pid_, pid); mapped > 0) return mapped;
  }
  broke_protocol(fmt::format("'hello' names process {}, which is not the Python side", pid));
}

DiscoveredModel ScriptSession::model_of(const json& e, const std::map<int, size_t>& index) {
  DiscoveredModel m;
  m.id = e["id"].get<int>();
  if (index.count(m.id)) broke_protocol(fmt::format("model id {} twice", m.id));
  if (index.size() >= protocol::kMaxModels) {
    broke_protocol(fmt::format("more than {} models", protocol::kMaxModels));
  }
  if (e.contains("parent_id")) {
    m.parent_id = e["parent_id"].get<int>();
    if (!index.count(*m.parent_id)) {
      broke_protocol(fmt::format("model {} names parent {}, which it never reported", m.id,
                                 *m.parent_id));
    }
  }
  m.depth = e.value("depth", 0);
  m.name = e.value("name", "");
  m.class_name = e.value("class_name", "");
  m.class_path = e.value("class_path", "");
  m.model_type = e.value("model_type", "Pytorch (torch.nn.Module)");
  m.file = e.value("file", "");
  m.line = e.value("line", 0);
  m.parameters = e.value("parameters", int64_t{0});
  m.parameter_bytes = e.value("parameter_bytes", int64_t{0});
  if (e.contains("inputs")) m.inputs = e["inputs"];
  m.signature_index = e.value("signature_index", 0);
  m.hash = e["hash"].get<std::string>();
  m.module_id = e.value("module_id", -1);
  m.framework_versions = e.value("framework_versions", "");
  m.script_batch_size = e.value("batch_size", int64_t{0});
  m.executed = 1;
  return m;
}

}  // namespace turnkey
