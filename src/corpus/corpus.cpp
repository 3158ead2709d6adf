// A corpus run: inputs expanded and filtered, earlier results reused, the rest run locally or
// on Slurm, then the summary.
#include "turnkey/discovery/sandbox.h"
#include "turnkey/corpus/corpus.h"

#include <poll.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "stages/build.h"
#include "corpus/corpus_internal.h"
#include "pipeline/run_context.h"
#include "catalog/tool_checks.h"
#include "turnkey/common/env.h"
#include "turnkey/common/error.h"
#include "turnkey/common/text.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/catalog/status.h"
#include "turnkey/catalog/tools.h"

namespace turnkey {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace engine_internal;

namespace engine_internal {

// Set by SIGINT/SIGTERM during a corpus run; the loops stop their workers and jobs.
std::atomic<int> g_corpus_stop_signal{0};

void on_corpus_stop_signal(int sig) { g_corpus_stop_signal = sig; }

Ended stopped_from_outside(Ended ended, const std::function<std::string(int)>& why) {
  if (ended.status != Status::Crashed || (ended.signal != SIGTERM && ended.signal != SIGINT)) {
    return ended;
  }
  for (int i = 0; i < 20 && !g_corpus_stop_signal; ++i) ::poll(nullptr, 0, 10);
  if (!g_corpus_stop_signal) return ended;
  return {Status::Cancelled, 0, -1, why(g_corpus_stop_signal.load())};
}

}  // namespace engine_internal

namespace {

// --json: what each input came to, for the run's one document (json_output.h).
void append_input_outcomes(const std::vector<InputResult>& results, const fs::path& cache,
                           nlohmann::json& inputs) {
  for (const InputResult& r : results) {
    nlohmann::json builds = nlohmann::json::array();
    for (const std::string& b : r.builds) {
      builds.push_back({{"build", b}, {"dir", (cache / b).string()}});
    }
    inputs.push_back({{"input", r.given},
                      {"status", status_name(r.status)},
                      {"stage", r.stage},
                      {"error", r.error},
                      {"builds", builds},
                      {"earlier", r.earlier}});
  }
}

}  // namespace

namespace {

// Everything a corpus run can refuse before it starts a worker (exit 2, one line).
void check_corpus_request(const RunRequest& request) {
  validate_environment();
  for (const ToolCall& call : request.sequence) {
    if (const ToolSpec* spec = find_tool(call.name)) validate_tool_options(*spec, call.options);
  }
  tool_checks::check_export_opset(request);
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
}

// Inputs that need no worker (bad entries, filtered out, done in an earlier run) go straight to
// `results`; the others to the returned list.
std::vector<CorpusInput> inputs_to_run(const Corpus& corpus, const std::vector<InputItem>& items,
                                       std::vector<InputResult>& results) {
  const GlobalOptions& g = corpus.request().global;
  std::vector<CorpusInput> todo;
  for (const InputItem& item : items) {
    InputResult r;
    r.given = item.given;
    if (!item.error.empty()) {
      r.status = Status::InvalidInput;
      r.error = item.error;
      std::cerr << "turnkey: " << item.given << ": " << one_line(item.error) << "\n";
      results.push_back(r);
      continue;
    }
    if (!g.labels.empty() && item.path.extension() == ".py" &&
        !labels_match(read_labels(item.path), g.labels)) {
      r.status = Status::SkippedByFilter;
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
  return todo;
}

// Runs the inputs locally or on Slurm with SIGINT and SIGTERM stopping the workers and jobs.
std::vector<InputResult> run_stoppable(const Corpus& corpus, const std::vector<CorpusInput>& todo,
                                       size_t total) {
  struct sigaction sa {};
  sa.sa_handler = on_corpus_stop_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  std::vector<InputResult> ran = corpus.request().global.use_slurm
                                     ? run_on_slurm(corpus, todo)
                                     : run_local(corpus, todo, total);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return ran;
}

}  // namespace

int run_corpus(const RunRequest& request, nlohmann::json* inputs) {
  check_corpus_request(request);
  const GlobalOptions& g = request.global;
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
  const std::vector<CorpusInput> todo = inputs_to_run(corpus, items, results);
  const std::vector<InputResult> ran = run_stoppable(corpus, todo, items.size());
  results.insert(results.end(), ran.begin(), ran.end());
  int code = print_summary(results, corpus.inputs_dir(), seconds_since(t0));
  if (inputs) append_input_outcomes(results, corpus.cache_dir(), *inputs);
  if (sandbox_requested(g.sandbox)) std::cout << kSandboxedLine << "\n";
  const size_t failed = static_cast<size_t>(std::count_if(
      results.begin(), results.end(), [](const InputResult& r) { return is_failure_status(r.status); }));
  std::cout << closing_line(items.size(), failed, g_corpus_stop_signal != 0, results.size()) << "\n"
            << std::flush;
  if (g_corpus_stop_signal) return 128 + g_corpus_stop_signal;
  return code;
}

}  // namespace turnkey
