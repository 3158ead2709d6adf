// The hidden entry points the corpus parent runs (never users): the worker of one input, and
// the body of one Slurm job that supervises such a worker.
#include "turnkey/corpus/corpus.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "turnkey/machine/allocation.h"
#include "corpus/corpus_internal.h"
#include "corpus/isolation.h"
#include "corpus/slurm/slurm_jobs.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/discovery/staging.h"
#include "turnkey/catalog/status.h"
#include "corpus/worker_link.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace engine_internal;

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

// Why this process cannot create a file in `dir` ("" when it can): a node whose view of a shared
// cache dir is missing, read-only or full.
std::string write_problem(const fs::path& dir) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const fs::path probe = dir / fmt::format(".write-probe-{}-{}", host, getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return strerror(errno);
  const bool written = ::write(fd, "x", 1) == 1;
  const int err = written ? 0 : errno;
  ::close(fd);
  ::unlink(probe.c_str());
  return written ? "" : strerror(err);
}

}  // namespace

int corpus_worker_main(const std::vector<std::string>& args, const WorkerInputFn& run_input) {
  HiddenArgs h = parse_hidden(args);
  RunRequest request = request_from_json(json::parse(read_file(h.request)));
  InputItem item = item_from_json(json::parse(h.item));
  WorkerLink link(h.progress, h.control_fd);
  link.event(ProgressEvent::start(getpid()));
  return run_input(request, item, link);
}

int corpus_isolate_main(const std::vector<std::string>& args) {
  HiddenArgs h = parse_hidden(args);
  RunRequest request = request_from_json(json::parse(read_file(h.request)));
  InputItem item = item_from_json(json::parse(h.item));
  Corpus corpus(request, false);
  CorpusInput in = corpus.input_for(item);
  std::error_code ec;
  fs::create_directories(corpus.inputs_dir(), ec);
  json allocation = current_allocation();
  allocation["started"] = utc_timestamp_now();
  // A node that cannot write the cache dir cannot take part: say so, and exit with the code
  // that makes the parent run the input on another node and send no more jobs here.
  if (const std::string problem = write_problem(corpus.inputs_dir()); !problem.empty()) {
    std::cerr << fmt::format(
        "turnkey: node {}: cannot write the cache dir {}: {} (--use-slurm needs a cache dir "
        "every node can write)\n",
        allocation.value("slurm_node", allocation.value("host", "?")), corpus.cache_dir().string(),
        problem);
    return kJobExitNoCache;
  }
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
      proc.terminate(Status::Cancelled, "the Slurm job was cancelled or reached its time limit");
      break;
    }
    pollfd p{proc.output_fd(), POLLIN, 0};
    ::poll(&p, proc.output_fd() >= 0 ? 1 : 0, 50);
    reap_orphans({proc.pid()});
  }
  // A worker that finished on its own before the cancel keeps its outcome.
  Ended ended = stopped_from_outside(proc.ended(), [](int) {
    return std::string("the Slurm job was cancelled or reached its time limit");
  });
  allocation["finished"] = utc_timestamp_now();
  InputResult r = corpus.finalize(in, ended, proc.elapsed_s(), {{"allocation", allocation}});
  remove_staging_of(corpus.cache_dir(), proc.pid());  // a killed worker's (staging.h)
  std::cout << fmt::format("{}: {}\n", item.given, status_display(r.status, r.signal));
  return is_failure_status(r.status) ? 1 : 0;
}

}  // namespace turnkey
