// One run of a model on ONNX Runtime through turnkey's ort runtime, for unit tests that check
// what a rewritten model computes (test_sweeps.cpp, test_new_opsets.cpp). Needs tk_runtime.
#pragma once

#include <filesystem>
#include <vector>

#include "turnkey/common/tensor.h"
#include "turnkey/onnx/model_facts.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey::test {

// The model's outputs after one call on deterministic inputs at `shapes` (throws what the run
// throws).
inline std::vector<HostTensor> run_ort(const std::filesystem::path& model,
                                       const onnx_model::InputShapes& shapes = {}) {
  const auto facts = onnx_model::load_facts(model);
  const auto inputs =
      onnx_model::generate_inputs(facts, onnx_model::resolve_input_shapes(facts, shapes));
  RuntimeOptions ro;
  ro.threads = 1;
  auto session = find_runtime("ort")->load(model, inputs, ro);
  session->run();
  return session->outputs();
}

}  // namespace turnkey::test
