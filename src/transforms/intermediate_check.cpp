// Outputs that carry no signal, and the check model that lets a comparison use intermediate
// tensors instead (build_stages.h, docs/measurement.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compare_internal.h"
#include "model_io.h"
#include "turnkey/transforms/transforms.h"

namespace turnkey::transforms {

namespace fs = std::filesystem;

namespace {

// In order of the signal they carry: Subnormal is zero once flushed (from_host), nonzero before.
enum class Signal { Empty, Zero, Subnormal, Constant, Varies };

Signal signal_of(const HostTensor& t) {
  // A sequence or optional: the most signal any tensor in it carries.
  if (!t.is_tensor()) {
    Signal s = Signal::Empty;
    for (const HostTensor& e : t.elements) s = std::max(s, signal_of(e));
    return s;
  }
  // One element is what a reduction, an index or a loss computes: comparing it checks that
  // computation (issue 35), however constant it looks.
  if (t.element_count() == 1) return Signal::Varies;
  if (t.dtype == DType::String) {
    if (t.strings.empty()) return Signal::Empty;
    for (const std::string& v : t.strings) {
      if (v != t.strings[0]) return Signal::Varies;
    }
    return t.strings[0].empty() ? Signal::Zero : Signal::Constant;
  }
  const detail::Output o = detail::from_host(t);
  if (!o.values.empty()) {
    bool seen = false;
    double first = 0;
    for (double v : o.values) {
      if (!std::isfinite(v)) continue;
      if (!seen) {
        first = v;
        seen = true;
      } else if (v != first) {
        return Signal::Varies;
      }
    }
    if (!seen) return Signal::Empty;  // nothing finite: nothing to compare
    if (first != 0) return Signal::Constant;
    return o.flushed > 0 ? Signal::Subnormal : Signal::Zero;
  }
  const size_t n = o.elem_bytes ? o.bytes.size() / o.elem_bytes : 0;
  if (n == 0) return Signal::Empty;
  bool zero = true;
  for (size_t k = 0; k < n; ++k) {
    const char* e = o.bytes.data() + k * o.elem_bytes;
    if (std::memcmp(e, o.bytes.data(), o.elem_bytes) != 0) return Signal::Varies;
    for (size_t b = 0; b < o.elem_bytes; ++b) zero = zero && e[b] == 0;
  }
  return zero ? Signal::Zero : Signal::Constant;
}

int onnx_elem_type(DType dtype) { return dtype_onnx_type(dtype); }

}  // namespace

std::string no_signal_reason(const std::vector<HostTensor>& reference) {
  bool all_empty = true, all_zero = true, subnormal = false;
  for (const HostTensor& t : reference) {
    const Signal s = signal_of(t);
    if (s == Signal::Varies) return "";
    all_empty = all_empty && s == Signal::Empty;
    all_zero = all_zero && (s == Signal::Zero || s == Signal::Subnormal);
    subnormal = subnormal || s == Signal::Subnormal;
  }
  if (reference.empty() || all_empty) return "every output is empty";
  if (all_zero && subnormal) {
    return "every output is zero or subnormal, below its type's smallest normal number, where "
           "runtimes may flush values to zero";
  }
  if (all_zero) return "every output is all zeros";
  return "every output is empty or constant";
}

void add_graph_outputs(const fs::path& model, const fs::path& output,
                       const std::vector<std::string>& names,
                       const std::vector<DType>& fallback_types) {
  detail::LoadedModel loaded;
  try {
    // A model with external data (every model above 2 GB) is parsed as its graph only, its data
    // files copied file to file beside the copy: reading vit_h_14's 2.5 GB into memory to write
    // them again ran a worker out of its 8 GB beside the benchmark's own session.
    loaded = detail::load_model(model, /*load_external_data=*/false);
  } catch (const Error& e) {
    throw e.with_context(model.filename().string());
  }
  onnx::GraphProto* g = loaded.model.mutable_graph();
  const auto types = detail::infer_main_graph_types(loaded.model);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    bool made = false;
    for (const auto& node : g->node()) {
      for (const auto& o : node.output()) made = made || o == name;
    }
    for (const auto& in : g->input()) made = made || in.name() == name;
    if (!made) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{} has no value '{}'", model.filename().string(), name));
    }
    for (const auto& o : g->output()) {
      if (o.name() == name) {
        throw Error(ErrorKind::InvalidInput, fmt::format("'{}' is already an output of {}", name,
                                                         model.filename().string()));
      }
    }
    onnx::ValueInfoProto* v = g->add_output();
    v->set_name(name);
    if (auto it = types.find(name); it != types.end() && it->second.has_tensor_type() &&
                                    it->second.tensor_type().elem_type() != 0) {
      *v->mutable_type() = it->second;
    } else {
      const DType fallback = i < fallback_types.size() ? fallback_types[i] : DType::Unknown;
      v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx_elem_type(fallback));
    }
  }
  if (loaded.had_external_data) {
    detail::copy_external_data(loaded.model, model.parent_path(), output.parent_path());
  }
  std::string data_name;
  detail::save_model(loaded.model, output, /*external_data=*/false, &data_name);
}

}  // namespace turnkey::transforms
