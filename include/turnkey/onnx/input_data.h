// --input-data: real inputs for an ONNX model instead of generated ones (docs/measurement.md),
// with the outputs they are expected to give when the data has them. Pure functions of the files
// and facts given; thread-safe.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "turnkey/common/tensor.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey::onnx_model {

struct InputData {
  std::vector<HostTensor> inputs;            // graph-input order, named as the graph's inputs
  std::vector<HostTensor> expected_outputs;  // graph-output order; empty when the data has none
  std::string description;  // "input_0.pb ... in DIR", "arrays x, mask of FILE.npz"
};

// One value file of a backend test, read as what `want` declares: a TensorProto for a tensor, a
// SequenceProto for a sequence, an OptionalProto for an optional (never one read as another:
// a sequence's bytes parsed as a tensor give nonsense dims). Throws Error(InvalidInput) with a
// bare reason for a parse failure, an element type turnkey has no DType for, data that does not
// match its dims, a sequence of maps.
HostTensor read_value_pb(const std::filesystem::path& path, const ValueInfo& want);

// Whether `value` is what `want` declares: the same layers (sequence, optional), the element type,
// the rank and every fixed dim of each tensor in it (symbolic dims take any size).
bool value_fits(const HostTensor& value, const ValueInfo& want);

// Reads PATH for the model `facts` describes:
//  - a folder in the ONNX backend-test layout: input_0.pb, input_1.pb, ... (serialized
//    TensorProto, one per graph input, in graph-input order) and optionally output_0.pb, ...
//    (one per graph output: the expected outputs). A sequence input or output is a SequenceProto
//    file, an optional one an OptionalProto file;
//  - an .npz file (numpy.savez): one array per graph input, named after it; arrays named after
//    graph outputs are the expected outputs. A sequence `x` is arrays `x[0]`, `x[1]`, ... (none:
//    an empty sequence); an optional `x` is the array (or arrays) of its value, or none when it
//    is empty. Strings are NumPy's fixed-width 'U' or 'S' arrays; bfloat16 comes as the uint16 of
//    its bits (NumPy has no bfloat16).
// Each input is checked against the graph before any work: its dtype, its rank and every fixed dim
// (symbolic dims take the data's size), and `shapes` (--input-shapes, when given) for the whole
// shape. Throws Error(InvalidInput) with one line naming the input (no path: the caller names
// it): "input 'x': the model takes float32 1x3x224x224, the data holds float64 1x3x224x224",
// "no input_1.pb for input 'mask' (the model has 2 inputs)", "member 'x.npy': CRC-32 mismatch".
InputData read_input_data(const std::filesystem::path& path, const ModelFacts& facts,
                          const InputShapes& shapes = {});

}  // namespace turnkey::onnx_model
