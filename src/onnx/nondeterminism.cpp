// Operators that draw random numbers (nondeterminism.h).
#include "turnkey/onnx/nondeterminism.h"

#include <map>
#include <set>

#include "proto_read.h"

namespace turnkey::onnx_model {

using namespace detail;

namespace {

// Default-domain operators whose every output is random (ONNX operator documentation).
constexpr const char* kRandomOps[] = {"Bernoulli",        "Multinomial",   "RandomNormal",
                                      "RandomNormalLike", "RandomUniform", "RandomUniformLike"};

// A bool tensor's first element; nullopt-like -1 when it is not a one-element bool.
int bool_value(const onnx::TensorProto& t) {
  if (t.data_type() != onnx::TensorProto::BOOL) return -1;
  if (!t.raw_data().empty()) return t.raw_data()[0] != 0;
  if (t.int32_data_size() > 0) return t.int32_data(0) != 0;
  return -1;
}

// Where a Dropout's training_mode can come from: values known in this graph (initializers,
// Constant outputs, fed inputs), by name.
struct KnownBools {
  std::map<std::string, int> values;
};

bool dropout_trains(const onnx::NodeProto& node, const KnownBools& known) {
  if (node.input_size() < 3 || node.input(2).empty()) return false;  // inference mode
  auto it = known.values.find(node.input(2));
  return it == known.values.end() || it->second != 0;  // computed or unreadable: may train
}

void scan_graph(const onnx::GraphProto& g, KnownBools known, std::set<std::string>& found) {
  for (const auto& init : g.initializer()) known.values[init.name()] = bool_value(init);
  for (const auto& node : g.node()) {
    if (node.op_type() == "Constant" && node.output_size() == 1) {
      for (const auto& attr : node.attribute()) {
        if (attr.name() == "value" && attr.has_t()) {
          known.values[node.output(0)] = bool_value(attr.t());
        }
      }
    }
  }
  for (const auto& node : g.node()) {
    if (is_default_domain(node.domain()) && node.op_type() == "Dropout" &&
        dropout_trains(node, known)) {
      found.insert("Dropout (training mode)");
    }
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) scan_graph(attr.g(), known, found);
      for (const auto& sub : attr.graphs()) scan_graph(sub, known, found);
    }
  }
}

}  // namespace

std::vector<std::string> nondeterministic_operators(const ModelFacts& facts,
                                                    const std::vector<HostTensor>& inputs) {
  std::set<std::string> found;
  for (const char* op : kRandomOps) {
    if (facts.op_histogram.count(op)) found.insert(op);
  }
  if (facts.op_histogram.count("Dropout")) {
    int64_t size_bytes = 0;
    Fd fd = open_regular_file(facts.path, &size_bytes);
    onnx::ModelProto model;
    Sha256 unused_hash;
    if (!parse_file(fd.get(), &model, &unused_hash, size_bytes)) {
      throw invalid("not an ONNX model (protobuf parse failed)");
    }
    KnownBools known;
    for (const HostTensor& t : inputs) {
      if (t.is_tensor() && t.dtype == DType::Bool && t.element_count() == 1 && !t.data.empty()) {
        known.values[t.name] = t.data[0] != std::byte{0};
      }
    }
    scan_graph(model.graph(), known, found);
  }
  return {found.begin(), found.end()};
}

}  // namespace turnkey::onnx_model
