// The tool grammar, and what both grammars share: inputs that look like mistyped tools and the
// check of a whole request against the tool table.
#include "turnkey/cli/grammar.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "cli_args.h"
#include "grammar_internal.h"

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

void check_request(const RunRequest& request) {
  for (const ToolCall& call : request.sequence) {
    if (const ToolSpec* spec = find_tool(call.name)) check_tool_options(*spec, call.options, "");
  }
  const GlobalOptions& g = request.global;
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
