// Internal to the engine: the result block of each model as the reference tool printed it (the
// fields of a discovered model, of an ONNX file, of a continued build) and the one header before
// the first block. Not thread-safe: one printer per run.
#pragma once

#include <string>
#include <vector>

#include "turnkey/discovery/python_side.h"
#include "turnkey/console/report_printer.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey::engine_internal {

// Model Type, Class, Location, Parameters; per signature Input Shape and Hash.
ModelBlock discovered_model_block(const DiscoveredModel& model);

// 'x': (1, 16), 'mask': (batch, 16): the model's declared shapes
std::string describe_onnx_inputs(const onnx_model::ModelFacts& facts);

// The block of an ONNX file given as input (title: the file's stem).
ModelBlock onnx_file_block(const std::string& title, const onnx_model::ModelFacts& facts,
                           const std::string& build_dir);

class ResultPrinter {
 public:
  // The reference header, once, right before the first result block (so a script's own output,
  // which comes first, is not split from its results by it).
  void print(const std::string& name, const std::vector<ModelBlock>& blocks,
             const ScriptFooter& footer = {});

 private:
  bool header_printed_ = false;
};

}  // namespace turnkey::engine_internal
