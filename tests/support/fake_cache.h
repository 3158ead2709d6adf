// Synthetic cache build dirs for report tests: state, stats and raw samples written in the
// engine's format (see src/run/engine.cpp), plus seeded latency samples. Needs tk_cache and
// tk_measure.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "turnkey/cache/build_cache.h"
#include "turnkey/measure/statistics.h"

namespace turnkey::test {

struct FakeBuild {
  std::string build_name{};  // also names the dir
  std::string model_name = "model";
  std::string hash_full{};  // 64 hex digits, or anything; "" = derived from build_name
  std::string runtime = "ort";
  std::string device = "x86";
  std::string status = "successful";  // successful | failed | incomplete
  std::string failed_tool{};          // for failed builds
  std::string error{};                // for failed builds
  std::vector<double> samples_ms{};   // for successful builds; summary stats computed from them
  std::string script = "/work/scripts/example.py";
  std::string class_name = "Net";
  int64_t parameters = 1234;
  nlohmann::json extra_stats = nlohmann::json::object();  // merged into the stats (successful)
};

// Seeded latencies around `median_ms` with a few percent of log-normal spread; the same seed
// gives the same numbers on every platform (mt19937 + Box-Muller, no std distributions).
inline std::vector<double> fake_latencies(double median_ms, size_t n, uint32_t seed,
                                          double spread = 0.05) {
  std::mt19937 gen(seed);
  auto uniform = [&] { return (static_cast<double>(gen()) + 0.5) / 4294967296.0; };
  std::vector<double> v;
  v.reserve(n);
  while (v.size() < n) {
    double r = std::sqrt(-2 * std::log(uniform())), t = 2 * M_PI * uniform();
    v.push_back(median_ms * std::exp(spread * r * std::cos(t)));
    if (v.size() < n) v.push_back(median_ms * std::exp(spread * r * std::sin(t)));
  }
  return v;
}

inline std::filesystem::path write_fake_build(const std::filesystem::path& cache,
                                              const FakeBuild& b) {
  using nlohmann::json;
  BuildDir dir(cache, b.build_name);
  dir.create();
  std::string hash_full = b.hash_full;
  if (hash_full.empty()) {
    hash_full =
        b.build_name.size() >= 8 ? b.build_name.substr(b.build_name.size() - 8) : b.build_name;
  }
  json state = {{"build_name", b.build_name},
                {"build_status", b.status},
                {"turnkey_version", "0.1.0"},
                {"input", b.script},
                {"sequence", {"discover", "export-pytorch", "benchmark"}},
                {"command_line", "turnkey " + b.script},
                {"started", "2026-11-21T10:00:00.000Z"},
                {"model_name", b.model_name},
                {"hash_full", hash_full},
                {"tools", json::array()}};
  json stats = {{"script", b.script},
                {"model_name", b.model_name},
                {"class", b.class_name},
                {"parameters", b.parameters},
                {"hash", hash_full.substr(0, 8)},
                {"hash_full", hash_full},
                {"labels", "group::test"},
                {"inputs", {{{"name", "x"}, {"dtype", "float32"}, {"shape", {1, 16}}}}},
                {"build_name", b.build_name},
                {"build_status", b.status}};
  const std::vector<std::string> tools = {"discover", "export-pytorch", "benchmark"};
  for (const std::string& t : tools) {
    bool failed_here = b.status == "failed" && t == b.failed_tool;
    state["tools"].push_back(
        {{"name", t}, {"status", failed_here ? "failed" : "successful"}, {"duration_s", 0.01}});
    state["last_tool"] = t;
    if (failed_here) {
      state["tools"].back()["error"] = b.error;
      break;
    }
    if (b.status == "incomplete" && t == "export-pytorch") {
      state["tools"].back()["status"] = "running";
      break;
    }
  }
  if (b.status == "failed") {
    state["failed_tool"] = b.failed_tool;
    state["error"] = b.error;
  }
  if (b.status != "incomplete") state["finished"] = "2026-11-21T10:00:05.000Z";
  if (b.status == "successful" && !b.samples_ms.empty()) {
    LatencyStats st = compute_stats(b.samples_ms);
    stats["runtime"] = b.runtime;
    stats["device"] = b.device;
    stats["device_name"] = "Test CPU";
    stats["runtime_version"] = "1.0.0";
    stats["iterations"] = st.iterations;
    stats["mean_latency_ms"] = st.mean_ms;
    stats["median_latency_ms"] = st.median_ms;
    stats["median_ci_low_ms"] = st.median_ci_low_ms;
    stats["median_ci_high_ms"] = st.median_ci_high_ms;
    stats["p90_latency_ms"] = st.p90_ms;
    stats["p99_latency_ms"] = st.p99_ms;
    stats["std_latency_ms"] = st.std_ms;
    stats["throughput_ips"] = 1000.0 / st.mean_ms;
    stats.update(b.extra_stats);
    std::ofstream(dir.path() / ("samples_" + b.runtime + "_" + b.device + ".json"))
        << json({{"unit", "ms"}, {"samples", b.samples_ms}}).dump() << "\n";
  }
  dir.write_state(state);
  if (b.status != "incomplete") dir.write_stats(stats);
  return dir.path();
}

}  // namespace turnkey::test
