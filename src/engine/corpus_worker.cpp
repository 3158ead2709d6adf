// The hidden entry points the corpus parent runs (never users): the worker of one input, and
// the body of one Slurm job that supervises such a worker.
#include "turnkey/engine/corpus.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "corpus_internal.h"
#include "isolation.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/discovery/staging.h"
#include "turnkey/engine/status.h"
#include "worker_link.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace engine_internal;

namespace engine_internal {
int run_worker_input(const RunRequest& request, const InputItem& item, WorkerLink& link);
}  // namespace engine_internal

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
  sa.sa_handler = on_corpus_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  SupervisedProcess proc(corpus.worker_argv(in, -1), corpus.limits(), in.log, false, -1,
                         fmt::format("{}-1", getpid()));
  while (!proc.poll()) {
    if (g_corpus_stop_signal) {
      // Slurm cancels (scancel, time limit) with SIGTERM first: record it and stop everything.
      proc.terminate("cancelled", "the Slurm job was cancelled or reached its time limit");
      break;
    }
    pollfd p{proc.output_fd(), POLLIN, 0};
    ::poll(&p, proc.output_fd() >= 0 ? 1 : 0, 50);
    reap_orphans({proc.pid()});
  }
  InputResult r = corpus.finalize(in, proc.ended(), proc.elapsed_s());
  remove_staging_of(corpus.cache_dir(), proc.pid());  // a killed worker's (staging.h)
  std::cout << fmt::format("{}: {}\n", item.given, status_display(r.status, r.signal));
  return is_failure_status(r.status) ? 1 : 0;
}

}  // namespace turnkey
