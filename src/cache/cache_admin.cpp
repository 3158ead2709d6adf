#include "turnkey/cache/cache_admin.h"

#include <algorithm>

#include <fmt/format.h>

#include "turnkey/cache/build_cache.h"
#include "turnkey/cache/build_records.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<BuildSummary> list_builds(const fs::path& cache_dir) {
  std::vector<BuildSummary> builds;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache_dir, ec)) {
    if (!is_build_dir(e.path())) continue;
    BuildSummary b;
    b.name = e.path().filename().string();
    b.dir = e.path();
    try {
      b.state = json_from_yaml(read_file(e.path() / (b.name + "_state.yaml")));
    } catch (const Error& err) {
      b.problem = std::string("state: ") + err.what();
    }
    if (fs::exists(e.path() / "turnkey_stats.yaml", ec)) {
      try {
        b.stats = json_from_yaml(read_file(e.path() / "turnkey_stats.yaml"));
      } catch (const Error& err) {
        if (b.problem.empty()) b.problem = std::string("stats: ") + err.what();
      }
    }
    builds.push_back(std::move(b));
  }
  std::sort(builds.begin(), builds.end(),
            [](const BuildSummary& a, const BuildSummary& b) { return a.name < b.name; });
  return builds;
}

fs::path existing_build_dir(const fs::path& cache_dir, const std::string& name) {
  if (!is_safe_build_name(name)) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("'{}' is not a build name (names contain no '/' and are not '..')",
                            name));
  }
  fs::path dir = cache_dir / name;
  if (!is_build_dir(dir)) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("no build named '{}' in {}", name, cache_dir.string()));
  }
  return dir;
}

void delete_build(const fs::path& cache_dir, const std::string& name) {
  fs::path dir = existing_build_dir(cache_dir, name);
  {
    BuildLock lock(dir);  // never delete under a running build
  }
  std::error_code ec;
  fs::remove_all(dir, ec);  // does not follow symlinks inside the dir
  if (ec) {
    throw Error(ErrorKind::Cache, fmt::format("cannot delete {}: {}", dir.string(), ec.message()));
  }
}

uintmax_t clean_build(const fs::path& build_dir) {
  uintmax_t freed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(build_dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string ext = e.path().extension().string();
    if (name == ".lock") continue;
    if (fs::is_directory(e.symlink_status(ec))) {
      for (const auto& f : fs::recursive_directory_iterator(e.path(), ec)) {
        if (f.is_regular_file(ec)) freed += f.file_size(ec);
      }
      fs::remove_all(e.path(), ec);
    } else if (ext != ".txt" && ext != ".yaml" && ext != ".json") {
      if (e.is_regular_file(ec)) freed += e.file_size(ec);
      fs::remove(e.path(), ec);
    }
  }
  return freed;
}

}  // namespace turnkey
