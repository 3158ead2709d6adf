// Internal to tk_transforms: reading and writing ONNX models with the ONNX library (external data
// included), output-location checks, and the checks every stage runs on what it writes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>

#include "turnkey/common/error.h"
#include "turnkey/onnx/onnx_proto.h"

namespace turnkey::transforms::detail {

using turnkey::first_line;

struct LoadedModel {
  onnx::ModelProto model;
  int64_t size_bytes = 0;          // model file + external data files it references
  bool had_external_data = false;  // some tensor was stored as external data
};

// Parses `path` (up to protobuf's 2 GB). External data must lie in files inside the model's folder
// (checked either way); with load_external_data, its bytes are moved inline (raw_data). Throws
// Error(InvalidInput) with the bare reason ("not found", "not an ONNX model (protobuf parse
// failed)", "initializer 'w': external data ...") and Error(Io) on read errors.
LoadedModel load_model(const std::filesystem::path& path, bool load_external_data);

// Copies the external data files `model` (loaded without its external data from `from_dir`)
// refers to into `to_dir` under the same relative names (in the kernel: the bytes are not read
// into memory). Lets a modified copy of a large model be written without parsing its weights.
// Copies, not hard links: ONNX's checker (1.16+) refuses external data with other hard links or
// behind a symbolic link. Throws Error(Export).
void copy_external_data(onnx::ModelProto& model, const std::filesystem::path& from_dir,
                        const std::filesystem::path& to_dir);

void check_output_location(const std::filesystem::path& input, const std::filesystem::path& output);

// Writes `model` to `output` atomically. With external_data, main-graph initializers of 1 KiB or
// more go to "<output file name>.data" beside it (offsets aligned to 4 KiB), written first.
// Returns the bytes written (model + data). Throws Error(Export).
int64_t save_model(onnx::ModelProto& model, const std::filesystem::path& output, bool external_data,
                   std::string* external_data_name);

// ONNX checker + strict shape inference on an in-memory model whose tensors are all inline.
// Throws Error(InvalidInput) "ONNX checker: ..." / "ONNX checker: shape inference: ...".
void check_model_strict(const onnx::ModelProto& model);

// Throws Error(InvalidInput) for a model with an IR version or default opset above what libonnx
// knows: its schemas cannot describe such a model's ops.
void check_not_newer_than_libonnx(const onnx::ModelProto& model);

// Replaces every call of a model-local function (ModelProto.functions, as torch's dynamo exporter
// writes them) by the function's body, in the main graph and its subgraphs, and removes the
// functions; what ONNX Runtime does when it loads the model. Returns how many functions the
// model defined. Throws Error(InvalidInput) "inlining model-local functions: ...".
int64_t inline_local_functions(onnx::ModelProto& model);

// Types of the main graph's values (inputs, initializers, outputs, value_info and what shape
// inference adds; non-strict, so values it cannot type are simply missing).
std::unordered_map<std::string, onnx::TypeProto> infer_main_graph_types(
    const onnx::ModelProto& model);

// Nodes of `graph` and of every subgraph in it.
int64_t count_nodes(const onnx::GraphProto& graph);

// Default-domain opset of the model (1 for IR < 3 models without opset_import).
int64_t default_opset(const onnx::ModelProto& model);

bool is_default_domain(const std::string& domain);

}  // namespace turnkey::transforms::detail
