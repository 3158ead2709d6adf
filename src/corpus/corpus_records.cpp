// Per-input records of a corpus run (<cache>/inputs/): the worker command line, resume from an
// earlier run, and the finalization of however a worker ended into one status.
#include "turnkey/corpus/corpus.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "corpus/corpus_internal.h"
#include "corpus/isolation.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/cache/build_records.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/sha256.h"
#include "turnkey/common/version.h"
#include "turnkey/catalog/status.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace engine_internal;

namespace {

std::string file_sha256(const fs::path& p) {
  try {
    return sha256_hex(read_file(p));
  } catch (const Error&) {
    return "";
  }
}

std::vector<ProgressEvent> read_progress(const fs::path& p) {
  std::vector<ProgressEvent> events;
  std::string text;
  try {
    text = read_file(p);
  } catch (const Error&) {
    return events;
  }
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) break;  // a torn last line is ignored
    try {
      if (auto e = ProgressEvent::from_json(json::parse(text.substr(start, nl - start)))) {
        events.push_back(std::move(*e));
      }
    } catch (const json::exception&) {
    }
    start = nl + 1;
  }
  return events;
}

}  // namespace

namespace engine_internal {

// ---- Corpus ------------------------------------------------------------------------------------

Corpus::Corpus(const RunRequest& request, bool write_request)
    : request_(request), cache_dir_(fs::absolute(resolve_cache_dir(request.global.cache_dir))) {
  request_.global.cache_dir = cache_dir_.string();  // workers elsewhere (Slurm) use the same
  for (ToolCall& call : request_.sequence) {        // and the same --input-data
    auto it = call.options.find("input_data");
    if (it != call.options.end() && it->is_string() && !it->get<std::string>().empty()) {
      *it = fs::absolute(it->get<std::string>()).lexically_normal().string();
    }
  }
  inputs_dir_ = cache_dir_ / "inputs";
  limits_.timeout_s = corpus_timeout_s(request.global);
  limits_.memory_bytes =
      request.global.memory_limit.empty() ? 0 : parse_size(request.global.memory_limit);
  limits_.max_processes = request.global.max_processes > 0 ? request.global.max_processes : 512;
  json key_parts = {{"sequence", request_to_json(request_)["sequence"]}, {"turnkey", kVersion}};
  request_key_ = sha256_hex(key_parts.dump());
  request_file_ = inputs_dir_ / "requests" / (request_key_.substr(0, 16) + ".json");
  std::error_code ec;
  exe_ = fs::read_symlink("/proc/self/exe", ec);
  if (write_request) {
    // Written once here; every worker's build names it (RunRequest::run_id).
    request_.run_id =
        record_run(cache_dir_, {request.command_line, fs::current_path(ec).string(), kVersion});
    fs::create_directories(request_file_.parent_path(), ec);
    if (ec) {
      throw Error(ErrorKind::Cache,
                  fmt::format("{}: cannot create: {}", inputs_dir_.string(), ec.message()));
    }
    write_file_atomic(request_file_, request_to_json(request_).dump(2) + "\n");
  }
}

CorpusInput Corpus::input_for(const InputItem& item) const {
  CorpusInput in;
  in.item = item;
  // Workers may run elsewhere (another cwd, a Slurm node): they get absolute paths.
  in.item.path = fs::absolute(item.path).lexically_normal();
  const std::string abs = in.item.path.string();
  std::string id = abs;
  for (const std::string& h : item.hashes) id += "::" + h;
  in.key = make_build_name(item.path.stem().string(), sha256_hex(id).substr(0, 8));
  in.record = inputs_dir_ / (in.key + ".yaml");
  in.log = inputs_dir_ / (in.key + ".log");
  in.progress = inputs_dir_ / (in.key + ".progress.jsonl");
  return in;
}

std::vector<std::string> Corpus::worker_argv(const CorpusInput& in, int control_fd) const {
  std::vector<std::string> argv = {exe_.string(), "__worker",
                                   "--request",   request_file_.string(),
                                   "--item",      item_to_json(in.item).dump(),
                                   "--progress",  in.progress.string()};
  if (control_fd >= 0) {
    argv.push_back("--control-fd");
    argv.push_back(std::to_string(control_fd));
  }
  return argv;
}

std::vector<std::string> Corpus::isolate_argv(const CorpusInput& in) const {
  return {exe_.string(),          "__isolate", "--request",
          request_file_.string(), "--item",    item_to_json(in.item).dump()};
}

json Corpus::read_record(const CorpusInput& in) const {
  try {
    json record = json_from_yaml(read_file(in.record));
    return record.is_object() ? record : json();
  } catch (const Error&) {
    return json();
  }
}

std::optional<InputResult> Corpus::result_of_record(const CorpusInput& in,
                                                    const json& record) const {
  // A damaged record (a field of another type) reads as that field missing, never as a throw.
  auto text = [&](const char* key, const std::string& otherwise) {
    return record.contains(key) && record[key].is_string() ? record[key].get<std::string>()
                                                           : otherwise;
  };
  const std::optional<Status> status = parse_status(text("status", ""));
  if (!status) return std::nullopt;
  InputResult r;
  r.given = in.item.given;
  r.status = *status;
  r.signal = record.contains("signal") && record["signal"].is_number_integer()
                 ? record["signal"].get<int>()
                 : 0;
  r.stage = text("stage", "");
  r.error = text("error", "");
  r.log = text("failure_log", in.log.string());
  if (record.contains("builds") && record["builds"].is_array()) {
    for (const json& b : record["builds"]) {
      if (b.is_object() && b.contains("build") && b["build"].is_string()) {
        r.builds.push_back(b["build"].get<std::string>());
      }
    }
  }
  return r;
}

std::optional<InputResult> Corpus::earlier_result(const CorpusInput& in) const {
  if (request_.global.rebuild == "always") return std::nullopt;
  const json record = read_record(in);
  if (!record.is_object() || record.value("request_key", "") != request_key_ ||
      record.value("turnkey_version", "") != kVersion ||
      record.value("input_sha256", "") != file_sha256(in.item.path)) {
    return std::nullopt;
  }
  std::optional<InputResult> from_record = result_of_record(in, record);
  // Inputs that never had a fair run (interrupted, every node they were sent to failed, their
  // job's end unknown) run again without --retry-failed.
  if (!from_record || status_info(from_record->status).rerun) return std::nullopt;
  InputResult r = std::move(*from_record);
  r.earlier = true;
  if (is_failure_status(r.status)) {
    if (request_.global.retry_failed) return std::nullopt;
    return r;
  }
  // A success only stands while its builds do (not deleted, not rebuilt into another state).
  for (const json& b : record.value("builds", json::array())) {
    const std::string name = b.value("build", "");
    try {
      json state = json_from_yaml(read_file(BuildDir(cache_dir_, name).state_path()));
      if (!state.is_object() || !is_success(state.value("build_status", ""))) return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return r;
}

namespace {

// What a worker's progress file says: the builds it opened (in order, with their dirs and the
// stage each reached), the last stage, and the outcome it reported at its end (if it lived).
struct ProgressSummary {
  std::optional<InputOutcome> outcome;
  std::string last_stage = "start";
  std::map<std::string, std::string> build_stage, build_dir;
  std::vector<std::string> builds;
};

ProgressSummary summarize_progress(const fs::path& progress) {
  ProgressSummary p;
  for (const ProgressEvent& e : read_progress(progress)) {
    if (e.kind == ProgressKind::Stage) {
      if (!e.stage.empty()) p.last_stage = e.stage;
      if (!e.build.empty()) p.build_stage[e.build] = p.last_stage;
    } else if (e.kind == ProgressKind::Build) {
      if (std::find(p.builds.begin(), p.builds.end(), e.build) == p.builds.end()) {
        p.builds.push_back(e.build);
      }
      p.build_dir[e.build] = e.dir;
      p.build_stage[e.build] = p.last_stage;
    } else if (e.kind == ProgressKind::Done) {
      p.outcome = e.outcome;
    }
  }
  return p;
}

// The input's status: how the supervisor saw it end, else what the worker reported, else a crash.
InputResult result_from(const CorpusInput& in, const Ended& ended, const ProgressSummary& p) {
  InputResult r;
  r.given = in.item.given;
  r.log = in.log;
  r.builds = p.builds;
  if (ended.status) {
    r.status = *ended.status;
    r.signal = ended.signal;
    r.stage = p.last_stage;
    r.error = ended.detail;
  } else if (p.outcome && p.outcome->status) {
    r.status = *p.outcome->status;
    r.signal = p.outcome->signal;
    r.stage = p.outcome->stage;
    r.error = p.outcome->error;
    // The failure's own log (the one the input's block named), when the worker knew it.
    if (!p.outcome->log.empty()) r.log = p.outcome->log;
  } else {
    r.status = Status::Crashed;
    r.stage = p.last_stage;
    r.error = ended.exit_code >= 0
                  ? fmt::format("the worker exited with code {} without a result", ended.exit_code)
                  : "the worker ended without a result";
  }
  return r;
}

// Builds the worker did not finish carry the input's status and the stage they reached.
void mark_unfinished(const fs::path& cache_dir, const InputResult& r, const ProgressSummary& p) {
  const std::vector<std::string>& builds = p.builds;
  std::map<std::string, std::string> build_stage = p.build_stage, build_dir = p.build_dir;
  const std::string& last_stage = p.last_stage;
  const std::string description =
      status_display(r.status, r.signal) + (r.error.empty() ? "" : ": " + r.error);
  for (const std::string& name : builds) {
    fs::path dir = build_dir[name].empty() ? cache_dir / name : fs::path(build_dir[name]);
    BuildDir bd(dir.parent_path(), name);
    try {
      std::vector<std::string> problems;
      BuildState state =
          BuildState::from_json(json_from_yaml(read_file(bd.state_path())), problems);
      if (state.build_status != status_name(Status::Incomplete)) continue;
      const std::string stage = build_stage.count(name) ? build_stage[name] : last_stage;
      state.build_status = status_name(r.status);
      state.status = status_name(r.status);
      state.failed_tool = stage;
      state.last_tool = stage;
      state.error = description;
      if (r.signal > 0) state.signal = r.signal;
      state.finished = utc_timestamp_now();
      if (!state.tools.empty() && state.tools.back().status == status_name(Status::Running)) {
        state.tools.back().status = status_name(r.status);
      }
      bd.write_state(state.to_json());
      BuildStats stats;
      stats.results_recorded = false;
      try {
        stats = BuildStats::from_json(json_from_yaml(read_file(bd.stats_path())));
      } catch (const Error&) {
      }
      stats.build_name = name;
      stats.build_status = status_name(r.status);
      stats.status = status_name(r.status);
      stats.failed_tool = stage;
      stats.error = description;
      bd.write_stats(stats.to_json());
    } catch (const Error&) {
      // A state that cannot be read or written: the input record still says what happened.
    }
  }
}

}  // namespace

void Corpus::write_record(const CorpusInput& in, const InputResult& r, double duration_s,
                          const json& extra) const {
  const std::vector<std::string>& builds = r.builds;
  json build_list = json::array();
  for (const std::string& name : builds) build_list.push_back({{"build", name}});
  json record = {{"input", fs::absolute(in.item.path).lexically_normal().string()},
                 {"given", in.item.given},
                 {"hashes", in.item.hashes},
                 {"status", status_name(r.status)},
                 {"stage", r.stage},
                 {"error", r.error},
                 {"builds", build_list},
                 {"log", in.log.string()},
                 {"duration_s", duration_s},
                 {"request_key", request_key_},
                 {"input_sha256", file_sha256(in.item.path)},
                 {"turnkey_version", kVersion},
                 {"finished", utc_timestamp_now()}};
  if (r.signal > 0) record["signal"] = r.signal;
  if (r.log != in.log) record["failure_log"] = r.log.string();
  for (const auto& [key, value] : extra.items()) record[key] = value;
  try {
    write_file_atomic(in.record, yaml_from_json(record));
  } catch (const Error& e) {
    std::cerr << "turnkey: " << in.item.given << ": cannot write its record: " << e.what() << "\n";
  }
}

InputResult Corpus::finalize(const CorpusInput& in, const Ended& ended, double duration_s,
                             const json& extra) const {
  const ProgressSummary p = summarize_progress(in.progress);
  InputResult r = result_from(in, ended, p);
  mark_unfinished(cache_dir_, r, p);
  write_record(in, r, duration_s, extra);
  return r;
}

bool Corpus::annotate_record(const CorpusInput& in, const json& extra) const {
  try {
    json record = json_from_yaml(read_file(in.record));
    if (!record.is_object()) return false;
    for (const auto& [key, value] : extra.items()) record[key] = value;
    write_file_atomic(in.record, yaml_from_json(record));
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace engine_internal

}  // namespace turnkey
