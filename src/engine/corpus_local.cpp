// The local scheduler of a corpus run: up to -j supervised workers at once, benchmarks one at a
// time (paused or pinned while another measures), progress and interruption.
#include "turnkey/engine/corpus.h"

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

#include "corpus_internal.h"
#include "isolation.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/text.h"
#include "turnkey/discovery/staging.h"
#include "turnkey/engine/status.h"
#include "turnkey/measure/system_info.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace engine_internal;

namespace engine_internal {

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

}  // namespace

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
    int want = s.benchmark_threads > 0 ? s.benchmark_threads : default_threads();
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
    // A worker killed on a limit left its sandbox's staging folder (its processes are gone).
    remove_staging_of(corpus.cache_dir(), s.proc->pid());
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
    if (g_corpus_stop_signal) {
      for (auto& s : running) {
        s->proc->terminate("cancelled",
                           fmt::format("turnkey was stopped by signal {}", g_corpus_stop_signal.load()));
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

}  // namespace engine_internal

}  // namespace turnkey
