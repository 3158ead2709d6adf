// --input-data: a backend-test folder of TensorProto, SequenceProto and OptionalProto files or an
// .npz, checked against the model's graph inputs (input_data.h).
#include "turnkey/onnx/input_data.h"

#include <fmt/format.h>

#include <map>

#include "turnkey/common/error.h"
#include "turnkey/common/npz.h"

namespace turnkey::onnx_model {

namespace fs = std::filesystem;

std::string ValueInfo::declared() const {
  std::string wrap;
  for (ValueKind k : layers) wrap += k == ValueKind::Sequence ? "sequence of " : "optional ";
  std::string type = dtype == DType::Unknown ? onnx_type : std::string(dtype_name(dtype));
  if (!has_shape) return wrap + type + " (any shape)";
  std::vector<std::string> parts;
  for (const Dim& d : dims) {
    parts.push_back(d.known() ? std::to_string(d.value) : d.param.empty() ? "?" : d.param);
  }
  return fmt::format("{}{} [{}]", wrap, type, fmt::join(parts, ", "));
}

namespace {

[[noreturn]] void bad(const std::string& reason) { throw Error(ErrorKind::InvalidInput, reason); }

std::string dims_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string given(const HostTensor& t) {
  if (!t.is_tensor()) return describe_value(t);
  return fmt::format("{} {}", dtype_name(t.dtype), dims_text(t.shape));
}

// One tensor against the declared element type and dims.
bool tensor_fits(const HostTensor& t, const ValueInfo& want) {
  bool ok = t.is_tensor() && t.dtype == want.dtype &&
            (!want.has_shape || t.shape.size() == want.dims.size());
  for (size_t d = 0; ok && want.has_shape && d < want.dims.size(); ++d) {
    if (want.dims[d].known() && want.dims[d].value != t.shape[d]) ok = false;
  }
  return ok;
}

// The value against the graph's declaration, layer by layer, from `layer` in.
bool fits_from(const HostTensor& v, const ValueInfo& want, size_t layer) {
  if (layer == want.layers.size()) return tensor_fits(v, want);
  if (v.kind != want.layers[layer]) return false;
  if (v.kind == ValueKind::Sequence && v.dtype != want.dtype) return false;
  for (const HostTensor& e : v.elements) {
    if (!fits_from(e, want, layer + 1)) return false;
  }
  return true;
}

void check_value(const HostTensor& v, const ValueInfo& want, const InputShapes& shapes,
                 const std::string& what) {
  if (want.dtype == DType::Unknown) {
    bad(fmt::format("{}: the model takes {}, which turnkey cannot feed", what, want.declared()));
  }
  if (!value_fits(v, want)) {
    bad(fmt::format("{}: the model takes {}, the data holds {}", what, want.declared(), given(v)));
  }
  if (auto it = shapes.find(want.name); it != shapes.end() && it->second != v.shape) {
    bad(fmt::format("{}: --input-shapes says {}, the data holds {}", what, dims_text(it->second),
                    given(v)));
  }
}

std::string names_of(const std::vector<ValueInfo>& values) {
  std::vector<std::string> names;
  for (const ValueInfo& v : values) names.push_back("'" + v.name + "'");
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

HostTensor read_pb(const fs::path& file, const ValueInfo& want, const std::string& what) {
  try {
    return read_value_pb(file, want);
  } catch (const Error& e) {
    bad(fmt::format("{}: {}", what, first_line(e.what())));
  }
}

// How many of prefix_0.pb, prefix_1.pb, ... exist in a row, and the first index past `count`
// that exists too (-1 when none up to a generous bound).
std::pair<size_t, long> count_files(const fs::path& dir, const char* prefix, size_t count) {
  std::error_code ec;
  size_t n = 0;
  while (fs::exists(dir / fmt::format("{}_{}.pb", prefix, n), ec)) ++n;
  long extra = -1;
  for (size_t k = std::max(n, count); k < std::max(n, count) + 64; ++k) {
    if (k != n && fs::exists(dir / fmt::format("{}_{}.pb", prefix, k), ec)) {
      extra = static_cast<long>(k);
      break;
    }
  }
  return {n, extra};
}

// prefix_0.pb, prefix_1.pb, ...: one per value of `values`, in graph order, checked against it.
// `optional` (expected outputs): none at all is fine, some are not.
std::vector<HostTensor> read_series(const fs::path& dir, const std::string& prefix,
                                    const std::string& label, const std::vector<ValueInfo>& values,
                                    const InputShapes& shapes, bool optional) {
  const size_t want = values.size();
  const auto [there, extra] = count_files(dir, prefix.c_str(), want);
  if (optional && there == 0 && extra < 0) return {};
  const char* plural = want == 1 ? "" : "s";
  if (there < want) {
    std::error_code ec;
    const bool nested = there == 0 && fs::is_directory(dir / "test_data_set_0", ec);
    bad(fmt::format("no {}_{}.pb for {} '{}' (the model has {} {}{}{}){}", prefix, there, prefix,
                    values[there].name, want, prefix, plural, optional ? "; give all or none" : "",
                    nested ? "; a backend test keeps its data in test_data_set_0/ below it" : ""));
  }
  if (there > want || extra >= 0) {
    bad(fmt::format("holds {}_{}.pb, but the model has {} {}{}", prefix,
                    there > want ? want : static_cast<size_t>(extra), want, prefix, plural));
  }
  std::vector<HostTensor> tensors;
  for (size_t i = 0; i < want; ++i) {
    const std::string file = fmt::format("{}_{}.pb", prefix, i);
    const std::string what = fmt::format("{} '{}' ({})", label, values[i].name, file);
    HostTensor t = read_pb(dir / file, values[i], what);
    check_value(t, values[i], shapes, what);
    t.name = values[i].name;
    tensors.push_back(std::move(t));
  }
  return tensors;
}

InputData read_folder(const fs::path& dir, const ModelFacts& facts, const InputShapes& shapes) {
  InputData data;
  data.inputs = read_series(dir, "input", "input", facts.inputs, shapes, false);
  data.expected_outputs = read_series(dir, "output", "expected output", facts.outputs, {}, true);
  data.description = fmt::format(
      "input_N.pb{} in {}", data.expected_outputs.empty() ? "" : " and output_N.pb", dir.string());
  return data;
}

// ---- .npz: arrays named after the values (input_data.h) ---------------------------------------

using Arrays = std::map<std::string, HostTensor>;

// "x" -> whether an array names it: "x" itself, or "x[0]" for a sequence.
bool names_value(const std::string& array, const std::string& value) {
  return array == value ||
         (array.size() > value.size() + 2 && array.compare(0, value.size(), value) == 0 &&
          array[value.size()] == '[' && array.back() == ']');
}

// The tensors of a sequence: arrays name[0], name[1], ... in a row.
HostTensor sequence_of(const Arrays& arrays, const std::string& name, DType dtype) {
  HostTensor seq;
  seq.name = name;
  seq.kind = ValueKind::Sequence;
  seq.dtype = dtype;
  for (size_t i = 0;; ++i) {
    auto it = arrays.find(fmt::format("{}[{}]", name, i));
    if (it == arrays.end()) break;
    seq.elements.push_back(it->second);
  }
  return seq;
}

// The value named `want.name` from the arrays; false when no array names it.
bool value_of(const Arrays& arrays, const ValueInfo& want, HostTensor* out) {
  bool any = false;
  for (const auto& [name, t] : arrays) any = any || names_value(name, want.name);
  const auto layer = [&](size_t i) {
    return i < want.layers.size() ? want.layers[i] : ValueKind::Tensor;
  };
  HostTensor inner;
  const ValueKind inside = layer(0) == ValueKind::Optional ? layer(1) : layer(0);
  if (inside == ValueKind::Sequence) {
    inner = sequence_of(arrays, want.name, want.dtype);
    if (arrays.count(want.name)) {
      bad(fmt::format("'{}' is a sequence: give its tensors as arrays '{}[0]', '{}[1]', ...",
                      want.name, want.name, want.name));
    }
  } else if (auto it = arrays.find(want.name); it != arrays.end()) {
    inner = it->second;
  }
  if (layer(0) == ValueKind::Optional) {
    out->kind = ValueKind::Optional;
    out->dtype = want.dtype;
    if (any) out->elements.push_back(std::move(inner));
    return true;  // no array: an empty optional
  }
  *out = std::move(inner);
  return any;
}

// NumPy has no bfloat16: its bits come as uint16 (or as a 2-byte void type) for a bfloat16 value.
void carry_bfloat16(HostTensor& t, const ValueInfo& want) {
  if (want.dtype == DType::BFloat16 && t.dtype == DType::Uint16) t.dtype = DType::BFloat16;
  for (HostTensor& e : t.elements) carry_bfloat16(e, want);
}

std::vector<HostTensor> npz_values(const Arrays& arrays, const std::vector<std::string>& order,
                                   const std::vector<ValueInfo>& values, const InputShapes& shapes,
                                   const char* label, bool optional) {
  size_t there = 0;
  for (const ValueInfo& v : values) {
    for (const auto& [name, t] : arrays) there += names_value(name, v.name);
  }
  std::vector<HostTensor> out;
  if (optional && there == 0) return out;
  for (const ValueInfo& v : values) {
    HostTensor value;
    if (!value_of(arrays, v, &value)) {
      if (optional) {
        bad(fmt::format("holds expected outputs but none for output '{}' (give all or none)",
                        v.name));
      }
      bad(fmt::format("no array '{}' for input '{}' (the archive holds {})", v.name, v.name,
                      fmt::format("'{}'", fmt::join(order, "', '"))));
    }
    carry_bfloat16(value, v);
    check_value(value, v, shapes, fmt::format("{} '{}'", label, v.name));
    value.name = v.name;
    out.push_back(std::move(value));
  }
  return out;
}

InputData read_npz_data(const fs::path& file, const ModelFacts& facts, const InputShapes& shapes) {
  Arrays arrays;
  std::vector<std::string> order;
  for (HostTensor& t : read_npz(file)) {
    order.push_back(t.name);
    arrays[t.name] = std::move(t);
  }
  for (const std::string& name : order) {
    bool known = false;
    for (const auto* values : {&facts.inputs, &facts.outputs}) {
      for (const ValueInfo& v : *values) known = known || names_value(name, v.name);
    }
    if (!known) {
      bad(fmt::format("array '{}' names no input or output of the model (inputs: {}; outputs: {})",
                      name, names_of(facts.inputs), names_of(facts.outputs)));
    }
  }
  InputData data;
  data.inputs = npz_values(arrays, order, facts.inputs, shapes, "input", false);
  data.expected_outputs = npz_values(arrays, order, facts.outputs, {}, "expected output", true);
  data.description = fmt::format("arrays of {}", file.string());
  return data;
}

}  // namespace

bool value_fits(const HostTensor& value, const ValueInfo& want) {
  return fits_from(value, want, 0);
}

InputData read_input_data(const fs::path& path, const ModelFacts& facts,
                          const InputShapes& shapes) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) bad("not found");
  if (fs::is_directory(status)) return read_folder(path, facts, shapes);
  if (path.extension() != ".npz") {
    bad("expected a folder of input_N.pb files or an .npz file");
  }
  return read_npz_data(path, facts, shapes);
}

}  // namespace turnkey::onnx_model
