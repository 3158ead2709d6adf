// Where a sandboxed Python side writes (docs/sandbox.md): a private staging folder of its input
// inside the cache, the only folder of the cache it may write. The core, outside the sandbox,
// moves each file it asked for into the build dir it owns and checks it on the way: never
// through a symbolic link, only a regular file with no other link and no other open descriptor,
// only the names it gave. Without a sandbox the Python side writes in place, as always.
// Not thread-safe: one Staging and its Outboxes are used by one thread.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "turnkey/common/error.h"
#include "turnkey/common/files.h"

namespace turnkey {

// The staging folder of one input: <cache>/.staging/<host>-<pid ns>-<pid>-<random>/, mode 0700
// (and beside it the same name + ".held/", which the sandbox sees read-only), made by the
// constructor (Error(Io) when it cannot be; it first removes the folders of processes of this
// host and pid namespace that no longer exist, e.g. of a turnkey killed with SIGKILL) and removed
// by remove() or the destructor, which must run only once no process of the sandbox is left (the
// sandbox has a process-id namespace of its own, so every process in it is gone once its first one
// was reaped).
class Staging {
 public:
  explicit Staging(const std::filesystem::path& cache_dir);
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  const std::filesystem::path& root() const { return root_; }
  // A new empty folder in root() for one command's files ("3", "3/io"), made by the core.
  std::filesystem::path new_folder();
  // Moves the staged file `staged` (a path in root() the core chose) to `dest` (in a folder the
  // core owns, which must exist), replacing it. Throws Error(kind) naming the file and, in one
  // line, what was wrong with it: missing, a symbolic link, not a regular file, hard-linked,
  // still open in the sandbox, or a staging folder replaced. Costs a rename when the file
  // system grants a write lease (ext4, xfs, btrfs, tmpfs); a copy where it does not.
  void take(const std::filesystem::path& staged, const std::filesystem::path& dest,
            ErrorKind kind) const;
  // Names of the entries of the staged folder `folder` (a path in root()). Never follows links.
  std::set<std::string> entries_of(const std::filesystem::path& folder) const;
  void remove();

 private:
  std::filesystem::path root_;
  std::filesystem::path held_;  // root_ + ".held": where a file waits while it is checked
  int root_fd_ = -1;
  int held_fd_ = -1;
  int counter_ = 0;
  mutable int held_counter_ = 0;
};

// Removes the staging folders process `pid` of this host made in `cache_dir`: a
// corpus run's supervisor calls it once it has killed and reaped a worker, whose own removal
// never ran. Never follows links.
void remove_staging_of(const std::filesystem::path& cache_dir, pid_t pid);

// The files of one command to the Python side. With a Staging, the paths sent name places in a
// fresh staging folder and take() moves what the reply names into place; without one (no
// sandbox, or the Python API's own process) the paths sent are the build's and take() returns
// the reply's path where it is. Either way a reply names only what the core asked for (the
// Python side runs the user's script, which may forge replies: docs/reliability.md).
class Outbox {
 public:
  explicit Outbox(Staging* staging);
  // The path to send for the file `dest`.
  std::filesystem::path file(const std::filesystem::path& dest);
  // The folder to send for `dest_dir`, where the reply names files input_N.pb, output_N.pb,
  // intermediate_N.pb or float64_output_N.pb.
  std::filesystem::path folder(const std::filesystem::path& dest_dir);
  // The path the reply named, moved into place (with a Staging): its place in the build. Only a
  // path file() gave or an input_N.pb / output_N.pb / intermediate_N.pb / float64_output_N.pb
  // in a folder() one, each once; Error(kind) naming what is wrong otherwise.
  std::filesystem::path take(const std::string& replied, ErrorKind kind);
  // Names of the entries beside the staged file that take() moved to `dest` (what a command
  // wrote besides the files asked for: an ONNX model's external data files, or anything else);
  // empty without a Staging. Never follows links.
  std::set<std::string> left_beside(const std::filesystem::path& dest) const;
  // Moves `name` (a plain file name: no '/', not '.' or '..') from beside the staged file of
  // `dest` to beside `dest`, as take() does; returns the new path. Error(kind) otherwise (also
  // without a Staging: an exported model's external data lies beside it).
  std::filesystem::path take_beside(const std::filesystem::path& dest, const std::string& name,
                                    ErrorKind kind);
  bool staged() const { return staging_ != nullptr; }

 private:
  Staging* staging_;
  std::map<std::filesystem::path, std::filesystem::path> files_, folders_;  // staged -> dest
  std::map<std::filesystem::path, std::filesystem::path> taken_;            // dest -> staged
};

}  // namespace turnkey
