// ONNX model reading and model facts (src/onnx): load_facts (parse, checker, strict shape
// inference, parameter counts) and what the engine derives from the facts of a hostile file
// (shapes, batch shapes, generated inputs, the nondeterminism scan). The model lies in a folder
// with a small external-data file beside it (data.bin) and a sub-folder, so that external-data
// locations resolve to something.
#include <numeric>

#include "fuzz_support.h"
#include "turnkey/common/error.h"
#include "turnkey/onnx/model_facts.h"
#include "turnkey/onnx/nondeterminism.h"

namespace fs = std::filesystem;
using namespace turnkey;

namespace {

// Generated inputs of a hostile model may be as large as its dims say (up to kMaxInputBytes,
// a real limit): the fuzzer generates them only when they are small.
bool small_inputs(const std::vector<std::vector<int64_t>>& shapes) {
  int64_t total = 0;
  for (const auto& s : shapes) {
    int64_t n = 1;
    for (int64_t d : s) {
      if (d > (int64_t{1} << 20) || (d > 0 && n > (int64_t{1} << 20) / d)) return false;
      n *= d;
    }
    total += n;
    if (total > (int64_t{1} << 20)) return false;
  }
  return true;
}

void derived_facts(const onnx_model::ModelFacts& facts) {
  std::string note;
  const auto shapes = onnx_model::resolve_input_shapes(facts, {}, &note);
  try {
    onnx_model::batch_input_shapes(facts, {}, 4);
  } catch (const Error&) {
  }
  if (!small_inputs(shapes)) return;
  const auto inputs = onnx_model::generate_inputs(facts, shapes);
  onnx_model::nondeterministic_operators(facts, inputs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool once = [] {
    fuzz::write_scratch("model/data.bin", std::string(256, '\x01'));
    fuzz::write_scratch("model/sub/data.bin", std::string(64, '\x02'));
    return true;
  }();
  (void)once;
  const fs::path model = fuzz::write_scratch("model/m.onnx", fuzz::as_view(data, size));
  try {
    onnx_model::external_data_files(model);
  } catch (const Error&) {
  }
  try {
    derived_facts(onnx_model::load_facts(model));
  } catch (const Error&) {
  }
  return 0;
}
