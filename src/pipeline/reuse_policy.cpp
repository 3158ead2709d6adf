#include "pipeline/reuse_policy.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "turnkey/common/error.h"
#include "turnkey/common/sha256.h"
#include "turnkey/catalog/status.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool string_or_absent(const json& object, const char* key) {
  return !object.contains(key) || object[key].is_string();
}

// An output: a path, or a list of paths or of records with a "path" (intermediates: module,
// tensor, path).
bool path_list(const json& value) {
  if (value.is_string()) return true;
  if (!value.is_array()) return false;
  for (const json& v : value) {
    if (!v.is_string() && !(v.is_object() && v.contains("path") && v["path"].is_string())) {
      return false;
    }
  }
  return true;
}

std::string entry_damage(const json& entry, size_t i) {
  if (!entry.is_object()) return fmt::format("tools[{}] is not a mapping", i);
  for (const char* key : {"name", "status", "key", "versions", "error"}) {
    if (!string_or_absent(entry, key)) return fmt::format("tools[{}].{} is not a string", i, key);
  }
  if (entry.contains("outputs")) {
    if (!entry["outputs"].is_object()) return fmt::format("tools[{}].outputs is not a mapping", i);
    for (const auto& [k, v] : entry["outputs"].items()) {
      if (!path_list(v)) return fmt::format("tools[{}].outputs.{} is not a path list", i, k);
    }
  }
  if (entry.contains("artifacts")) {
    if (!entry["artifacts"].is_array()) return fmt::format("tools[{}].artifacts is not a list", i);
    for (const json& a : entry["artifacts"]) {
      if (!a.is_object() || !a.contains("path") || !a["path"].is_string() ||
          !a.contains("size_bytes") || !a["size_bytes"].is_number_integer() ||
          !string_or_absent(a, "sha256")) {
        return fmt::format("tools[{}].artifacts has a malformed record", i);
      }
    }
  }
  return "";
}

std::vector<std::string> output_files(const json& entry) {
  std::vector<std::string> files;
  if (!entry.contains("outputs")) return files;
  for (const auto& [k, v] : entry["outputs"].items()) {
    if (v.is_string()) files.push_back(v.get<std::string>());
    if (v.is_array()) {
      for (const auto& f : v) files.push_back((f.is_object() ? f["path"] : f).get<std::string>());
    }
  }
  return files;
}

std::string file_sha256(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, fmt::format("{}: {}", file.string(), std::strerror(errno)));
  Sha256 hash;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    hash.update(buffer.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw Error(ErrorKind::Io, file.string() + ": read failed");
  return hash.hex_digest();
}

}  // namespace

std::string state_damage(const json& state) {
  if (state.is_null()) return "empty";
  if (!state.is_object()) return "not a mapping";
  for (const char* key :
       {"build_name", "build_status", "turnkey_version", "chain_key", "onnx_path", "input"}) {
    if (!string_or_absent(state, key)) return fmt::format("{} is not a string", key);
  }
  if (!state.contains("tools")) return "";
  if (!state["tools"].is_array()) return "tools is not a list";
  for (size_t i = 0; i < state["tools"].size(); ++i) {
    std::string damage = entry_damage(state["tools"][i], i);
    if (!damage.empty()) return damage;
  }
  return "";
}

ReuseCheck check_reuse(const json& previous_state, size_t index, const std::string& name,
                       const std::string& key, const std::string& rebuild) {
  ReuseCheck check;
  const json& prev = previous_state;
  if (rebuild == "always" || !prev.is_object() || !prev.contains("tools")) return check;
  const json& tools = prev["tools"];
  if (!tools.is_array() || index >= tools.size() || tools[index].value("name", "") != name) {
    return check;
  }
  const json& entry = tools[index];
  if (!is_success(entry.value("status", ""))) {
    check.reason = fmt::format("its previous {} did not finish", name);
    return check;
  }
  check.reason = artifact_problem(entry);
  if (!check.reason.empty()) return check;
  if (entry.value("key", "") != key && rebuild != "never") {
    check.key_changed = true;
    return check;
  }
  check.entry = &entry;
  return check;
}

json artifact_record(const fs::path& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) throw Error(ErrorKind::Io, fmt::format("{}: {}", file.string(), ec.message()));
  return {{"path", file.string()},
          {"size_bytes", static_cast<int64_t>(size)},
          {"sha256", file_sha256(file)}};
}

std::string artifact_problem(const json& entry) {
  const std::string tool = entry.value("name", "its tool");
  for (const std::string& f : output_files(entry)) {
    std::error_code ec;
    if (!fs::exists(f, ec)) {
      return fmt::format("{} is gone (lean cache or deleted)", fs::path(f).filename().string());
    }
  }
  if (!entry.contains("artifacts")) return "";
  for (const json& a : entry["artifacts"]) {
    const fs::path file = a["path"].get<std::string>();
    const std::string shown = file.filename().string();
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    if (ec) return fmt::format("{} is gone (lean cache or deleted)", shown);
    const int64_t recorded = a["size_bytes"].get<int64_t>();
    if (static_cast<int64_t>(size) != recorded) {
      return fmt::format("{} changed since {} made it ({} bytes, recorded {})", shown, tool, size,
                         recorded);
    }
    try {
      if (a.contains("sha256") && file_sha256(file) != a["sha256"].get<std::string>()) {
        return fmt::format("{} changed since {} made it (SHA-256 differs)", shown, tool);
      }
    } catch (const Error& e) {
      return fmt::format("{} cannot be read ({})", shown, e.what());
    }
  }
  return "";
}

void record_outputs(const Build& build, ToolStep& step) {
  json in = json::array(), out = json::array(), artifacts = json::array();
  artifacts.push_back(artifact_record(build.onnx_path));
  for (const auto& p : build.input_pbs) {
    in.push_back(p.string());
    artifacts.push_back(artifact_record(p));
  }
  for (const auto& p : build.output_pbs) {
    out.push_back(p.string());
    artifacts.push_back(artifact_record(p));
  }
  step.outputs = {{"onnx_path", build.onnx_path.string()}, {"inputs", in}, {"outputs", out}};
  if (!build.float64_pbs.empty()) {
    json f64 = json::array();
    for (const auto& p : build.float64_pbs) {
      f64.push_back(p.string());
      artifacts.push_back(artifact_record(p));
    }
    step.outputs["float64_outputs"] = f64;
  }
  if (!build.intermediates.empty()) {
    json mids = json::array();
    for (const IntermediateTensor& i : build.intermediates) {
      mids.push_back({{"module", i.module}, {"tensor", i.tensor}, {"path", i.pb.string()}});
      artifacts.push_back(artifact_record(i.pb));
    }
    step.outputs["intermediates"] = mids;
  }
  step.artifacts = artifacts;
}

void restore_tool_stats(Build& build, const std::vector<const char*>& recorded) {
  if (!build.previous_stats.is_object()) return;
  for (const char* key : recorded) {
    const auto value = build.previous_stats.find(key);
    if (value != build.previous_stats.end() && !value->is_null()) build.stats.set(key, *value);
  }
}

void restore_outputs(Build& build, const json& entry) {
  if (!entry.contains("outputs")) return;
  const json& o = entry["outputs"];
  if (o.contains("onnx_path")) build.onnx_path = o["onnx_path"].get<std::string>();
  auto paths = [&](const char* key, std::vector<fs::path>& into) {
    if (!o.contains(key)) return;
    into.clear();
    for (const auto& p : o[key]) into.push_back(p.get<std::string>());
  };
  paths("inputs", build.input_pbs);
  paths("outputs", build.output_pbs);
  paths("float64_outputs", build.float64_pbs);
  if (o.contains("intermediates")) build.intermediates.clear();
  for (const json& i : o.value("intermediates", json::array())) {
    if (i.is_object() && i.value("tensor", "") != "" && i.value("path", "") != "") {
      build.intermediates.push_back(
          {i.value("module", ""), i["tensor"].get<std::string>(), i["path"].get<std::string>()});
    }
  }
}

}  // namespace turnkey::engine_internal
