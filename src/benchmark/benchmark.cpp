// The benchmark tool: loads the model on the chosen runtime, times it with the measurement loop
// (src/measure/), judges its outputs and records the result. Option checks, the judgement and
// the recording live in benchmark_options.cpp, benchmark_judge.cpp and benchmark_record.cpp;
// the requests to the script's process (reference outputs, float64 outputs) here.
#include "benchmark/benchmark.h"

#include <fmt/format.h>

#include <algorithm>
#include <unistd.h>

#include <filesystem>

#include "benchmark/benchmark_profile.h"
#include "turnkey/catalog/status.h"
#include "turnkey/common/error.h"
#include "turnkey/common/text.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<DiscoveredInput> discovered_inputs(const Build& build) {
  std::vector<DiscoveredInput> found;
  if (!build.model) return found;
  for (const json& in : build.model->inputs) {
    DiscoveredInput d{in.value("name", std::string("?")), {}};
    if (in.contains("shape") && in["shape"].is_array()) {
      for (const json& dim : in["shape"])
        d.shape.push_back(dim.is_number() ? dim.get<int64_t>() : -1);
    }
    found.push_back(std::move(d));
  }
  return found;
}

namespace {

// The live model's inputs and outputs saved as the correctness reference (once per build).
void save_reference(Build& build, const std::string& runtime_name) {
  if (!build.session || !build.model) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("{} needs a PyTorch model from a script (this input is not one)",
                            runtime_name));
  }
  if (!build.output_pbs.empty()) return;
  const fs::path io_dir = build.dir->io_dir();
  fs::create_directories(io_dir);
  Outbox outbox = build.session->outbox();
  json reply = build.session->request({{"type", "reference"},
                                       {"id", build.model->id},
                                       {"io_dir", outbox.folder(io_dir).string()}},
                                      "reference_saved", ErrorKind::Runtime);
  if (!reply.value("ok", false)) {
    throw Error(ErrorKind::Runtime, "running the PyTorch model for reference outputs: " +
                                        reply.value("error", std::string("?")));
  }
  for (const std::string& p : reply_strings(reply, "inputs", ErrorKind::Runtime)) {
    outbox.take(p, ErrorKind::Runtime);
  }
  for (const std::string& p : reply_strings(reply, "outputs", ErrorKind::Runtime)) {
    build.output_pbs.push_back(outbox.take(p, ErrorKind::Runtime));
  }
}

// The batch is the first dim of the first input when that input has a batch dim at all
// (rank >= 2); a vector input of shape (10,) is one sample of 10 features. A script that parsed a
// batch size B (turnkeyml.parser) says otherwise where the first input's first dim is not B but
// another input's is: a vision tower fed one image as rows of patches, (256, 1176), with its
// grid (1, 3), is a batch of 1 image, not of 256. The script's inputs are read as discovered too:
// an exporter may fold such a grid into the graph, leaving the file one input.
int64_t batch_of(const Build& build) {
  std::vector<std::vector<int64_t>> shapes;  // the file's inputs, then the script's as discovered
  for (const HostTensor& t : build.inputs) shapes.push_back(t.shape);
  for (DiscoveredInput& in : discovered_inputs(build)) shapes.push_back(std::move(in.shape));
  if (shapes.empty()) return 1;
  const std::vector<int64_t>& first = shapes.front();
  const int64_t first_dim = first.size() >= 2 && first.front() > 0 ? first.front() : 1;
  const int64_t script_batch = build.model ? build.model->script_batch_size : 0;
  if (script_batch <= 0 || first_dim == script_batch) return first_dim;
  const bool said = std::any_of(shapes.begin() + 1, shapes.end(), [&](const auto& s) {
    return s.size() >= 2 && s.front() == script_batch;
  });
  return said ? script_batch : first_dim;
}

// The build log's account of the measurement: setup, loop, memory, probes, verdict, flags.
std::string measurement_log(const Build& build, const BenchmarkSetup& setup, const Measurement& m,
                            bool live, const std::string& correctness) {
  const LoopResult& loop = m.loop;
  const LatencyStats& st = m.stats;
  const RuntimeOptions& ro = setup.ro;
  std::string log = fmt::format(
      "model {}\nruntime {} {} on {} ({} threads{})\ninputs: {}\nload {} s\ncold {} ms, warm-up {} "
      "iterations in {} rounds ({}), {} timed iterations, stop: {}\nmedian {} ms, mean {} ms, "
      "harness overhead {} ms\nmodel memory: load {} B, run {} B (process peak {} B, {} B "
      "before loading)\nspeed probe: {} ms (machine's best {} ms)\ncorrectness: {}\n",
      build.stats.text("benchmarked_model", "?"), setup.runtime->display_name(),
      setup.runtime_version, cpu_facts().model, setup.threads,
      ro.cpus.empty() ? "" : fmt::format(", pinned to {}", fmt::join(ro.cpus, ",")),
      build.stats.text("input_source", live ? "captured from the script" : "?"), m.load_s,
      loop.cold_ms, loop.warmup_iterations, loop.warmup_rounds,
      loop.warmup_steady ? "steady" : "not steady", st.iterations, loop.stop_reason, st.median_ms,
      st.mean_ms, loop.overhead_median_ms, m.model_memory_load_bytes, m.model_memory_run_bytes,
      std::max(loop.peak_rss_load_bytes, loop.peak_rss_run_bytes), loop.rss_before_load_bytes,
      fmt::join(speed_probes_of(m), " "), m.probe_best_ms, correctness);
  for (const Repetition& rep : m.repetitions) {
    if (m.concurrency < 2) break;
    log += fmt::format(
        "{} requests in flight, {} session(s), {} threads each: {} calls completed in the {} s "
        "window (per caller: {}), {:.1f} calls/s\n",
        m.concurrency, rep.requests.sessions, setup.threads, rep.requests.run.completed,
        rep.loop.timed_s, fmt::join(rep.requests.run.completed_per_caller, " "),
        rep.requests.run.calls_per_s);
  }
  for (const auto& [key, value] : m.session_stats.items()) log += key + ": " + value.dump() + "\n";
  for (const Flag& f : m.flags) log += "warning: " + f.text + "\n";
  return log;
}

}  // namespace

void ask_float64_outputs(Build& build, const std::vector<HostTensor>& reference, std::string& log) {
  log += "outside the tolerance of PyTorch's float32 outputs: its float64 outputs asked for\n";
  json names = json::array(), shapes = json::array();
  for (const HostTensor& t : reference) {
    names.push_back(t.name);
    shapes.push_back(t.shape);
  }
  try {
    const fs::path io_dir = build.dir->io_dir();
    fs::create_directories(io_dir);
    Outbox outbox = build.session->outbox();
    const json reply = build.session->request({{"type", "float64"},
                                               {"id", build.model->id},
                                               {"io_dir", outbox.folder(io_dir).string()},
                                               {"names", names},
                                               {"shapes", shapes}},
                                              "float64_saved", ErrorKind::Runtime);
    if (const std::string said = reply.value("log", std::string()); !said.empty()) {
      log += said + "\n";
    }
    build.stats.set("float64_left_out", reply.value("float64_left_out", std::string()));
    if (!reply.value("ok", false)) {
      throw Error(ErrorKind::Runtime, reply.value("error", std::string("?")));
    }
    std::vector<fs::path> taken;
    for (const std::string& p : reply_strings(reply, "float64_outputs", ErrorKind::Runtime)) {
      taken.push_back(outbox.take(p, ErrorKind::Runtime));
    }
    build.float64_pbs = std::move(taken);
  } catch (const Error& e) {
    build.float64_pbs.clear();  // a check not made: the verdict stands on the float32 outputs
    build.stats.set("float64_left_out", one_line(e.what()));
    log += fmt::format("float64 reference outputs left out: {}\n", e.what());
  }
}

void tool_benchmark(Build& build, const json& opts, std::string& log) {
  // Recorded first, so a failed benchmark still says what it tried.
  build.stats.set("runtime", opts.value("runtime", "ort"));
  build.stats.set("device", opts.value("device", "x86"));
  build.stats.set("sequence", sequence_text(build.state));
  const BenchmarkSetup setup = resolve_benchmark(build, opts, log);
  const std::string& runtime_name = setup.runtime_name;

  // Inputs, and the outputs the runtime's are compared with (PyTorch's, or --input-data's).
  const bool live = setup.runtime->needs_live_model();
  build.step = "preparing the inputs and the reference outputs";
  build.input_data = opts.value("input_data", std::string());
  if (live) {
    save_reference(build, runtime_name);
  } else {
    if (build.onnx_path.empty()) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{} runs ONNX models: put export-pytorch before benchmark (or use a "
                              "torch runtime)",
                              runtime_name));
    }
    prepare_inputs(build);
  }
  record_settings(build, setup);

  Measurement m = measure(build, setup, live);
  add_earlier_runs(m, earlier_run_medians(build));
  m.batch = batch_of(build);
  // Requests in flight: sustained, what the timed windows completed (docs/measurement.md).
  const LatencyStats& st = m.stats;
  m.throughput_ips = m.concurrency > 1 ? m.calls_per_s * static_cast<double>(m.batch)
                     : st.mean_ms > 0  ? static_cast<double>(m.batch) * 1000.0 / st.mean_ms
                                       : 0;
  m.overhead_fraction = st.median_ms > 0 ? m.loop.overhead_median_ms / st.median_ms : 0;
  m.flags = trust_flags(m);
  record_measurement(build, setup, m);
  if (opts.value("profile", false)) {
    build.step = "profiling";
    profile_pass(build, setup, log);  // its own session, after
  }

  // Correctness against the PyTorch outputs saved at export.
  // On a mismatch, one more call in a fresh session tells a runtime that disagrees with itself.
  build.step = "comparing the outputs with " + reference_outputs_name(build);
  const auto again = [&] { return outputs_of_one_more_call(build, setup, live); };
  const Judgement judged = judge_outputs(build, m.outputs, setup, log, again);
  log += measurement_log(build, setup, m, live, judged.line);

  // Data first (the verdict's line and the flags); the block renders it.
  build.findings = {judged.line, m.flags};
  ModelBlock& b = build.block;
  b.status = fmt::format("Successfully benchmarked on {} ({} v{})",
                         build.stats.text("device_name", cpu_facts().model), runtime_name,
                         setup.runtime_version);
  b.status_detail = result_block_lines(build.stats.fields(), judged.line, m.flags);
  if (judged.mismatch) {
    // The exporter said its graph may compute other values: the likelier culprit, named.
    const std::string warned = build.stats.text("exporter_warning", "");
    throw Error(ErrorKind::NumericMismatch,
                fmt::format("{} outputs differ from {}: {}{}", runtime_name,
                            reference_outputs_name(build), judged.line,
                            warned.empty() ? "" : " (the exporter warned: " + warned + ")"));
  }
}

}  // namespace turnkey::engine_internal
