// The flags of the tools users come from (docs/coming_from.md's table), so that a habit gets a
// hint naming turnkey's flag instead of "unknown option" (or, for benchmark_app's -hint, help:
// CLI11 reads it as -h).
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "cli_args.h"

namespace turnkey::cli {

namespace {

struct PeerFlag {
  const char* flag;   // as the peer spells it (trtexec's take =value)
  const char* tool;   // the peer's name
  const char* means;  // what it does there
  const char* ours;   // turnkey's way
};

// One row per flag; docs/coming_from.md is the table users read.
constexpr PeerFlag kPeerFlags[] = {
    {"-niter", "benchmark_app", "calls to time", "--iterations N"},
    {"-nireq", "benchmark_app", "requests in flight", "--concurrency N"},
    {"-nstreams", "benchmark_app", "streams", "--concurrency N"},
    {"-hint", "benchmark_app", "a performance hint",
     "--concurrency N (throughput) or nothing (latency)"},
    {"-nthreads", "benchmark_app", "threads", "--threads N"},
    {"-api", "benchmark_app", "sync or async calls", "--concurrency N"},
    {"-pin", "benchmark_app", "CPU pinning", "--pin 0-1"},
    {"-shape", "benchmark_app", "input shapes", "--input-shapes name:1x3x224x224"},
    {"-data_shape", "benchmark_app", "input shapes", "--input-shapes name:1x3x224x224"},
    {"-infer_precision", "benchmark_app", "the precision", "--sequence optimize-fp16"},
    {"-report_type", "benchmark_app", "a report", "--profile, or turnkey report"},
    {"-pc", "benchmark_app", "per-layer counters", "--profile"},
    {"-json_stats", "benchmark_app", "JSON statistics", "--json"},
    {"-report_folder", "benchmark_app", "the report folder", "turnkey report -r DIR"},
    {"-m", "benchmark_app/onnxruntime_perf_test", "the model or the test mode",
     "the model as an input (turnkey model.onnx), --iterations N or --duration S"},
    {"-t", "benchmark_app/onnxruntime_perf_test", "seconds to run", "--duration S"},
    {"-b", "benchmark_app", "the batch size", "--batch-sizes N"},
    {"-r", "onnxruntime_perf_test", "repetitions", "--iterations N"},
    {"-x", "onnxruntime_perf_test", "intra-op threads", "--threads N"},
    {"-y", "onnxruntime_perf_test", "inter-op threads", "--rt-args inter_op_threads=N"},
    {"-P", "onnxruntime_perf_test", "the parallel executor", "--rt-args execution_mode=parallel"},
    {"-o", "onnxruntime_perf_test", "the optimization level",
     "--rt-args graph_optimization_level=basic (or the optimize-ort tool)"},
    {"-e", "onnxruntime_perf_test", "the execution provider", "--runtime ort --device x86"},
    {"-c", "onnxruntime_perf_test", "requests in flight", "--concurrency N"},
    {"-p", "onnxruntime_perf_test", "a profile", "--profile"},
    {"-f", "onnxruntime_perf_test", "free dimensions", "--input-shapes name:1x10"},
    {"-u", "onnxruntime_perf_test", "the optimized model's path", "the optimize-ort tool"},
    {"--onnx", "trtexec", "the model", "the model as an input (turnkey model.onnx)"},
    {"--shapes", "trtexec", "input shapes", "--input-shapes name:1x3x224x224"},
    {"--warmUp", "trtexec", "warm-up milliseconds", "--warmup N (calls; then until steady)"},
    {"--streams", "trtexec", "streams", "--concurrency N"},
    {"--loadInputs", "trtexec", "input data", "--input-data DIR or data.npz"},
    {"--dumpProfile", "trtexec", "a profile", "--profile"},
    {"--separateProfileRun", "trtexec", "a separate profiled run", "--profile (always separate)"},
    {"--exportProfile", "trtexec", "a profile file",
     "--profile (the file is kept in the build dir)"},
    {"--exportTimes", "trtexec", "per-call times", "the samples file in the build dir, or --json"},
    {"--exportOutput", "trtexec", "outputs", "--json"},
    {"--percentile", "trtexec", "a percentile", "nothing: p90, p95 and p99 are always reported"},
    {"--fp16", "trtexec", "float16", "--sequence optimize-fp16"},
    {"--avgRuns", "trtexec", "averaging", "nothing: the median and its 95% CI are always reported"},
};

// Whether `app` or one of its subcommands (`cache report -r`) defines `key`.
bool defines(const CLI::App& app, const std::string& key) {
  if (app.get_option_no_throw(key) != nullptr) return true;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (defines(*sub, key)) return true;
  }
  return false;
}

}  // namespace

std::string peer_flag_hint(const CLI::App& app, const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-') return "";
  const std::string key = arg.substr(0, arg.find('='));
  if (defines(app, key)) return "";  // turnkey's own
  for (const PeerFlag& p : kPeerFlags) {
    if (key != p.flag) continue;
    return fmt::format(
        "unknown option '{}': that is {}'s flag for {}; turnkey's: {} "
        "(docs/coming_from.md)",
        key, p.tool, p.means, p.ours);
  }
  return "";
}

void check_peer_flags(const CLI::App& app, const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return;
    // What follows a prefix subcommand (`cache -d DIR report -r OUT`) is read
    // by the command it forwards to, which checks them itself.
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      if (sub->get_name() == a && sub->get_prefix_command()) return;
    }
    const std::string hint = peer_flag_hint(app, a);
    if (!hint.empty()) throw UsageError(hint);
  }
}

}  // namespace turnkey::cli
