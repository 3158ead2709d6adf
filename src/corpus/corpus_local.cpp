// The local scheduler of a corpus run: up to -j supervised workers at once, benchmarks one at a
// time (paused or pinned while another measures), progress and interruption.
#include "turnkey/corpus/corpus.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "corpus/corpus_internal.h"
#include "pipeline/progress.h"
#include "corpus/isolation.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/text.h"
#include "turnkey/discovery/staging.h"
#include "turnkey/catalog/status.h"
#include "turnkey/machine/system_info.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace engine_internal;

namespace engine_internal {

namespace {

// ---- the local loop ----------------------------------------------------------------------------

// Appends one event to a worker's progress file (the parent's notes: paused, pinned to CPUs).
void append_event(const fs::path& progress, const ProgressEvent& event) {
  int fd = ::open(progress.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string line = event.line(true);
  if (::write(fd, line.data(), line.size()) < 0) {
  }
  ::close(fd);
}

std::string join_cpus(const std::vector<int>& cpus) {
  std::string out;
  for (int c : cpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(c);
  }
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

}  // namespace

namespace {

// The local loop: up to -j workers at a time, each a supervised process; the benchmark slot
// handed to one worker at a time over its control socket, the others paused or pinned to the
// CPUs the benchmark leaves. One per run_local call; main thread only.
class LocalScheduler {
 public:
  LocalScheduler(const Corpus& corpus, const std::vector<CorpusInput>& todo, size_t total)
      : corpus_(corpus),
        todo_(todo),
        total_(total),
        jobs_(std::max(1, corpus.request().global.jobs)),
        live_echo_(jobs_ == 1),
        all_cpus_(allowed_cpus()) {}

  std::vector<InputResult> run() {
    become_subreaper();
    while (next_ < todo_.size() || !running_.empty()) {
      if (g_corpus_stop_signal) {
        stop_all();
        break;
      }
      while (next_ < todo_.size() && static_cast<int>(running_.size()) < jobs_ &&
             bench_ != Bench::Paused) {
        start_next();
      }
      wait_for_activity();
      read_control();
      if (bench_ == Bench::None) grant_first_waiting();
      reap_ended();
    }
    return std::move(results_);
  }

 private:
  // While a benchmark runs, the other workers are either paused (the benchmark asked for as
  // many cores as there are) or pinned to the CPUs the benchmark does not use.
  enum class Bench { None, Paused, Pinned };

  void grant(Slot& s) {
    int want = s.benchmark_threads > 0 ? s.benchmark_threads : default_threads();
    if (want <= 0) want = static_cast<int>(all_cpus_.size());
    std::string reply = "go\n";
    if (want >= static_cast<int>(all_cpus_.size())) {
      bench_ = Bench::Paused;
      for (auto& o : running_) {
        if (o.get() == &s || !o->proc->running()) continue;
        o->proc->pause();
        append_event(o->in.progress, ProgressEvent::paused(s.in.item.given));
      }
    } else {
      bench_ = Bench::Pinned;
      std::vector<int> mine(all_cpus_.begin(), all_cpus_.begin() + want);
      build_cpus_.assign(all_cpus_.begin() + want, all_cpus_.end());
      for (auto& o : running_) {
        if (o.get() == &s || !o->proc->running()) continue;
        o->proc->set_cpus(build_cpus_);
        append_event(o->in.progress, ProgressEvent::cpus_now(build_cpus_, s.in.item.given));
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
  }

  void release(Slot& s) {
    s.benchmarking = false;
    s.proc->set_measuring(false);
    for (auto& o : running_) {
      if (o.get() == &s || !o->proc->running()) continue;
      if (bench_ == Bench::Paused) {
        o->proc->resume();
        append_event(o->in.progress, ProgressEvent::resumed());
      } else if (bench_ == Bench::Pinned) {
        o->proc->set_cpus(all_cpus_);
        append_event(o->in.progress, ProgressEvent::cpus_now(all_cpus_));
      }
    }
    bench_ = Bench::None;
  }

  void ended(Slot& s) {
    if (s.benchmarking) release(s);
    if (s.control_fd >= 0) ::close(s.control_fd);
    s.control_fd = -1;
    const Ended end = stopped_from_outside(s.proc->ended(), [](int signal) {
      return fmt::format("turnkey was stopped by signal {}", signal);
    });
    InputResult r = corpus_.finalize(s.in, end, s.proc->elapsed_s());
    // A worker killed on a limit left its sandbox's staging folder (its processes are gone).
    remove_staging_of(corpus_.cache_dir(), s.proc->pid());
    if (!live_echo_) {
      std::cout << fmt::format("\n==== [{}/{}] {} ====\n", s.number, total_, s.in.item.given);
      print_log_excerpt(s.in.log);
    }
    if (is_failure_status(r.status)) {
      std::cout << std::flush;
      std::cerr << fmt::format("turnkey: {}: {} (last stage: {}){}; log: {}\n", s.in.item.given,
                               status_display(r.status, r.signal), r.stage.empty() ? "-" : r.stage,
                               r.error.empty() ? "" : ": " + one_line(r.error), r.log.string())
                << std::flush;
    }
    results_.push_back(r);
  }

  void stop_all() {
    for (auto& s : running_) {
      s->proc->terminate(Status::Cancelled, fmt::format("turnkey was stopped by signal {}",
                                                        g_corpus_stop_signal.load()));
      ended(*s);
    }
    running_.clear();
  }

  void start_next() {
    auto slot = std::make_unique<Slot>();
    slot->in = todo_[next_];
    slot->number = total_ - todo_.size() + next_ + 1;
    ++next_;
    int child_fd = -1;
    if (jobs_ > 1) {
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
        slot->control_fd = sv[0];
        child_fd = sv[1];
      }
    }
    std::error_code ec;
    fs::remove(slot->in.progress, ec);
    std::cout << std::flush;
    std::cerr << fmt::format("turnkey: [{}/{}] {}\n", slot->number, total_, slot->in.item.given)
              << std::flush;
    try {
      slot->proc = std::make_unique<SupervisedProcess>(
          corpus_.worker_argv(slot->in, child_fd), corpus_.limits(), slot->in.log, live_echo_,
          child_fd, fmt::format("{}-{}", getpid(), ++sequence_));
    } catch (const Error& e) {
      if (child_fd >= 0) ::close(child_fd);
      if (slot->control_fd >= 0) ::close(slot->control_fd);
      InputResult r;
      r.given = slot->in.item.given;
      r.status = Status::Crashed;
      r.error = e.what();
      r.log = slot->in.log;
      results_.push_back(r);
      return;
    }
    if (child_fd >= 0) ::close(child_fd);
    if (bench_ == Bench::Pinned) {
      slot->proc->set_cpus(build_cpus_);
      append_event(slot->in.progress, ProgressEvent::cpus_now(build_cpus_));
    }
    running_.push_back(std::move(slot));
  }

  void wait_for_activity() {
    std::vector<pollfd> fds;
    for (auto& s : running_) {
      if (s->proc->output_fd() >= 0) fds.push_back({s->proc->output_fd(), POLLIN, 0});
      if (s->control_fd >= 0) fds.push_back({s->control_fd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 50);
  }

  // Benchmark-slot requests ("bench N") and releases ("done") from the workers.
  void read_control() {
    for (auto& s : running_) {
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
  }

  void grant_first_waiting() {
    for (auto& s : running_) {
      if (!s->wants_benchmark || !s->proc->running()) continue;
      grant(*s);
      break;
    }
  }

  void reap_ended() {
    std::vector<pid_t> keep;
    for (auto it = running_.begin(); it != running_.end();) {
      if ((*it)->proc->poll()) {
        ended(**it);
        it = running_.erase(it);
      } else {
        keep.push_back((*it)->proc->pid());
        ++it;
      }
    }
    reap_orphans(keep);
  }

  const Corpus& corpus_;
  const std::vector<CorpusInput>& todo_;
  const size_t total_;
  const int jobs_;
  const bool live_echo_;
  const std::vector<int> all_cpus_;
  std::vector<InputResult> results_;
  std::vector<std::unique_ptr<Slot>> running_;
  size_t next_ = 0;
  Bench bench_ = Bench::None;
  std::vector<int> build_cpus_;
  int sequence_ = 0;
};

}  // namespace

std::vector<InputResult> run_local(const Corpus& corpus, const std::vector<CorpusInput>& todo,
                                   size_t total) {
  return LocalScheduler(corpus, todo, total).run();
}

}  // namespace engine_internal

}  // namespace turnkey
