// The classic grammar of the reference tool: `turnkey [benchmark] INPUT... [options]`, mapped
// onto a tool sequence (auto first tool, a named or file sequence, then benchmark).
#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "cli_args.h"
#include "grammar_internal.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/files.h"
#include "turnkey/discovery/python_stage.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// One item of a sequence file: a tool name (or the reference tool's stage name), or a one-key
// map {tool: {option: value}}. nullopt for an item that names no tool (set_success).
std::optional<ToolCall> sequence_item(const json& item, const std::string& context) {
  ToolCall call;
  if (item.is_string()) {
    call.name = item.get<std::string>();
  } else if (item.is_object() && item.size() == 1) {
    call.name = item.begin().key();
    if (item.begin().value().is_object()) {
      call.options = item.begin().value();
    } else if (!item.begin().value().is_null()) {
      throw UsageError(fmt::format("{}: options of {} must be a map", context, call.name));
    }
  } else if (item.is_object() && item.contains("name") && item["name"].is_string()) {
    // What the Python side describes: {"name": tool, "options": {...}}.
    call.name = item["name"].get<std::string>();
    if (item.contains("options") && item["options"].is_object()) call.options = item["options"];
  } else {
    throw UsageError(fmt::format("{}: each item is a tool name or {{tool: {{option: value}}}}",
                                 context));
  }
  for (const auto& [alias, tool] : tool_aliases()) {
    if (call.name != alias) continue;
    if (tool.empty()) return std::nullopt;
    call.name = tool;
  }
  return call;
}

// A YAML list of tools, or a Python file defining a Sequence (read by the Python side:
// python/turnkeyml/build, docs/sequences.md). A leading first tool (load-onnx, discover) is
// allowed and left out: the classic grammar picks the first tool by the input's kind.
std::vector<ToolCall> read_sequence_file(const std::string& path, const std::string& python) {
  const std::string context = "--sequence-file " + path;
  json doc;
  try {
    if (fs::path(path).extension() == ".py") {
      doc = describe_python_sequence(path, python);
    } else {
      doc = json_from_yaml(read_file(path));
    }
  } catch (const Error& e) {
    // Name the file once: a read error already starts with its path.
    std::string reason = e.what();
    if (reason.rfind(path + ": ", 0) == 0) reason.erase(0, path.size() + 2);
    throw UsageError(fmt::format("{}: {}", context, reason));
  }
  if (!doc.is_array() || doc.empty()) {
    throw UsageError(fmt::format("{}: expected a YAML list of tools", context));
  }
  std::vector<ToolCall> calls;
  for (const json& item : doc) {
    std::optional<ToolCall> call = sequence_item(item, context);
    if (!call) continue;
    const ToolSpec* spec = find_tool(call->name);
    if (spec && spec->group == ToolGroup::First && calls.empty() && call->options.empty() &&
        call->name != "load-build") {
      continue;
    }
    if (!spec || spec->group != ToolGroup::Sequence) {
      std::vector<std::string> names;
      for (const ToolSpec& s : tool_specs()) {
        if (s.group == ToolGroup::Sequence) names.push_back(s.name);
      }
      for (const auto& [alias, tool] : tool_aliases()) names.push_back(alias);
      const std::string c = closest_name(call->name, names);
      throw UsageError(fmt::format(
          "{}: '{}' is not a sequence tool{}", context, call->name,
          spec && spec->group == ToolGroup::First
              ? " (the first tool comes from the input: load-onnx for .onnx, discover for .py; "
                "a sequence file may start with it)"
              : c.empty() ? "" : fmt::format(" (did you mean '{}'?)", c)));
    }
    cli::check_tool_options(*spec, call->options, context);
    calls.push_back(std::move(*call));
  }
  if (calls.empty()) throw UsageError(fmt::format("{}: names no tool to run", context));
  return calls;
}

bool is_live_runtime(const json& benchmark_options) {
  if (!benchmark_options.contains("runtime") || !benchmark_options["runtime"].is_string()) {
    return false;
  }
  const Runtime* r = find_runtime(benchmark_options["runtime"].get<std::string>());
  return r && r->needs_live_model();
}

}  // namespace

namespace cli {

std::vector<ToolCall> default_sequence() {
  std::vector<ToolCall> calls = {{"auto", json::object()},
                                 {"discover", json::object()},
                                 {"load-onnx", json::object()}};
  for (const auto& [n, tools] : named_sequences()) {
    if (n != "onnx-fp32") continue;
    for (const std::string& t : tools) calls.push_back({t, json::object()});
  }
  if (calls.back().name != "benchmark") calls.push_back({"benchmark", json::object()});
  return calls;
}

}  // namespace cli

namespace {

// The build tools of a named sequence (default onnx-fp32).
std::vector<ToolCall> named_sequence(const std::string& given) {
  const std::string name = given.empty() ? "onnx-fp32" : given;
  std::vector<std::string> names;
  for (const auto& [n, tools] : named_sequences()) {
    if (n == name) {
      std::vector<ToolCall> calls;
      for (const std::string& t : tools) calls.push_back({t, json::object()});
      return calls;
    }
    names.push_back(n);
  }
  const std::string c = closest_name(name, names);
  throw UsageError(fmt::format("--sequence {}: unknown (known: {}){}", name,
                               fmt::join(names, ", "),
                               c.empty() ? "" : fmt::format("; did you mean '{}'?", c)));
}

}  // namespace

namespace cli {

void add_classic_options(CLI::App& app, ClassicOptions& o, bool with_choices) {
  using namespace help_group;
  app.add_option("inputs", o.global.inputs,
                 "Scripts (script.py::HASH selects models), ONNX files, build states, globs, "
                 ".txt lists")
      ->group(kInputs);
  app.add_option("-s,--search-dir", o.global.search_dir, "Folder the inputs are in")
      ->group(kInputs);
  app.add_flag("--all", o.all, "Every .py script in --search-dir")->group(kInputs);
  add_global_options(app, o.global);
  o.load.bind(app, *find_tool("load-onnx"), with_choices, {}, kInputs);
  app.add_flag("--analyze-only", o.analyze_only,
               "Discover and list the models; no build, no benchmark")
      ->group(kDiscovery);
  // --batch-sizes belongs to both first tools: bound once (load-onnx's), given to both.
  o.discover.bind(app, *find_tool("discover"), with_choices, {"--batch-sizes"}, kDiscovery);
  std::vector<std::string> sequence_names;
  for (const auto& [name, tools] : named_sequences()) sequence_names.push_back(name);
  app.add_option("--sequence", o.sequence_name,
                 fmt::format("Named build sequence: {} (default: onnx-fp32)",
                             fmt::join(sequence_names, ", ")))
      ->group(kBuild);
  app.add_option("--sequence-file", o.sequence_file,
                 "A Python file defining a Sequence (custom stages too: docs/sequences.md), or a "
                 "YAML list of tools with options, e.g. [export-pytorch, {optimize-ort: {level: "
                 "extended}}]")
      ->group(kBuild);
  app.add_flag("--build-only", o.build_only, "Discover and build the models; no benchmark")
      ->group(kBuild);
  o.exporter.bind(app, *find_tool("export-pytorch"), with_choices, {"--opset"}, kBuild);
  o.opset_opt = app.add_option("--onnx-opset,--opset", o.opset, "ONNX opset for export")
                    ->group(kBuild);
  o.bench.bind(app, *find_tool("benchmark"), with_choices, {}, kBenchmark);
  use_grouped_help(app);
}

}  // namespace cli

std::optional<RunRequest> parse_classic_grammar(std::vector<std::string> args,
                                                const std::string& command_line) {
  return parse_classic_grammar_as("turnkey", std::move(args), command_line);
}

namespace {

// The sequence's tools after the first tools (export options applied, benchmark added unless
// --build-only), checked as for a script (discover first), the sequence also holding for ONNX
// inputs, which skip the PyTorch-only tools. A sequence without export-pytorch (optimize-ort
// alone) is one for ONNX inputs: valid when it holds after either first tool; a script given to
// it fails at its build, with one line.
void add_build_tools(RunRequest& request, std::vector<ToolCall>& build_tools,
                     const json& export_options, const json& bench_options, bool build_only) {
  for (ToolCall& call : build_tools) {
    if (call.name == "export-pytorch") call.options.update(export_options);
    if (call.name == "benchmark" && build_only) continue;
    request.sequence.push_back(call);
  }
  const bool has_benchmark = std::any_of(build_tools.begin(), build_tools.end(),
                                         [](const ToolCall& c) { return c.name == "benchmark"; });
  if (!build_only && !has_benchmark) request.sequence.push_back({"benchmark", bench_options});
  std::vector<std::string> names = {"discover"};
  for (size_t i = 3; i < request.sequence.size(); ++i) names.push_back(request.sequence[i].name);
  try {
    check_sequence(names);
  } catch (const Error& e) {
    names.front() = "load-onnx";
    try {
      check_sequence(names);
    } catch (const Error&) {
      throw UsageError(e.what());
    }
  }
}

}  // namespace

std::optional<RunRequest> parse_classic_grammar_as(const std::string& program,
                                                   std::vector<std::string> args,
                                                   const std::string& command_line) {
  if (!args.empty() && args.front() == "benchmark") args.erase(args.begin());
  CLI::App app("Benchmark the models in scripts and ONNX files (the classic grammar)",
               program + " benchmark");
  app.footer(fmt::format("`{} INPUT...` is short for `{} benchmark INPUT...`.", program, program));
  cli::ClassicOptions o;
  cli::add_classic_options(app, o, cli::asks_for_help(args));
  if (!cli::parse_args(app, args, "")) return std::nullopt;
  RunRequest request;
  request.command_line = command_line;
  request.global = o.global;
  const bool all = o.all, analyze_only = o.analyze_only, build_only = o.build_only;
  const std::string& sequence_name = o.sequence_name;
  const std::string& sequence_file = o.sequence_file;
  const cli::BoundTool &discover = o.discover, &load = o.load, &exporter = o.exporter,
                       &bench = o.bench;
  if (!sequence_name.empty() && !sequence_file.empty()) {
    throw UsageError("--sequence and --sequence-file exclude each other");
  }
  if (analyze_only && build_only) {
    throw UsageError("--analyze-only and --build-only exclude each other");
  }
  if (all) {
    const std::string dir =
        request.global.search_dir.empty() ? "." : request.global.search_dir;
    request.global.inputs.push_back((fs::path(dir) / "*.py").string());
    request.global.search_dir.clear();
  }
  if (request.global.inputs.empty()) {
    throw UsageError(fmt::format("no inputs given (see {} -h)", program));
  }
  cli::check_inputs_for_tool_typos(request.global.inputs);
  json export_options = exporter.given();
  if (o.opset_opt->count()) export_options["opset"] = o.opset;
  // Every option given is checked, also those of tools this run leaves out (--analyze-only,
  // --build-only): a bad value is a mistake whatever else the command line says.
  cli::check_tool_options(*find_tool("export-pytorch"), export_options, "");
  cli::check_tool_options(*find_tool("benchmark"), bench.given(), "");
  request.sequence.push_back({"auto", json::object()});
  json discover_options = discover.given();
  if (load.given().contains("batch_sizes")) {
    discover_options["batch_sizes"] = load.given()["batch_sizes"];
  }
  request.sequence.push_back({"discover", discover_options});
  request.sequence.push_back({"load-onnx", load.given()});
  std::vector<ToolCall> build_tools;
  if (!sequence_file.empty()) {
    build_tools = read_sequence_file(sequence_file, request.global.python);
  } else if (sequence_name.empty() && is_live_runtime(bench.given())) {
    // torch-eager, torchscript, torch-compiled start from the live model: no ONNX export
    // unless a sequence asks for one (the reference outputs come from the Python side).
  } else {
    build_tools = named_sequence(sequence_name);
  }
  if (!analyze_only) {
    add_build_tools(request, build_tools, export_options, bench.given(), build_only);
  }
  cli::check_request(request);
  return request;
}

}  // namespace turnkey
