// The benchmark tool: loads the model on the chosen runtime, times it with the measurement loop
// (src/measure/), judges its outputs and records the result. Option checks, the judgement and
// the recording live in benchmark_options.cpp, benchmark_judge.cpp and benchmark_record.cpp.
#include "benchmark.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "turnkey/common/error.h"
#include "turnkey/engine/status.h"

namespace turnkey::engine_internal {

namespace fs = std::filesystem;
using nlohmann::json;

void tool_benchmark(Build& build, const json& opts, std::string& log) {
  // Recorded first, so a failed benchmark still says what it tried.
  build.stats.set("runtime", opts.value("runtime", "ort"));
  build.stats.set("device", opts.value("device", "x86"));
  build.stats.set("sequence", sequence_text(build.state));
  const BenchmarkSetup setup = resolve_benchmark(build, opts, log);
  const Runtime* runtime = setup.runtime;
  const std::string& runtime_name = setup.runtime_name;
  const RuntimeOptions& ro = setup.ro;
  const int threads = setup.threads;
  const CpuFacts& cpu = cpu_facts();

  // Inputs, and the PyTorch outputs the runtime's are compared with.
  const bool live = runtime->needs_live_model();
  if (live) {
    if (!build.session || !build.model) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{} needs a PyTorch model from a script (this input is not one)",
                              runtime_name));
    }
    if (build.output_pbs.empty()) {
      const fs::path io_dir = build.dir->path() / "io";
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

  EnvironmentFingerprint env = start_fingerprint(threads, ro.cpus);
  LoopResult loop;
  std::vector<HostTensor> outputs;
  json session_stats = json::object();
  {
    ScopedPin pin(ro.cpus);
    const pid_t self = getpid();
    // Peak memory while loading: the process holding the model is this one for in-process
    // runtimes; the Python side's for torch-eager (whose load is only a preparation).
    const pid_t holder = live && runtime_name != "torchscript" ? build.session->python_pid() : self;
    const bool rss_ok = reset_peak_rss(holder);
    loop.rss_before_load_bytes = current_rss_bytes(holder);
    std::unique_ptr<Session> session;
    try {
      if (live) {
        LiveModel lm{build.session, build.model->id, build.dir->path(), build.build_name};
        session = runtime->load_live(lm, {}, ro);
      } else {
        session = runtime->load(build.onnx_path, build.inputs, ro);
      }
    } catch (const Error& e) {
      throw StatusError(Status::RuntimeLoadFailed, e);
    }
    const int64_t load_peak = rss_ok ? peak_rss_bytes(holder) : 0;
    const int64_t before = loop.rss_before_load_bytes;
    try {
      loop = run_loop(*session, setup.loop);
      outputs = session->outputs();
      session_stats = session->stats();
    } catch (const Error& e) {
      throw StatusError(Status::RuntimeRunFailed, e);
    }
    loop.rss_before_load_bytes = before;
    loop.peak_rss_load_bytes = load_peak;
  }
  finish_fingerprint(env);
  LatencyStats st = compute_stats(loop.samples_ms);

  // The batch is the first dim of the first input when that input has a batch dim at all
  // (rank >= 2); a vector input of shape (10,) is one sample of 10 features.
  int64_t batch = 1;
  std::vector<int64_t> first_shape;
  if (!build.inputs.empty()) {
    first_shape = build.inputs.front().shape;
  } else if (build.model && !build.model->inputs.empty()) {
    const json& in = build.model->inputs.front();
    if (in.contains("shape") && in["shape"].is_array()) {
      for (const auto& d : in["shape"]) first_shape.push_back(d.get<int64_t>());
    }
  }
  if (first_shape.size() >= 2 && first_shape.front() > 0) batch = first_shape.front();
  const double throughput = st.mean_ms > 0 ? static_cast<double>(batch) * 1000.0 / st.mean_ms : 0;

  // Trust: harness overhead, noise, environment.
  std::vector<std::string> flags = env.warnings;
  const double overhead_fraction = st.median_ms > 0 ? loop.overhead_median_ms / st.median_ms : 0;
  if (overhead_fraction > 0.01) {
    flags.push_back(fmt::format("harness overhead {:.2f}% of the median (> 1%): {} ms per call",
                                overhead_fraction * 100, format_latency(loop.overhead_median_ms)));
  }
  const double ci_half_pct =
      st.median_ms > 0 ? (st.median_ci_high_ms - st.median_ci_low_ms) / 2 / st.median_ms * 100 : 0;
  if (ci_half_pct > 3.0) {
    flags.push_back(fmt::format("noisy: the median's 95% CI is +-{:.1f}% (> +-3%)", ci_half_pct));
  }
  if (!loop.warmup_steady) {
    flags.push_back(fmt::format("warm-up did not reach a steady state in {} rounds ({} calls)",
                                loop.warmup_rounds, loop.warmup_iterations));
  }

  Measurement m{loop, st, env, batch, throughput, overhead_fraction, flags, live, session_stats};
  record_measurement(build, setup, m);

  // Correctness against the PyTorch outputs saved at export.
  const Judgement judged = judge_outputs(build, outputs, setup.tolerance);
  const std::string& correctness = judged.line;

  log += fmt::format(
      "model {}\nruntime {} {} on {} ({} threads{})\ninputs: {}\ncold {} ms, warm-up {} "
      "iterations in {} rounds ({}), {} timed iterations, stop: {}\nmedian {} ms, mean {} ms, "
      "harness overhead {} ms\npeak memory: load {} B, run {} B\ncorrectness: {}\n",
      build.stats.text("benchmarked_model", "?"), runtime->display_name(), setup.runtime_version,
      cpu.model, threads,
      ro.cpus.empty() ? "" : fmt::format(", pinned to {}", fmt::join(ro.cpus, ",")),
      build.stats.text("input_source", live ? "captured from the script" : "?"), loop.cold_ms,
      loop.warmup_iterations, loop.warmup_rounds, loop.warmup_steady ? "steady" : "not steady",
      st.iterations, loop.stop_reason, st.median_ms, st.mean_ms, loop.overhead_median_ms,
      loop.peak_rss_load_bytes, loop.peak_rss_run_bytes, correctness);
  for (const auto& [key, value] : session_stats.items()) log += key + ": " + value.dump() + "\n";
  for (const std::string& f : flags) log += "warning: " + f + "\n";

  ModelBlock& b = build.block;
  b.status = fmt::format("Successfully benchmarked on {} ({} v{})", cpu.model, runtime_name,
                         setup.runtime_version);
  b.status_detail = result_block_lines(build.stats.fields(), correctness, flags);
  if (judged.mismatch) {
    throw Error(ErrorKind::NumericMismatch,
                fmt::format("{} outputs differ from PyTorch's: {}", runtime_name, correctness));
  }
}

}  // namespace turnkey::engine_internal
