// --input-data: a backend-test folder of TensorProto files or an .npz, checked against the
// model's graph inputs (input_data.h).
#include "turnkey/onnx/input_data.h"

#include <fmt/format.h>

#include <map>

#include "turnkey/common/error.h"
#include "turnkey/common/npz.h"

namespace turnkey::onnx_model {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad(const std::string& reason) { throw Error(ErrorKind::InvalidInput, reason); }

std::string dims_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// "float32 [batch, 3, 224, 224]": what the graph declares.
std::string declared(const ValueInfo& v) {
  std::string type = v.dtype == DType::Unknown ? v.onnx_type : std::string(dtype_name(v.dtype));
  if (!v.has_shape) return type + " (any shape)";
  std::vector<std::string> dims;
  for (const Dim& d : v.dims) {
    dims.push_back(d.known() ? std::to_string(d.value) : d.param.empty() ? "?" : d.param);
  }
  return fmt::format("{} [{}]", type, fmt::join(dims, ", "));
}

std::string given(const HostTensor& t) {
  return fmt::format("{} {}", dtype_name(t.dtype), dims_text(t.shape));
}

// The tensor against the graph's declaration (and --input-shapes' whole shape for inputs).
void check_tensor(const HostTensor& t, const ValueInfo& want, const InputShapes& shapes,
                  const std::string& what) {
  if (want.dtype == DType::Unknown) {
    bad(fmt::format("{}: the model takes {}, which turnkey cannot feed", what, declared(want)));
  }
  bool ok = t.dtype == want.dtype && (!want.has_shape || t.shape.size() == want.dims.size());
  for (size_t d = 0; ok && want.has_shape && d < want.dims.size(); ++d) {
    if (want.dims[d].known() && want.dims[d].value != t.shape[d]) ok = false;
  }
  if (!ok) {
    bad(fmt::format("{}: the model takes {}, the data holds {}", what, declared(want), given(t)));
  }
  if (auto it = shapes.find(want.name); it != shapes.end() && it->second != t.shape) {
    bad(fmt::format("{}: --input-shapes says {}, the data holds {}", what, dims_text(it->second),
                    given(t)));
  }
}

std::string names_of(const std::vector<ValueInfo>& values) {
  std::vector<std::string> names;
  for (const ValueInfo& v : values) names.push_back("'" + v.name + "'");
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

HostTensor read_pb(const fs::path& file) {
  try {
    return read_tensor_pb(file);
  } catch (const Error& e) {
    bad(fmt::format("{}: {}", file.filename().string(), first_line(e.what())));
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
    HostTensor t = read_pb(dir / file);
    check_tensor(t, values[i], shapes, fmt::format("{} '{}' ({})", label, values[i].name, file));
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

InputData read_npz_data(const fs::path& file, const ModelFacts& facts, const InputShapes& shapes) {
  std::map<std::string, HostTensor> arrays;
  std::vector<std::string> order;
  for (HostTensor& t : read_npz(file)) {
    order.push_back(t.name);
    arrays[t.name] = std::move(t);
  }
  for (const std::string& name : order) {
    bool known = false;
    for (const auto* values : {&facts.inputs, &facts.outputs}) {
      for (const ValueInfo& v : *values) known = known || v.name == name;
    }
    if (!known) {
      bad(fmt::format("array '{}' names no input or output of the model (inputs: {}; outputs: {})",
                      name, names_of(facts.inputs), names_of(facts.outputs)));
    }
  }
  InputData data;
  for (const ValueInfo& in : facts.inputs) {
    auto it = arrays.find(in.name);
    if (it == arrays.end()) {
      bad(fmt::format("no array '{}' for input '{}' (the archive holds {})", in.name, in.name,
                      fmt::format("'{}'", fmt::join(order, "', '"))));
    }
    check_tensor(it->second, in, shapes, fmt::format("input '{}'", in.name));
    data.inputs.push_back(it->second);
  }
  size_t outputs_there = 0;
  for (const ValueInfo& out : facts.outputs) outputs_there += arrays.count(out.name);
  if (outputs_there > 0) {
    for (const ValueInfo& out : facts.outputs) {
      auto it = arrays.find(out.name);
      if (it == arrays.end()) {
        bad(fmt::format("holds expected outputs but none for output '{}' (give all or none)",
                        out.name));
      }
      check_tensor(it->second, out, {}, fmt::format("expected output '{}'", out.name));
      data.expected_outputs.push_back(it->second);
    }
  }
  data.description = fmt::format("arrays of {}", file.string());
  return data;
}

}  // namespace

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
