// Checks both grammars share (grammar.cpp). Internal to src/cli. Each throws UsageError.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli_args.h"

#include "turnkey/catalog/request.h"
#include "turnkey/catalog/tools.h"

namespace turnkey::cli {

// Inputs that do not exist but look like a mistyped tool name.
void check_inputs_for_tool_typos(const std::vector<std::string>& inputs);

// validate_tool_options as a usage error, prefixed with `context` when not empty.
void check_tool_options(const ToolSpec& spec, const nlohmann::json& given,
                        const std::string& context);

// Every tool call's options and the global options, before anything runs.
void check_request(const RunRequest& request);

// What the classic command line binds: the global options, its own flags, and the options of the
// tools it maps onto (discover, load-onnx, export-pytorch, benchmark).
struct ClassicOptions {
  GlobalOptions global;
  bool all = false, analyze_only = false, build_only = false;
  BoundTool discover, load, exporter, bench;
  long long opset = 0;
  CLI::Option* opset_opt = nullptr;  // --onnx-opset (export-pytorch's --opset under its old name)
  std::string sequence_name, sequence_file;
};

// What `turnkey FILES` runs with no option choosing otherwise, also `turnkey -i FILES` with no tool
// (the newer documents show both): the first tool per input (auto), export to ONNX, benchmark.
std::vector<ToolCall> default_sequence();

// The classic grammar's parser, grouped for help; parse and help both build it here.
void add_classic_options(CLI::App& app, ClassicOptions& o, bool with_choices);

}  // namespace turnkey::cli
