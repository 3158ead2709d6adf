// `turnkey cache list`: one line per result of every build in a cache (the report's rows, so
// `cache list` and `report` agree on what a build is and what it holds). Thread-safe.
#pragma once

#include <filesystem>
#include <string>

namespace turnkey::report {

// The table `cache list` prints: build, status, model, runtime, median latency, then the
// result's settings and how its median moved over its runs. "No builds in <dir>" when empty.
// Throws Error(InvalidInput) when `cache_dir` is not a directory.
std::string cache_list_text(const std::filesystem::path& cache_dir);

}  // namespace turnkey::report
