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

// Reads PATH for the model `facts` describes:
//  - a folder in the ONNX backend-test layout: input_0.pb, input_1.pb, ... (serialized
//    TensorProto, one per graph input, in graph-input order) and optionally output_0.pb, ...
//    (one per graph output: the expected outputs);
//  - an .npz file (numpy.savez): one array per graph input, named after it; arrays named after
//    graph outputs are the expected outputs.
// Each input is checked against the graph before any work: its dtype, its rank and every fixed dim
// (symbolic dims take the data's size), and `shapes` (--input-shapes, when given) for the whole
// shape. Throws Error(InvalidInput) with one line naming the input (no path: the caller names
// it): "input 'x': the model takes float32 1x3x224x224, the data holds float64 1x3x224x224",
// "no input_1.pb for input 'mask' (the model has 2 inputs)", "member 'x.npy': CRC-32 mismatch".
InputData read_input_data(const std::filesystem::path& path, const ModelFacts& facts,
                          const InputShapes& shapes = {});

}  // namespace turnkey::onnx_model
