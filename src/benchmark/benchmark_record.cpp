// The benchmark's result into the build's stats (fields.h names every key), the result block's
// lines, and the stats file that keeps every result of a build (build_records.h).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

#include "turnkey/machine/allocation.h"
#include "benchmark/benchmark.h"
#include "benchmark/benchmark_profile.h"
#include "turnkey/cache/build_records.h"
#include "turnkey/cache/fields.h"
#include "turnkey/common/error.h"
#include "turnkey/common/files.h"
#include "turnkey/common/text.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;

using nlohmann::json;

namespace {

// "x:1x3x16x16,mask:1x128": the shapes the runtime is fed.
std::string shapes_text(const Build& build) {
  std::vector<std::string> parts;
  auto dims = [](const std::vector<int64_t>& shape) {
    return shape.empty() ? std::string("()") : fmt::format("{}", fmt::join(shape, "x"));
  };
  if (!build.inputs.empty()) {
    for (const HostTensor& t : build.inputs) parts.push_back(t.name + ":" + dims(t.shape));
  } else {
    for (const DiscoveredInput& in : discovered_inputs(build)) {
      parts.push_back(in.name + ":" + dims(in.shape));
    }
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

std::string padded(const char* label) {
  std::string s = std::string(label) + ":";
  if (s.size() < 16) s.resize(16, ' ');
  return s;
}

double num(const json& s, const char* key) {
  auto it = s.find(key);
  return it != s.end() && it->is_number() ? it->get<double>() : 0;
}

// "; 3 repetitions: medians 9.71 9.80 10.02 (spread 3.2%), next-run interval [9.62, 10.11]
// from 15 blocks" when the timed phase was repeated, "; next-run interval [9.62, 10.11] from 5
// blocks" when it was cut into blocks, "... from 5 blocks and 4 runs" when earlier runs of the
// result went in; "" for one block of one repetition and one run (the CI says it all).
std::string interval_text(const json& s) {
  const int64_t n = s.value("repetitions", int64_t{1});
  const int64_t blocks = s.value("blocks", int64_t{1});
  const int64_t runs = s.value("median_interval_runs", int64_t{1});
  if (n <= 1 && blocks <= 1 && runs <= 1) return "";
  std::string text;
  if (n > 1) {
    std::vector<std::string> medians;
    for (const json& v : s.value("repetition_medians_ms", json::array())) {
      medians.push_back(v.is_number() ? format_latency(v.get<double>()) : "?");
    }
    text = fmt::format("; {} repetitions: medians {} (spread {:.1f}%),", n, fmt::join(medians, " "),
                       num(s, "repetition_spread_pct"));
  } else {
    text = ";";
  }
  return text + fmt::format(" next-run interval [{}, {}] from {} block{}",
                            format_latency(num(s, "median_interval_low_ms")),
                            format_latency(num(s, "median_interval_high_ms")), blocks,
                            blocks == 1 ? "" : "s") +
         (runs > 1 ? fmt::format(" and {} runs", runs) : "");
}

// The device as results name it: the device table's model, else what the runtime saw of it
// (torch's name of a GPU whose driver files a container hides), else the device's CLI name.
std::string device_name_of(const Device* device, const json& session_stats) {
  std::string name = device ? device->model() : cpu_facts().model;
  // The session's stats come from the Python side: any plain value (protocol_schema.h).
  const json env = session_stats.value("device_environment", json::object());
  const json gpu = env.is_object() ? env.value("torch_gpu_name", json()) : json();
  if (name.empty() && gpu.is_string()) name = gpu.get<std::string>();
  return name.empty() && device ? device->name : name;
}

}  // namespace

std::string sequence_text(const BuildState& state) {
  std::vector<std::string> tools;
  // A continued build measures the model its first sequence made: same result as that one's.
  for (const std::string& t : state.continued_from) {
    if (t != "benchmark") tools.push_back(t);
  }
  for (const std::string& t : state.sequence) {
    if (t != "load-build") tools.push_back(t);
  }
  return fmt::format("{}", fmt::join(tools, " "));
}

void record_settings(Build& build, const BenchmarkSetup& setup) {
  BuildStats& s = build.stats;
  s.set("runtime", setup.runtime_name);
  s.set("device", setup.device);
  s.set("threads", setup.threads);
  s.set("pinned_cpus", fmt::format("{}", fmt::join(setup.ro.cpus, ",")));
  s.set("input_shapes", shapes_text(build));
  s.set("sequence", sequence_text(build.state));
  s.set("concurrency", setup.concurrency);
  show_fed_shapes(build);
}

namespace {

// The numbers of the timed calls: latency statistics, throughput, overhead, memory.
void record_latency(BuildStats& s, const BenchmarkSetup& setup, const Measurement& m) {
  s.set("batch_size", m.batch);
  s.set("iterations", m.stats.iterations);
  s.set("stop_rule", setup.loop.rule == StopRule::Iterations ? "iterations"
                     : setup.loop.rule == StopRule::Duration ? "duration"
                                                             : "adaptive");
  s.set("stop_reason", m.loop.stop_reason);
  s.set("timed_s", m.loop.timed_s);
  s.set("warmup_iterations", m.loop.warmup_iterations);
  s.set("warmup_rounds", m.loop.warmup_rounds);
  s.set("warmup_steady", m.loop.warmup_steady);
  s.set("cold_latency_ms", m.loop.cold_ms);
  s.set("mean_latency_ms", m.stats.mean_ms);
  s.set("median_latency_ms", m.stats.median_ms);
  s.set("median_ci_low_ms", m.stats.median_ci_low_ms);
  s.set("median_ci_high_ms", m.stats.median_ci_high_ms);
  s.set("min_latency_ms", m.stats.min_ms);
  s.set("max_latency_ms", m.stats.max_ms);
  s.set("std_latency_ms", m.stats.std_ms);
  s.set("cv", m.stats.cv);
  s.set("p90_latency_ms", m.stats.p90_ms);
  s.set("p95_latency_ms", m.stats.p95_ms);
  s.set("p99_latency_ms", m.stats.p99_ms);
  s.set("throughput_ips", m.throughput_ips);
  s.set("harness_overhead_ms", m.loop.overhead_median_ms);
  s.set("harness_overhead_fraction", m.overhead_fraction);
  s.set("memory_before_load_bytes", m.loop.rss_before_load_bytes);
  s.set("peak_memory_load_bytes", m.loop.peak_rss_load_bytes);
  s.set("peak_memory_run_bytes", m.loop.peak_rss_run_bytes);
  s.set("peak_memory_bytes", std::max(m.loop.peak_rss_load_bytes, m.loop.peak_rss_run_bytes));
  s.set("model_memory_load_bytes", m.model_memory_load_bytes);
  s.set("model_memory_run_bytes", m.model_memory_run_bytes);
  s.set("model_memory_bytes", std::max(m.model_memory_load_bytes, m.model_memory_run_bytes));
}

// The repetitions' spread, the interval, the speed probes and what the run was told to time.
void record_repetitions(Build& build, BuildStats& s, const Measurement& m) {
  json medians = json::array();
  double lowest = 0, highest = 0;
  for (const Repetition& r : m.repetitions) {
    medians.push_back(r.stats.median_ms);
    lowest = medians.size() == 1 ? r.stats.median_ms : std::min(lowest, r.stats.median_ms);
    highest = std::max(highest, r.stats.median_ms);
  }
  s.set("repetitions", static_cast<int64_t>(m.repetitions.size()));
  s.set("repetition_medians_ms", medians);
  s.set("repetition_spread_pct",
        m.stats.median_ms > 0 ? (highest - lowest) / m.stats.median_ms * 100 : 0.0);
  s.set("median_interval_low_ms", m.interval_low_ms);
  s.set("median_interval_high_ms", m.interval_high_ms);
  s.set("median_interval_method", m.interval_method);
  s.set("within_run_interval_low_ms", m.within_low_ms);
  s.set("within_run_interval_high_ms", m.within_high_ms);
  s.set("earlier_medians_ms", m.earlier_medians_ms);
  s.set("median_interval_runs", m.interval_runs);
  s.set("blocks", static_cast<int64_t>(m.block_medians_ms.size()));
  s.set("block_medians_ms", m.block_medians_ms);
  const std::vector<double> probes = speed_probes_of(m);
  s.set("speed_probes_ms", probes);
  s.set("speed_probe_ms", *std::max_element(probes.begin(), probes.end()));
  s.set("speed_probe_best_ms", m.probe_best_ms);
  s.set("speed_slowdown", m.probe_slowdown);
  if (m.throttled.readable) s.set("cpu_throttled_ms", m.throttled.throttled_ms);
  s.set("percentile_method", "linear interpolation between closest ranks (type 7)");
  s.set("throughput_definition",
        m.concurrency > 1 ? "calls in the timed window (parts of calls counted) * batch_size / its "
                            "wall time (sustained, with concurrency requests in flight)"
                          : "batch_size * 1000 / mean_latency_ms");
  s.set("load_s", m.load_s);
  s.set("sessions", m.sessions);
  s.set("benchmarked_model",
        m.live ? std::string("live PyTorch model") : build.onnx_path.string());
}

// Where it ran: the machine's facts, the CPU budget, the host and Slurm job, the GPU.
json environment_of(const Measurement& m, const Device* device) {
  json e = {{"cpu_model", m.env.cpu_model},
            {"physical_cores", m.env.physical_cores},
            {"logical_cpus", m.env.logical_cpus},
            {"threads", m.env.threads},
            {"pinned_cpus", m.env.cpus},
            {"governor", m.env.governor},
            {"cpu_mhz", m.env.cpu_mhz},
            {"load_average_1m", m.env.load_average_1m},
            {"runnable_other_threads_before", m.env.runnable_before},
            {"runnable_other_threads_after", m.env.runnable_after},
            {"usable_cpus", m.budget.cpus},
            {"cores_usable", m.budget.cores},
            {"cores_kernel", m.budget.machine_cores_kernel},
            {"cores_cpuinfo", m.budget.machine_cores_cpuinfo},
            {"default_threads", m.budget.default_threads},
            {"default_threads_basis", m.budget.basis},
            {"cpu_quota_cpus", m.budget.quota_cpus},
            {"cpu_quota_source", m.budget.quota_source},
            {"slurm_cpus_on_node", m.budget.slurm_cpus},
            {"cpufreq_max_mhz", m.env.frequency.max_mhz},
            {"cpufreq_hardware_max_mhz", m.env.frequency.hardware_max_mhz},
            {"cpu_throttled_periods", m.throttled.throttled},
            {"cpu_quota_periods", m.throttled.periods}};
  // Which host and Slurm job measured this: results of many nodes share a cache
  // (docs/corpus_runs.md).
  e.update(where_running());
  // A GPU's name, driver and CUDA versions (the device table's), and what the runtime saw of it
  // (torch's CUDA and cuDNN versions: docs/gpu.md).
  if (device) e.update(device->environment());
  if (auto it = m.session_stats.find("device_environment");
      it != m.session_stats.end() && it->is_object()) {
    e.update(*it);
  }
  return e;
}

}  // namespace

void record_measurement(Build& build, const BenchmarkSetup& setup, const Measurement& m) {
  BuildStats& s = build.stats;
  const Device* device = find_device(setup.device);
  s.set("device_name", device_name_of(device, m.session_stats));
  s.set("runtime_name", setup.runtime->display_name());
  s.set("runtime_version", setup.runtime_version);
  // A runtime's own facts (torch.compile's) are kept where the field table names them.
  for (const auto& [key, value] : m.session_stats.items()) {
    if (const StatsField* field = find_field(key); field && fits_field(*field, value)) {
      s.set(key, value);
    }
  }
  record_latency(s, setup, m);
  record_repetitions(build, s, m);
  s.set("environment", environment_of(m, device));
  s.set("measurement_flags", flag_texts(m.flags));
  s.set("flag_codes", flag_names(m.flags));
  s.set("noisy", !m.flags.empty());
  const std::string samples = samples_file_name(result_fields_of(s.fields()));
  write_file_atomic(build.dir->path() / samples, samples_file_text(m.loop.samples));
  s.samples_file = samples;
}

std::vector<std::string> result_block_lines(const json& s, const std::string& correctness_line,
                                            const std::vector<Flag>& flags) {
  // Fields whose line shows more than their own value.
  std::map<std::string, std::string> composite = {
      {"median_latency_ms",
       fmt::format(
           "median {} [95% CI {}, {}], min {}, max {}, std {}, p90 {}, p99 {} ({} "
           "iterations, cold {})",
           format_latency(num(s, "median_latency_ms")), format_latency(num(s, "median_ci_low_ms")),
           format_latency(num(s, "median_ci_high_ms")), format_latency(num(s, "min_latency_ms")),
           format_latency(num(s, "max_latency_ms")), format_latency(num(s, "std_latency_ms")),
           format_latency(num(s, "p90_latency_ms")), format_latency(num(s, "p99_latency_ms")),
           s.value("iterations", int64_t{0}), format_latency(num(s, "cold_latency_ms"))) +
           interval_text(s)},
      {"model_memory_bytes",
       fmt::format("{} (load), {} (run) above the process's {} before loading; process peak {}{}",
                   format_bytes(num(s, "model_memory_load_bytes")),
                   format_bytes(num(s, "model_memory_run_bytes")),
                   format_bytes(num(s, "memory_before_load_bytes")),
                   format_bytes(num(s, "peak_memory_bytes")),
                   s.contains("device_memory_allocated_bytes")
                       ? fmt::format("; device peak {} allocated, {} reserved",
                                     format_bytes(num(s, "device_memory_allocated_bytes")),
                                     format_bytes(num(s, "device_memory_reserved_bytes")))
                       : "")},
      {"correctness", correctness_line}};
  // Under requests in flight the throughput is sustained: say under what load.
  if (const int64_t n = s.value("concurrency", int64_t{1}); n > 1) {
    const int64_t sessions = s.value("sessions", int64_t{1});
    const int64_t threads = s.value("threads", int64_t{0});
    composite["throughput_ips"] = fmt::format(
        "{:.1f}\tinferences per second (IPS), sustained with {} requests in flight ({}, {} "
        "thread{} each)",
        num(s, "throughput_ips"), n,
        sessions > 1 ? fmt::format("{} sessions", sessions) : std::string("1 shared session"),
        threads, threads == 1 ? "" : "s");
  }
  // Fields whose value takes several lines, the first under the label (none: no line at all).
  const std::map<std::string, std::vector<std::string>> several = {
      {"profile", profile_block_lines(s.value("profile", json()))}};
  std::vector<const turnkey::StatsField*> labelled;
  for (const turnkey::StatsField& f : field_table()) {
    if (f.label) labelled.push_back(&f);
  }
  std::stable_sort(labelled.begin(), labelled.end(),
                   [](const auto* a, const auto* b) { return a->line < b->line; });
  std::vector<std::string> lines;
  for (const turnkey::StatsField* f : labelled) {
    std::string value;
    if (auto it = several.find(f->key); it != several.end()) {
      const std::vector<std::string>& rows = it->second;
      for (size_t i = 0; i < rows.size(); ++i) {
        lines.push_back((i == 0 ? padded(f->label) : std::string(16, ' ')) + rows[i]);
      }
      continue;
    }
    if (auto it = composite.find(f->key); it != composite.end()) {
      value = it->second;
    } else if (std::string_view(f->unit) == "ms") {
      value = format_latency(num(s, f->key)) + "\tmilliseconds (ms)";
    } else if (std::string_view(f->unit) == "ips") {
      value = fmt::format("{:.1f}\tinferences per second (IPS)", num(s, f->key));
    } else if (std::string_view(f->unit) == "s") {
      if (!s.contains(f->key)) continue;  // a field this run did not measure
      value = fmt::format("{:.4g}\tseconds (s)", num(s, f->key));
    } else {
      value = s.contains(f->key) ? s[f->key].dump() : "";
    }
    lines.push_back(padded(f->label) + value);
  }
  for (const Flag& f : flags) lines.push_back(padded("Warning") + f.text);
  return lines;
}

std::vector<double> earlier_run_medians(const Build& build) {
  const fs::path path = build.dir->stats_path();
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  const json host = where_running().value("host", json());
  try {
    const json stats = json_from_yaml(read_file(path));
    return earlier_medians(results_of(stats), result_key(result_fields_of(build.stats.fields())),
                           host.is_string() ? host.get<std::string>() : "");
  } catch (const std::exception&) {
    return {};  // write_build_stats() says the file could not be read, and keeps it
  }
}

void write_build_stats(Build& build) {
  BuildStats stats = build.stats;
  const fs::path path = build.dir->stats_path();
  std::error_code ec;
  if (fs::exists(path, ec)) {
    try {
      // The results earlier runs left in this build dir (any schema).
      stats.results = results_of(json_from_yaml(read_file(path)));
    } catch (const std::exception& e) {
      // Never overwritten unseen: the unreadable file is kept beside the new one, and said.
      const fs::path kept = build.dir->unreadable_stats_path();
      fs::rename(path, kept, ec);
      std::cout << std::flush;
      std::cerr << fmt::format(
                       "turnkey: {}: {} could not be read ({}); {}, and the results it held are "
                       "not in the new one\n",
                       build.build_name, path.filename().string(), one_line(e.what()),
                       ec ? "it is overwritten" : "kept as " + kept.filename().string())
                << std::flush;
    }
  }
  if (stats.has("runtime")) {
    ResultRecord latest;
    latest.fields = result_fields_of(stats.fields());
    latest.key = result_key(latest.fields);
    latest.status = build.state.build_status;
    latest.error = build.state.error;
    latest.failed_tool = build.state.failed_tool;
    latest.finished = build.state.finished;
    latest.samples_file = stats.samples_file;
    stats.results = merge_result(std::move(stats.results), std::move(latest));
  }
  build.dir->write_stats(stats.to_json());
}

}  // namespace turnkey::engine_internal
