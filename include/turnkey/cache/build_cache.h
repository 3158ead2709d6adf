// The cache: one build directory per model and input signature, `<cache>/<build_name>/`, holding
// `<build_name>_state.yaml` (status, tools run, timestamps, versions), `turnkey_stats.yaml`
// (every measured number and model fact, units in key names), logs and artifacts. Every file is
// written atomically. State and stats are held in memory as JSON objects and stored as YAML.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace turnkey {

// --cache-dir wins over TURNKEY_CACHE_DIR, which wins over ~/.cache/turnkey. "~" expanded.
std::filesystem::path resolve_cache_dir(const std::string& flag_value);

// `<stem>_<hash8>` with the stem reduced to [A-Za-z0-9_.-] (other characters become '_', leading
// dots stripped), so a build name is never a path. hash8 is lower-case hex.
std::string make_build_name(const std::string& stem, const std::string& hash8);

// Refuses names that could leave the cache dir ("", ".", "..", anything with '/' or '\0').
bool is_safe_build_name(const std::string& name);

std::string yaml_from_json(const nlohmann::json& value);
nlohmann::json json_from_yaml(const std::string& yaml_text);  // throws Error(Cache)

// A run's own record, `<cache>/inputs/runs/<id>.yaml` (docs/cache.md): the run's whole command
// line, the folder it ran in and turnkey's version. A build's state names it by `run` rather than
// holding the command line, which grows with the run's inputs (a shell glob over 1,300 scripts
// is ~80 KB). The id is the first 16 hex of the sha256 of the record's content, so one command
// rerun from the same folder shares one record, written once.
struct RunRecord {
  std::string command_line, cwd, turnkey_version;
  nlohmann::json to_json() const;
  std::string id() const;
};
std::filesystem::path run_record_path(const std::filesystem::path& cache_dir,
                                      const std::string& id);
// Writes the record unless it is there; returns its id ("" for an empty command line: a run made
// through the Python API has none). Throws Error(Cache) when it cannot be written.
std::string record_run(const std::filesystem::path& cache_dir, const RunRecord& run);

// ISO-8601 UTC with milliseconds, "2026-11-21T23:59:01.123Z".
std::string utc_timestamp_now();

// An exclusive lock on one build dir (flock on `<build dir>/.lock`), so two turnkey processes
// never build into the same dir at once. The second waits; `on_wait` is called once if it has to.
// Released on destruction or when the process dies (the kernel drops flocks).
class BuildLock {
 public:
  BuildLock(const std::filesystem::path& build_dir, const std::function<void()>& on_wait = {});
  ~BuildLock();
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;

 private:
  int fd_ = -1;
};

class BuildDir {
 public:
  BuildDir(const std::filesystem::path& cache_dir, const std::string& build_name);

  const std::string& name() const { return name_; }
  const std::filesystem::path& path() const { return dir_; }
  std::filesystem::path state_path() const { return dir_ / (name_ + "_state.yaml"); }
  std::filesystem::path stats_path() const { return dir_ / "turnkey_stats.yaml"; }
  // The .pb files of the model's inputs and PyTorch's outputs (float32, float64, intermediates).
  std::filesystem::path io_dir() const { return dir_ / "io"; }
  // Where a stats file that could not be read is kept when a new one replaces it.
  std::filesystem::path unreadable_stats_path() const {
    return dir_ / "turnkey_stats.yaml.unreadable";
  }
  std::filesystem::path log_path(const std::string& tool) const {
    return dir_ / ("log_" + tool + ".txt");
  }

  // Creates the directory (and the cache dir). Throws Error(Cache).
  void create() const;
  // Both stamp `schema_version` (fields.h) into what they write.
  void write_state(const nlohmann::json& state) const;
  void write_stats(const nlohmann::json& stats) const;

 private:
  std::filesystem::path dir_;
  std::string name_;
};

}  // namespace turnkey
