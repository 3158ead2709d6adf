// The tool grammar, and what both grammars share: inputs that look like mistyped tools and the
// check of a whole request against the tool table.
#include "turnkey/cli/grammar.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "cli_args.h"
#include "grammar_internal.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/machine/system_info.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

namespace cli {

void check_inputs_for_tool_typos(const std::vector<std::string>& inputs) {
  for (const std::string& in : inputs) {
    if (in.find_first_of("./*?:") != std::string::npos) continue;
    std::error_code ec;
    if (fs::exists(in, ec)) continue;
    const std::string c = closest_name(in, all_tool_names());
    if (!c.empty()) {
      throw UsageError(fmt::format("unknown tool '{}' (did you mean '{}'?)", in, c));
    }
  }
}

void check_tool_options(const ToolSpec& spec, const json& given, const std::string& context) {
  try {
    validate_tool_options(spec, given);
  } catch (const Error& e) {
    throw UsageError(context.empty() ? std::string(e.what()) : context + ": " + e.what());
  }
}

namespace {

// benchmark_app's -d is the device: a -d naming a device and no folder is that habit.
constexpr const char* kPeerDevices[] = {"CPU", "GPU", "NPU", "AUTO", "cpu", "gpu", "cuda"};

// The cache folder must exist as a writable folder or be creatable (its nearest existing
// ancestor a writable folder), checked before any input runs; nothing is created here.
void check_cache_dir(const std::string& flag_value) {
  const fs::path dir = resolve_cache_dir(flag_value);
  const std::string named = flag_value.empty() ? "cache folder " + dir.string()
                                               : "-d/--cache-dir " + flag_value;
  std::error_code ec;
  if (!flag_value.empty() && !fs::exists(dir, ec)) {
    for (const char* d : kPeerDevices) {
      if (flag_value != d) continue;
      throw UsageError(fmt::format(
          "{}: no such folder; -d is turnkey's cache folder (benchmark_app's -d is the device: "
          "turnkey's is --device x86)",
          named));
    }
  }
  fs::path probe = fs::absolute(dir, ec);
  while (!probe.empty() && !fs::exists(probe, ec)) {
    if (probe == probe.parent_path()) break;
    probe = probe.parent_path();
  }
  if (!fs::is_directory(probe, ec)) {
    throw UsageError(fmt::format("{}: cannot be a folder: {} is a file", named, probe.string()));
  }
  if (::access(probe.c_str(), W_OK | X_OK) != 0) {
    throw UsageError(fmt::format("{}: {} is not writable: {}", named, probe.string(),
                                 std::strerror(errno)));
  }
}

// More threads than this many per usable CPU only oversubscribe the machine (a run of
// --threads 999 took 23 s at load 220): refused when the command line is read.
constexpr int kMaxThreadsPerCpu = 4;

void check_threads(const ToolCall& call, bool elsewhere) {
  if (elsewhere || call.name != "benchmark" || !call.options.contains("threads")) return;
  const json& t = call.options["threads"];
  if (!t.is_number_integer()) return;
  const auto cpus = static_cast<int64_t>(std::max<size_t>(1, allowed_cpus().size()));
  if (t.get<int64_t>() > kMaxThreadsPerCpu * cpus) {
    throw UsageError(fmt::format(
        "--threads {}: more than {} per CPU this process may use ({} CPUs: at most {}; 0 picks "
        "the physical cores)",
        t.get<int64_t>(), kMaxThreadsPerCpu, cpus, kMaxThreadsPerCpu * cpus));
  }
}

}  // namespace

void check_request(const RunRequest& request) {
  const GlobalOptions& g = request.global;
  for (const ToolCall& call : request.sequence) {
    if (const ToolSpec* spec = find_tool(call.name)) check_tool_options(*spec, call.options, "");
    // Under Slurm the benchmark runs on another node, whose CPUs are not these.
    check_threads(call, g.use_slurm);
  }
  check_cache_dir(g.cache_dir);
  if (g.use_slurm && g.process_isolation) {
    throw UsageError(
        "--process-isolation and --use-slurm exclude each other (each Slurm job is already "
        "isolated)");
  }
}

}  // namespace cli

bool is_tool_grammar(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "-i" || a == "--input-files" || a.rfind("--input-files=", 0) == 0;
  });
}

std::optional<RunRequest> parse_tool_grammar(const std::vector<std::string>& args,
                                             const std::string& command_line) {
  // Split at tool names: [global...] TOOL [opts...] TOOL [opts...] ...
  std::vector<std::vector<std::string>> segments(1);
  std::vector<std::string> tools;
  for (const std::string& a : args) {
    const ToolSpec* s = find_tool(a);
    if (s && s->group != ToolGroup::Management) {
      tools.push_back(a);
      segments.emplace_back();
    } else {
      segments.back().push_back(a);
    }
  }
  RunRequest request;
  request.command_line = command_line;
  CLI::App global("turnkey global options", "turnkey");
  cli::add_tool_grammar_options(global, request.global);
  cli::use_grouped_help(global);
  if (!cli::parse_args(global, segments[0], "turnkey")) return std::nullopt;
  cli::check_inputs_for_tool_typos(request.global.inputs);
  if (tools.empty()) {
    if (request.global.inputs.empty()) {
      throw UsageError(
          "no tool given: name a first tool such as discover or load-onnx (see turnkey -h)");
    }
    // `turnkey -i FILES` alone (the tool-sequence guide's examples): what `turnkey FILES` runs.
    request.sequence = cli::default_sequence();
    cli::check_request(request);
    return request;
  }
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolSpec* spec = find_tool(tools[i]);
    CLI::App app(spec->help, "turnkey " + spec->name);
    cli::BoundTool bound;
    bound.bind(app, *spec, cli::asks_for_help(segments[i + 1]));
    if (!cli::parse_args(app, segments[i + 1], spec->name)) return std::nullopt;
    request.sequence.push_back({spec->name, bound.given()});
  }
  if (request.global.inputs.empty()) {
    throw UsageError("no inputs: give them with -i/--input-files");
  }
  try {
    check_sequence(tools);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  cli::check_request(request);
  return request;
}

}  // namespace turnkey
