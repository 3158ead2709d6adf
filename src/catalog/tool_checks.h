// What the tool table (tools.cpp) says about option values beyond their type: the named choices
// and the checks of single options and of options together. Each check throws
// Error(InvalidInput) naming the option and the value. Defined in tool_options.cpp.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "turnkey/catalog/request.h"

namespace turnkey::tool_checks {

std::vector<std::string> device_names();
std::vector<std::string> ort_levels();       // optimize-ort --level
std::vector<std::string> exporters();        // export-pytorch --exporter

// A runtime of the registry; a built-in name loads no plugin library (runtime_registry.cpp).
void check_runtime(const nlohmann::json& value);
void check_script_args(const nlohmann::json& value);   // splits like a shell: quotes closed
void check_build_name(const nlohmann::json& value);
void check_attach(const nlohmann::json& value);
void check_input_shapes(const nlohmann::json& value);
void check_cpu_list(const nlohmann::json& value);
void check_input_data(const nlohmann::json& value);    // a folder or an .npz file that exists
void check_runtime_args(const nlohmann::json& value);  // key=value items

// Bounds of the sweep options (far above what a machine runs, below what overflows).
inline constexpr double kMaxBatchSize = 1e6;
inline constexpr double kMaxConcurrency = 1024;

// discover: --batch-sizes and a --batch_size in --script-args exclude each other.
void check_discover_together(const nlohmann::json& options);
// benchmark: --adaptive excludes --duration; --min-iterations <= --max-iterations; --concurrency
// above 1 needs a runtime that serves concurrent requests and a stop rule other than --adaptive;
// --profile needs a runtime with a profiler, --input-data one that runs ONNX models.
void check_benchmark_together(const nlohmann::json& options);
// python-stage: --stage given and a usable name; --file, when given, a Python file that exists
// (defined in python_stage.cpp).
void check_python_stage_together(const nlohmann::json& options);

// export-pytorch's opset (--opset, else TURNKEY_ONNX_OPSET) within what the run's interpreter's
// torch.onnx writes, when a script may be exported. Defined in opset_check.cpp.
void check_export_opset(const RunRequest& request);

}  // namespace turnkey::tool_checks
