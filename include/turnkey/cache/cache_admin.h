// Cache management behind `turnkey cache ...`: list builds, delete or clean them. Never touches
// anything outside the cache dir: names with '/', '\0' or "..", and entries that are not build
// dirs, are refused. Not safe against another process building the same build at the same
// moment (delete takes the build's lock first to avoid exactly that).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace turnkey {

struct BuildSummary {
  std::string name;
  std::filesystem::path dir;
  nlohmann::json state;  // null when unreadable
  nlohmann::json stats;  // null when absent or unreadable
  std::string problem;   // why state/stats could not be read, "" when fine
};

// Every build dir of the cache (is_build_dir() of build_records.h), sorted by name.
std::vector<BuildSummary> list_builds(const std::filesystem::path& cache_dir);

// The build dir of `name`; throws Error(InvalidInput) for unsafe names and for names that are
// not a build in this cache.
std::filesystem::path existing_build_dir(const std::filesystem::path& cache_dir,
                                         const std::string& name);

// Removes a build dir entirely. Throws Error(InvalidInput) as existing_build_dir does.
void delete_build(const std::filesystem::path& cache_dir, const std::string& name);

// Removes a build's artifacts (everything but .txt logs, .yaml and .json files): the lean cache.
// Returns the bytes freed.
uintmax_t clean_build(const std::filesystem::path& build_dir);

}  // namespace turnkey
