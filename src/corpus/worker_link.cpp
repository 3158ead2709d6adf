#include "corpus/worker_link.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <string>

#include "turnkey/cache/build_cache.h"

namespace turnkey::engine_internal {

namespace {

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone: the worker goes on (and dies with it anyway)
    done += static_cast<size_t>(n);
  }
}

std::vector<int> current_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

void pin(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  sched_setaffinity(0, sizeof set, &set);
}

}  // namespace

WorkerLink::WorkerLink(const std::filesystem::path& progress_file, int control_fd)
    : control_fd_(control_fd) {
  // Inherited across exec on purpose; the Python side and the user's script must not inherit it.
  if (control_fd_ >= 0) fcntl(control_fd_, F_SETFD, fcntl(control_fd_, F_GETFD) | FD_CLOEXEC);
  if (!progress_file.empty()) {
    progress_fd_ = ::open(progress_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
}

WorkerLink::~WorkerLink() {
  if (holding_) release_benchmark();
  if (progress_fd_ >= 0) ::close(progress_fd_);
  if (control_fd_ >= 0) ::close(control_fd_);
}

void WorkerLink::event(const ProgressEvent& event) {
  if (progress_fd_ < 0) return;
  write_all(progress_fd_, event.line());
}

void WorkerLink::acquire_benchmark(int threads) {
  if (holding_) return;
  holding_ = true;
  if (control_fd_ < 0) {
    event(ProgressEvent::benchmark("start", current_cpus()));
    return;
  }
  write_all(control_fd_, "bench " + std::to_string(threads) + "\n");
  // Wait for "go\n"; end of file (parent gone) also lets the benchmark run.
  std::string reply;
  char c;
  while (reply.size() < 64) {
    ssize_t n = ::read(control_fd_, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    reply += c;
  }
  // "go" (the others are paused) or "go 2,3" (run on these CPUs; the others are kept off them).
  // The runtime's threads, created after this, inherit the affinity.
  if (reply.size() > 3 && reply.rfind("go ", 0) == 0) {
    std::vector<int> cpus;
    std::stringstream ss(reply.substr(3));
    std::string item;
    while (std::getline(ss, item, ',')) cpus.push_back(std::atoi(item.c_str()));
    saved_cpus_ = current_cpus();
    pin(cpus);
  }
  event(ProgressEvent::benchmark("start", current_cpus()));
}

void WorkerLink::release_benchmark() {
  if (!holding_) return;
  holding_ = false;
  event(ProgressEvent::benchmark("end"));
  if (!saved_cpus_.empty()) pin(saved_cpus_);
  saved_cpus_.clear();
  if (control_fd_ >= 0) write_all(control_fd_, "done\n");
}

}  // namespace turnkey::engine_internal
