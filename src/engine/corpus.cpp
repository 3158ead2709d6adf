#include "turnkey/engine/corpus.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>

#include "build.h"
#include "corpus_internal.h"
#include "isolation.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/sha256.h"
#include "turnkey/common/version.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/engine/status.h"
#include "turnkey/engine/tools.h"
#include "turnkey/measure/system_info.h"
#include "worker_link.h"

namespace turnkey {

namespace engine_internal {
int run_worker_input(const RunRequest& request, const InputItem& item, WorkerLink& link);
}  // namespace engine_internal

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace engine_internal;

namespace engine_internal {
extern std::atomic<int> g_corpus_stop_signal;
}

namespace engine_internal {
// Set by SIGINT/SIGTERM during a corpus run; the loops stop their workers and jobs.
std::atomic<int> g_corpus_stop_signal{0};
}  // namespace engine_internal

namespace {

std::atomic<int>& g_stop_signal = g_corpus_stop_signal;

void on_stop_signal(int sig) { g_stop_signal = sig; }

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string file_sha256(const fs::path& p) {
  try {
    return sha256_hex(read_file(p));
  } catch (const Error&) {
    return "";
  }
}

std::vector<json> read_progress(const fs::path& p) {
  std::vector<json> events;
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
      json e = json::parse(text.substr(start, nl - start));
      if (e.is_object()) events.push_back(std::move(e));
    } catch (const json::exception&) {
    }
    start = nl + 1;
  }
  return events;
}

std::string one_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

}  // namespace

bool is_corpus_run(const GlobalOptions& g) {
  // A limit or --retry-failed only means something for isolated inputs: asking for one is
  // asking for isolation.
  return g.process_isolation || g.use_slurm || g.jobs > 1 || g.timeout_s > 0 ||
         !g.memory_limit.empty() || g.max_processes > 0 || g.retry_failed;
}

int64_t parse_size(const std::string& text) {
  std::string t = text;
  t.erase(std::remove_if(t.begin(), t.end(), ::isspace), t.end());
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = t.substr(used);
  std::transform(unit.begin(), unit.end(), unit.begin(), ::toupper);
  static const std::map<std::string, double> units = {{"", 1},
                                                      {"B", 1},
                                                      {"K", 1024.0},
                                                      {"KB", 1024.0},
                                                      {"KIB", 1024.0},
                                                      {"M", 1048576.0},
                                                      {"MB", 1048576.0},
                                                      {"MIB", 1048576.0},
                                                      {"G", 1073741824.0},
                                                      {"GB", 1073741824.0},
                                                      {"GIB", 1073741824.0},
                                                      {"T", 1099511627776.0},
                                                      {"TB", 1099511627776.0},
                                                      {"TIB", 1099511627776.0}};
  auto it = units.find(unit);
  if (used == 0 || it == units.end() || !(value > 0) || !std::isfinite(value)) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("--memory-limit {}: expected a size such as 512M or 4G", text));
  }
  double bytes = value * it->second;
  if (bytes < 16.0 * 1048576.0) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("--memory-limit {}: too small to start a worker (at least 16M)", text));
  }
  return static_cast<int64_t>(bytes);
}

double corpus_timeout_s(const GlobalOptions& g) {
  if (g.timeout_s > 0) return g.timeout_s;
  if (auto v = env_int("TURNKEY_TIMEOUT_SECONDS", 1, 365LL * 24 * 3600)) {
    return static_cast<double>(*v);
  }
  return 3600;
}

namespace engine_internal {

// ---- request <-> JSON --------------------------------------------------------------------------

json request_to_json(const RunRequest& r) {
  const GlobalOptions& g = r.global;
  json seq = json::array();
  for (const ToolCall& c : r.sequence) seq.push_back({{"name", c.name}, {"options", c.options}});
  return {{"cache_dir", g.cache_dir},
          {"labels", g.labels},
          {"rebuild", g.rebuild},
          {"lean_cache", g.lean_cache},
          {"python", g.python},
          {"sequence", seq},
          {"command_line", r.command_line},
          {"timeout_s", g.timeout_s},
          {"memory_limit", g.memory_limit},
          {"max_processes", g.max_processes}};
}

RunRequest request_from_json(const json& j) {
  RunRequest r;
  GlobalOptions& g = r.global;
  g.cache_dir = j.value("cache_dir", "");
  g.labels = j.value("labels", std::vector<std::string>{});
  g.rebuild = j.value("rebuild", "if_needed");
  g.lean_cache = j.value("lean_cache", false);
  g.python = j.value("python", "");
  g.timeout_s = j.value("timeout_s", 0.0);
  g.memory_limit = j.value("memory_limit", "");
  g.max_processes = j.value("max_processes", 0);
  for (const json& c : j.value("sequence", json::array())) {
    r.sequence.push_back({c.value("name", ""), c.value("options", json::object())});
  }
  r.command_line = j.value("command_line", "");
  return r;
}

json item_to_json(const InputItem& item) {
  return {{"given", item.given}, {"path", item.path.string()}, {"hashes", item.hashes}};
}

InputItem item_from_json(const json& j) {
  InputItem item;
  item.given = j.value("given", "");
  item.path = j.value("path", "");
  item.hashes = j.value("hashes", std::vector<std::string>{});
  return item;
}

// ---- Corpus ------------------------------------------------------------------------------------

Corpus::Corpus(const RunRequest& request, bool write_request)
    : request_(request), cache_dir_(fs::absolute(resolve_cache_dir(request.global.cache_dir))) {
  request_.global.cache_dir = cache_dir_.string();  // workers elsewhere (Slurm) use the same
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

std::optional<InputResult> Corpus::earlier_result(const CorpusInput& in) const {
  if (request_.global.rebuild == "always") return std::nullopt;
  json record;
  try {
    record = json_from_yaml(read_file(in.record));
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!record.is_object() || record.value("request_key", "") != request_key_ ||
      record.value("turnkey_version", "") != kVersion ||
      record.value("input_sha256", "") != file_sha256(in.item.path)) {
    return std::nullopt;
  }
  InputResult r;
  r.given = in.item.given;
  r.status = record.value("status", "");
  r.signal = record.value("signal", 0);
  r.stage = record.value("stage", "");
  r.error = record.value("error", "");
  r.log = in.log;
  r.earlier = true;
  if (!find_status(r.status) || r.status == "cancelled") return std::nullopt;
  if (is_failure_status(r.status)) {
    if (request_.global.retry_failed) return std::nullopt;
    return r;
  }
  // A success only stands while its builds do (not deleted, not rebuilt into another state).
  for (const json& b : record.value("builds", json::array())) {
    const std::string name = b.value("build", "");
    try {
      json state = json_from_yaml(read_file(cache_dir_ / name / (name + "_state.yaml")));
      if (!state.is_object() || !is_success(state.value("build_status", ""))) return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return r;
}

InputResult Corpus::finalize(const CorpusInput& in, const Ended& ended, double duration_s) const {
  std::vector<json> events = read_progress(in.progress);
  json outcome;
  std::string last_stage = "start";
  std::map<std::string, std::string> build_stage, build_dir;
  std::vector<std::string> builds;
  for (const json& e : events) {
    const std::string kind = e.value("e", "");
    if (kind == "stage") {
      last_stage = e.value("stage", last_stage);
      if (e.contains("build")) build_stage[e.value("build", "")] = last_stage;
    } else if (kind == "build") {
      const std::string name = e.value("build", "");
      if (std::find(builds.begin(), builds.end(), name) == builds.end()) builds.push_back(name);
      build_dir[name] = e.value("dir", "");
      build_stage[name] = last_stage;
    } else if (kind == "done") {
      outcome = e.value("outcome", json::object());
    }
  }
  InputResult r;
  r.given = in.item.given;
  r.log = in.log;
  if (!ended.status.empty()) {
    r.status = ended.status;
    r.signal = ended.signal;
    r.stage = last_stage;
    r.error = ended.detail;
  } else if (outcome.is_object() && outcome.contains("status")) {
    r.status = outcome.value("status", "crashed");
    r.signal = outcome.value("signal", 0);
    r.stage = outcome.value("stage", "");
    r.error = outcome.value("error", "");
  } else {
    r.status = "crashed";
    r.stage = last_stage;
    r.error = ended.exit_code >= 0
                  ? fmt::format("the worker exited with code {} without a result", ended.exit_code)
                  : "the worker ended without a result";
  }
  // Builds the worker did not finish carry the input's status and the stage they reached.
  const std::string description =
      status_display(r.status, r.signal) + (r.error.empty() ? "" : ": " + r.error);
  for (const std::string& name : builds) {
    fs::path dir = build_dir[name].empty() ? cache_dir_ / name : fs::path(build_dir[name]);
    BuildDir bd(dir.parent_path(), name);
    try {
      json state = json_from_yaml(read_file(bd.state_path()));
      if (!state.is_object() || state.value("build_status", "") != "incomplete") continue;
      const std::string stage = build_stage.count(name) ? build_stage[name] : last_stage;
      state["build_status"] = r.status;
      state["status"] = r.status;
      state["failed_tool"] = stage;
      state["last_tool"] = stage;
      state["error"] = description;
      if (r.signal > 0) state["signal"] = r.signal;
      state["finished"] = utc_timestamp_now();
      if (state.contains("tools") && state["tools"].is_array() && !state["tools"].empty() &&
          state["tools"].back().value("status", "") == "running") {
        state["tools"].back()["status"] = r.status;
      }
      bd.write_state(state);
      json stats = json::object();
      try {
        stats = json_from_yaml(read_file(bd.stats_path()));
        if (!stats.is_object()) stats = json::object();
      } catch (const Error&) {
      }
      stats["build_name"] = name;
      stats["build_status"] = r.status;
      stats["status"] = r.status;
      stats["failed_tool"] = stage;
      stats["error"] = description;
      bd.write_stats(stats);
    } catch (const Error&) {
      // A state that cannot be read or written: the input record still says what happened.
    }
  }
  json build_list = json::array();
  for (const std::string& name : builds) build_list.push_back({{"build", name}});
  json record = {{"input", fs::absolute(in.item.path).lexically_normal().string()},
                 {"given", in.item.given},
                 {"hashes", in.item.hashes},
                 {"status", r.status},
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
  try {
    write_file_atomic(in.record, yaml_from_json(record));
  } catch (const Error& e) {
    std::cerr << "turnkey: " << in.item.given << ": cannot write its record: " << e.what() << "\n";
  }
  return r;
}

// ---- summary -----------------------------------------------------------------------------------

int print_summary(const std::vector<InputResult>& results, const fs::path& inputs_dir,
                  double wall_s) {
  std::map<std::string, int> counts;
  int earlier = 0;
  bool failed = false;
  for (const InputResult& r : results) {
    ++counts[status_display(r.status, r.signal)];
    earlier += r.earlier;
    failed = failed || is_failure_status(r.status);
  }
  std::cout << std::flush;
  std::cout << fmt::format("\nCorpus summary: {} input{} in {:.1f} s{}\n", results.size(),
                           results.size() == 1 ? "" : "s", wall_s,
                           earlier ? fmt::format(" ({} from an earlier run)", earlier) : "");
  std::cout << fmt::format("  {:<24}{:>7}\n", "status", "inputs");
  for (const StatusInfo& s : status_table()) {
    for (const auto& [display, n] : counts) {
      if (display == s.name || display.rfind(std::string(s.name) + " (", 0) == 0) {
        std::cout << fmt::format("  {:<24}{:>7}\n", display, n);
      }
    }
  }
  bool any_listed = false;
  for (const InputResult& r : results) {
    if (!is_failure_status(r.status)) continue;
    if (!any_listed) std::cout << "Failed inputs (status, last stage, log):\n";
    any_listed = true;
    std::cout << fmt::format("  {:<22} {:<30} {:<15} {}\n", status_display(r.status, r.signal),
                             r.given, r.stage.empty() ? "-" : r.stage,
                             r.log.empty() ? first_line(r.error) : r.log.string());
  }
  std::cout << fmt::format("Logs and records: {}/<input>.log, .yaml\n", inputs_dir.string())
            << std::flush;
  return failed ? 1 : 0;
}

}  // namespace engine_internal

namespace {

// ---- the local loop ----------------------------------------------------------------------------

// Appends one event to a worker's progress file (the parent's notes: paused, pinned to CPUs).
void append_event(const fs::path& progress, json event) {
  event["t"] = utc_timestamp_now();
  event["by"] = "parent";
  int fd = ::open(progress.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string line = event.dump() + "\n";
  if (::write(fd, line.data(), line.size()) < 0) {
  }
  ::close(fd);
}

std::string join_cpus(const std::vector<int>& cpus) {
  std::string out;
  for (int c : cpus) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

struct Slot {
  CorpusInput in;
  std::unique_ptr<SupervisedProcess> proc;
  int control_fd = -1;  // parent's end of the benchmark-slot socket
  std::string control_buffer;
  bool wants_benchmark = false, benchmarking = false;
  int benchmark_threads = 0;
  Clock::time_point waiting_since;
  size_t number = 0;
};

void print_log_excerpt(const fs::path& log) {
  std::string text;
  try {
    text = read_file(log);
  } catch (const Error&) {
    return;
  }
  constexpr size_t kPart = 64 << 10;
  if (text.size() > 2 * kPart) {
    std::cout << text.substr(0, kPart)
              << fmt::format("\n[turnkey: {} bytes of output omitted; all of it is in {}]\n",
                             text.size() - 2 * kPart, log.string())
              << text.substr(text.size() - kPart);
  } else {
    std::cout << text;
  }
  if (!text.empty() && text.back() != '\n') std::cout << "\n";
  std::cout << std::flush;
}

std::vector<InputResult> run_local(const Corpus& corpus, const std::vector<CorpusInput>& todo,
                                   size_t total) {
  std::vector<InputResult> results;
  const int jobs = std::max(1, corpus.request().global.jobs);
  const bool live_echo = jobs == 1;
  become_subreaper();
  std::vector<std::unique_ptr<Slot>> running;
  size_t next = 0;
  // While a benchmark runs, the other workers are either paused (the benchmark asked for as
  // many cores as there are) or pinned to the CPUs the benchmark does not use.
  enum class Bench { None, Paused, Pinned } bench = Bench::None;
  const std::vector<int> all_cpus = allowed_cpus();
  std::vector<int> build_cpus;
  int sequence = 0;

  auto grant = [&](Slot& s) {
    int want = s.benchmark_threads > 0 ? s.benchmark_threads : cpu_facts().physical_cores;
    if (want <= 0) want = static_cast<int>(all_cpus.size());
    std::string reply = "go\n";
    if (want >= static_cast<int>(all_cpus.size())) {
      bench = Bench::Paused;
      for (auto& o : running) {
        if (o.get() == &s || !o->proc->running()) continue;
        o->proc->pause();
        append_event(o->in.progress, {{"e", "paused"}, {"for", s.in.item.given}});
      }
    } else {
      bench = Bench::Pinned;
      std::vector<int> mine(all_cpus.begin(), all_cpus.begin() + want);
      build_cpus.assign(all_cpus.begin() + want, all_cpus.end());
      for (auto& o : running) {
        if (o.get() == &s || !o->proc->running()) continue;
        o->proc->set_cpus(build_cpus);
        append_event(o->in.progress,
                     {{"e", "cpus"}, {"cpus", build_cpus}, {"for", s.in.item.given}});
      }
      reply = "go " + join_cpus(mine) + "\n";
    }
    s.wants_benchmark = false;
    s.benchmarking = true;
    s.proc->set_measuring(true);
    s.proc->extend_deadline(seconds_since(s.waiting_since));
    if (::send(s.control_fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) {
      // The worker is gone; its end is handled by its poll().
    }
  };
  auto release = [&](Slot& s) {
    s.benchmarking = false;
    s.proc->set_measuring(false);
    for (auto& o : running) {
      if (o.get() == &s || !o->proc->running()) continue;
      if (bench == Bench::Paused) {
        o->proc->resume();
        append_event(o->in.progress, {{"e", "resumed"}});
      } else if (bench == Bench::Pinned) {
        o->proc->set_cpus(all_cpus);
        append_event(o->in.progress, {{"e", "cpus"}, {"cpus", all_cpus}});
      }
    }
    bench = Bench::None;
  };

  auto ended_slot = [&](Slot& s) {
    if (s.benchmarking) release(s);
    if (s.control_fd >= 0) ::close(s.control_fd);
    s.control_fd = -1;
    InputResult r = corpus.finalize(s.in, s.proc->ended(), s.proc->elapsed_s());
    if (!live_echo) {
      std::cout << fmt::format("\n==== [{}/{}] {} ====\n", s.number, total, s.in.item.given);
      print_log_excerpt(s.in.log);
    }
    if (is_failure_status(r.status)) {
      std::cout << std::flush;
      std::cerr << fmt::format("turnkey: {}: {} (last stage: {}){}; log: {}\n", s.in.item.given,
                               status_display(r.status, r.signal), r.stage.empty() ? "-" : r.stage,
                               r.error.empty() ? "" : ": " + one_line(r.error), r.log.string())
                << std::flush;
    }
    results.push_back(r);
  };

  while (next < todo.size() || !running.empty()) {
    if (g_stop_signal) {
      for (auto& s : running) {
        s->proc->terminate("cancelled",
                           fmt::format("turnkey was stopped by signal {}", g_stop_signal.load()));
        ended_slot(*s);
      }
      running.clear();
      break;
    }
    while (next < todo.size() && static_cast<int>(running.size()) < jobs &&
           bench != Bench::Paused) {
      auto slot = std::make_unique<Slot>();
      slot->in = todo[next];
      slot->number = total - todo.size() + next + 1;
      ++next;
      int child_fd = -1;
      if (jobs > 1) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
          slot->control_fd = sv[0];
          child_fd = sv[1];
        }
      }
      std::error_code ec;
      fs::remove(slot->in.progress, ec);
      std::cout << std::flush;
      std::cerr << fmt::format("turnkey: [{}/{}] {}\n", slot->number, total, slot->in.item.given)
                << std::flush;
      try {
        slot->proc = std::make_unique<SupervisedProcess>(
            corpus.worker_argv(slot->in, child_fd), corpus.limits(), slot->in.log, live_echo,
            child_fd, fmt::format("{}-{}", getpid(), ++sequence));
      } catch (const Error& e) {
        if (child_fd >= 0) ::close(child_fd);
        if (slot->control_fd >= 0) ::close(slot->control_fd);
        InputResult r;
        r.given = slot->in.item.given;
        r.status = "crashed";
        r.error = e.what();
        r.log = slot->in.log;
        results.push_back(r);
        continue;
      }
      if (child_fd >= 0) ::close(child_fd);
      if (bench == Bench::Pinned) {
        slot->proc->set_cpus(build_cpus);
        append_event(slot->in.progress, {{"e", "cpus"}, {"cpus", build_cpus}});
      }
      running.push_back(std::move(slot));
    }

    std::vector<pollfd> fds;
    for (auto& s : running) {
      if (s->proc->output_fd() >= 0) fds.push_back({s->proc->output_fd(), POLLIN, 0});
      if (s->control_fd >= 0) fds.push_back({s->control_fd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 50);

    // Benchmark-slot requests and releases.
    for (auto& s : running) {
      if (s->control_fd < 0) continue;
      char buf[256];
      for (;;) {
        ssize_t n = ::recv(s->control_fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n <= 0) break;
        s->control_buffer.append(buf, static_cast<size_t>(n));
      }
      size_t nl;
      while ((nl = s->control_buffer.find('\n')) != std::string::npos) {
        std::string line = s->control_buffer.substr(0, nl);
        s->control_buffer.erase(0, nl + 1);
        if (line.rfind("bench", 0) == 0) {
          s->wants_benchmark = true;
          s->benchmark_threads = line.size() > 6 ? std::atoi(line.c_str() + 6) : 0;
          s->waiting_since = Clock::now();
        } else if (line == "done" && s->benchmarking) {
          release(*s);
        }
      }
    }
    if (bench == Bench::None) {
      for (auto& s : running) {
        if (!s->wants_benchmark || !s->proc->running()) continue;
        grant(*s);
        break;
      }
    }

    std::vector<pid_t> keep;
    for (auto it = running.begin(); it != running.end();) {
      if ((*it)->proc->poll()) {
        ended_slot(**it);
        it = running.erase(it);
      } else {
        keep.push_back((*it)->proc->pid());
        ++it;
      }
    }
    reap_orphans(keep);
  }
  return results;
}

}  // namespace

int run_corpus(const RunRequest& request) {
  validate_environment();
  for (const ToolCall& call : request.sequence) {
    if (find_tool(call.name)) resolve_options(call.name, call.options);
  }
  const GlobalOptions& g = request.global;
  if (g.use_slurm && g.process_isolation) {
    throw Error(ErrorKind::InvalidInput,
                "--process-isolation and --use-slurm exclude each other (each Slurm job is "
                "already isolated)");
  }
  if (g.jobs < 1 || g.jobs > 1024) {
    throw Error(ErrorKind::InvalidInput, fmt::format("-j {}: expected 1 to 1024", g.jobs));
  }
  if (g.timeout_s < 0) throw Error(ErrorKind::InvalidInput, "--timeout must be positive");
  if (g.max_processes < 0) throw Error(ErrorKind::InvalidInput, "--max-processes must be positive");
  if (!g.python.empty() || std::getenv("TURNKEY_PYTHON")) find_python(g.python);
  const auto t0 = Clock::now();
  Corpus corpus(request, true);

  std::vector<std::string> args = g.inputs;
  if (!g.search_dir.empty()) {
    for (std::string& a : args) {
      if (!fs::path(a).is_absolute()) a = (fs::path(g.search_dir) / a).string();
    }
  }
  std::vector<InputItem> items = expand_inputs(args);
  if (items.empty()) throw Error(ErrorKind::InvalidInput, "no inputs given");

  std::vector<InputResult> results;
  std::vector<CorpusInput> todo;
  for (const InputItem& item : items) {
    InputResult r;
    r.given = item.given;
    if (!item.error.empty()) {
      r.status = "invalid_input";
      r.error = item.error;
      std::cerr << "turnkey: " << item.given << ": " << one_line(item.error) << "\n";
      results.push_back(r);
      continue;
    }
    if (!g.labels.empty() && item.path.extension() == ".py" &&
        !labels_match(read_labels(item.path), g.labels)) {
      r.status = "skipped_by_filter";
      results.push_back(r);
      continue;
    }
    CorpusInput in = corpus.input_for(item);
    if (auto earlier = corpus.earlier_result(in)) {
      std::cerr << fmt::format(
          "turnkey: {}: {} in an earlier run, skipped{}\n", item.given,
          status_display(earlier->status, earlier->signal),
          is_failure_status(earlier->status) ? " (--retry-failed runs it again)" : "");
      results.push_back(*earlier);
      continue;
    }
    todo.push_back(in);
  }

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  std::vector<InputResult> ran =
      g.use_slurm ? run_on_slurm(corpus, todo) : run_local(corpus, todo, items.size());
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  results.insert(results.end(), ran.begin(), ran.end());
  int code = print_summary(results, corpus.inputs_dir(), seconds_since(t0));
  std::cout << "Woohoo! The 'benchmark' command is complete.\n" << std::flush;
  if (g_stop_signal) return 128 + g_stop_signal;
  return code;
}

// ---- hidden entry points -----------------------------------------------------------------------

namespace {

struct HiddenArgs {
  std::string request, item, progress;
  int control_fd = -1;
};

HiddenArgs parse_hidden(const std::vector<std::string>& args) {
  HiddenArgs h;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    if (args[i] == "--request")
      h.request = args[i + 1];
    else if (args[i] == "--item")
      h.item = args[i + 1];
    else if (args[i] == "--progress")
      h.progress = args[i + 1];
    else if (args[i] == "--control-fd")
      h.control_fd = std::atoi(args[i + 1].c_str());
  }
  if (h.request.empty() || h.item.empty()) {
    throw Error(ErrorKind::InvalidInput, "internal worker entry: --request and --item needed");
  }
  return h;
}

}  // namespace

int corpus_worker_main(const std::vector<std::string>& args) {
  HiddenArgs h = parse_hidden(args);
  RunRequest request = request_from_json(json::parse(read_file(h.request)));
  InputItem item = item_from_json(json::parse(h.item));
  WorkerLink link(h.progress, h.control_fd);
  link.event({{"e", "start"}, {"pid", getpid()}});
  return run_worker_input(request, item, link);
}

int corpus_isolate_main(const std::vector<std::string>& args) {
  HiddenArgs h = parse_hidden(args);
  RunRequest request = request_from_json(json::parse(read_file(h.request)));
  InputItem item = item_from_json(json::parse(h.item));
  Corpus corpus(request, false);
  CorpusInput in = corpus.input_for(item);
  std::error_code ec;
  fs::create_directories(corpus.inputs_dir(), ec);
  fs::remove(in.progress, ec);
  become_subreaper();
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  SupervisedProcess proc(corpus.worker_argv(in, -1), corpus.limits(), in.log, false, -1,
                         fmt::format("{}-1", getpid()));
  while (!proc.poll()) {
    if (g_stop_signal) {
      // Slurm cancels (scancel, time limit) with SIGTERM first: record it and stop everything.
      proc.terminate("cancelled", "the Slurm job was cancelled or reached its time limit");
      break;
    }
    pollfd p{proc.output_fd(), POLLIN, 0};
    ::poll(&p, proc.output_fd() >= 0 ? 1 : 0, 50);
    reap_orphans({proc.pid()});
  }
  InputResult r = corpus.finalize(in, proc.ended(), proc.elapsed_s());
  std::cout << fmt::format("{}: {}\n", item.given, status_display(r.status, r.signal));
  return is_failure_status(r.status) ? 1 : 0;
}

}  // namespace turnkey
