// Output comparison between two models run by ONNX Runtime on the same generated inputs.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <new>

#include "compare_internal.h"
#include "model_io.h"
#include "ort_util.h"
#include "turnkey/transforms/transforms.h"
#include "turnkey/common/error.h"

namespace turnkey::transforms {

namespace fs = std::filesystem;
using detail::compare_aligned;
using detail::is_float_type;
using detail::Output;

namespace {

ONNXTensorElementDataType to_ort(DType d) {
  // ONNX Runtime numbers its element types as ONNX does.
  return static_cast<ONNXTensorElementDataType>(dtype_onnx_type(d));
}

// The relative rounding error of a float type at worst (2^-mantissa bits): 0 for the types the
// tolerance is made for (float32, float64).
double rounding_error(DType t) {
  switch (t) {
    case DType::Float16:
      return 0x1p-10;
    case DType::BFloat16:
      return 0x1p-7;
    case DType::Float8E4M3FN:
    case DType::Float8E4M3FNUZ:
      return 0x1p-3;
    case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ:
      return 0x1p-2;
    default:
      return 0;
  }
}

// The generated tensor in the element type the session wants: float32 <-> float16 converted
// (a model with keep_io_types=false takes float16), anything else must match.
std::vector<std::byte> as_type(const HostTensor& t, ONNXTensorElementDataType want,
                               const fs::path& model) {
  const ONNXTensorElementDataType have = to_ort(t.dtype);
  if (want == have) return t.data;
  const size_t n = static_cast<size_t>(t.element_count());
  std::vector<std::byte> out;
  if (have == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT &&
      want == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {
    out.resize(n * 2);
    for (size_t i = 0; i < n; ++i) {
      float f;
      std::memcpy(&f, t.data.data() + i * 4, 4);
      uint16_t h = onnx_model::float_to_half(f);
      std::memcpy(out.data() + i * 2, &h, 2);
    }
    return out;
  }
  if (have == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 &&
      want == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
    out.resize(n * 4);
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, t.data.data() + i * 2, 2);
      float f = onnx_model::half_to_float(h);
      std::memcpy(out.data() + i * 4, &f, 4);
    }
    return out;
  }
  throw Error(ErrorKind::InvalidInput,
              fmt::format("{}: input '{}' has a type the reference's {} cannot be converted to",
                          model.filename().string(), t.name, dtype_name(t.dtype)));
}

std::vector<Output> run_model(const fs::path& path, const std::vector<HostTensor>& inputs,
                              bool optimize) {
  Ort::Session session = detail::open_session(
      path, detail::base_session_options(optimize ? ORT_ENABLE_ALL : ORT_DISABLE_ALL));
  Ort::AllocatorWithDefaultOptions alloc;
  auto mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<std::string> in_names, out_names;
  std::vector<std::vector<std::byte>> buffers;  // own the bytes the values point into
  std::vector<Ort::Value> values;
  for (size_t i = 0; i < session.GetInputCount(); ++i) {
    in_names.push_back(session.GetInputNameAllocated(i, alloc).get());
    auto it = std::find_if(inputs.begin(), inputs.end(),
                           [&](const HostTensor& t) { return t.name == in_names.back(); });
    if (it == inputs.end()) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{}: input '{}' is not an input of the reference",
                              path.filename().string(), in_names.back()));
    }
    if (!it->is_tensor() || it->dtype == DType::String) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{}: input '{}' is a {}, which the comparison does not feed",
                              path.filename().string(), it->name, describe_value(*it)));
    }
    auto type = session.GetInputTypeInfo(i).GetTensorTypeAndShapeInfo().GetElementType();
    buffers.push_back(as_type(*it, type, path));
    values.push_back(Ort::Value::CreateTensor(mem, buffers.back().data(), buffers.back().size(),
                                              it->shape.data(), it->shape.size(), type));
  }
  for (size_t i = 0; i < session.GetOutputCount(); ++i) {
    out_names.push_back(session.GetOutputNameAllocated(i, alloc).get());
  }
  std::vector<const char*> in_ptrs, out_ptrs;
  for (const auto& s : in_names) in_ptrs.push_back(s.c_str());
  for (const auto& s : out_names) out_ptrs.push_back(s.c_str());
  std::vector<Ort::Value> results;
  try {
    results = session.Run(Ort::RunOptions{nullptr}, in_ptrs.data(), values.data(), values.size(),
                          out_ptrs.data(), out_ptrs.size());
  } catch (const Ort::Exception& e) {
    throw Error(ErrorKind::Runtime, fmt::format("ONNX Runtime: {}", detail::first_line(e.what())));
  } catch (const std::bad_alloc&) {
    // Generated integers feed shape-like inputs too (Tile's repeats, Expand's shape).
    throw Error(ErrorKind::Runtime,
                fmt::format("ONNX Runtime ran out of memory running {}", path.filename().string()));
  }
  std::vector<Output> outputs;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].IsTensor()) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{}: output '{}' is not a tensor, which the comparison cannot read",
                              path.filename().string(), out_names[i]));
    }
    auto info = results[i].GetTensorTypeAndShapeInfo();
    HostTensor t;
    t.name = out_names[i];
    t.dtype = dtype_from_onnx(info.GetElementType());
    t.shape = info.GetShape();
    const size_t n = info.GetElementCount();
    if (t.dtype == DType::String) {
      for (size_t k = 0; k < n; ++k) t.strings.push_back(results[i].GetStringTensorElement(k));
    } else if (t.dtype != DType::Unknown) {
      const auto* data = static_cast<const std::byte*>(results[i].GetTensorRawData());
      t.data.assign(data, data + n * dtype_size_bytes(t.dtype));
    } else {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{}: output '{}' has an element type the comparison cannot read",
                              path.filename().string(), t.name));
    }
    outputs.push_back(detail::from_host(t));
  }
  return outputs;
}

}  // namespace

OutputDiff detail::diff(const Output& ref, const Output& cand, const Tolerance& tol) {
  OutputDiff d;
  d.name = ref.name;
  d.dtype = dtype_name(cand.type);
  const double inf = std::numeric_limits<double>::infinity();
  auto without_ones = [](const std::vector<int64_t>& shape) {
    std::vector<int64_t> out;
    for (int64_t dim : shape) {
      if (dim != 1) out.push_back(dim);
    }
    return out;
  };
  if (ref.shape != cand.shape) {
    d.shape_mismatch = without_ones(ref.shape) != without_ones(cand.shape);
    d.shape_note = fmt::format("output '{}' has shape {} where the reference has {}{}", ref.name,
                               shape_to_string(cand.shape), shape_to_string(ref.shape),
                               d.shape_mismatch ? "" : ": the same elements, compared in order");
  }
  if (d.shape_mismatch || is_float_type(ref.type) != is_float_type(cand.type)) {
    d.max_abs_error = inf;
    d.rel_error = inf;
    d.cosine = 0;
    d.within = false;
    return d;
  }
  if (ref.type == DType::String || cand.type == DType::String) {
    if (ref.type != cand.type || ref.strings.size() != cand.strings.size()) {
      d.mismatches = 1;
    } else {
      for (size_t i = 0; i < ref.strings.size(); ++i) {
        d.mismatches += ref.strings[i] != cand.strings[i];
      }
    }
    d.within = d.mismatches == 0;
    return d;
  }
  if (!is_float_type(ref.type)) {
    if (ref.type != cand.type || ref.bytes.size() != cand.bytes.size()) {
      d.mismatches = 1;
    } else {
      const size_t size = ref.elem_bytes;
      for (size_t i = 0; i * size < ref.bytes.size(); ++i) {
        d.mismatches +=
            std::memcmp(ref.bytes.data() + i * size, cand.bytes.data() + i * size, size) != 0;
      }
    }
    d.within = d.mismatches == 0;
    return d;
  }
  double dot = 0, norm_ref = 0, norm_cand = 0;
  for (size_t i = 0; i < ref.values.size(); ++i) {
    const double r = ref.values[i], c = cand.values[i];
    if (!std::isfinite(r) || !std::isfinite(c)) {
      const bool same = (std::isnan(r) && std::isnan(c)) || r == c;
      if (!same) d.max_abs_error = inf;
      continue;
    }
    d.max_abs_error = std::max(d.max_abs_error, std::abs(c - r));
    d.max_abs_reference = std::max(d.max_abs_reference, std::abs(r));
    dot += r * c;
    norm_ref += r * r;
    norm_cand += c * c;
  }
  d.rel_error = d.max_abs_reference > 0 ? d.max_abs_error / d.max_abs_reference : d.max_abs_error;
  if (norm_ref == 0 && norm_cand == 0) {
    d.cosine = 1;
  } else if (norm_ref == 0 || norm_cand == 0) {
    d.cosine = 0;
  } else {
    d.cosine = dot / (std::sqrt(norm_ref) * std::sqrt(norm_cand));
  }
  // An 8- or 16-bit float output cannot be closer than its own rounding: one unit in the last
  // place of its largest element, relative to it, at worst.
  const double precision = std::max(rounding_error(ref.type), rounding_error(cand.type));
  d.within = d.rel_error <= std::max(tol.max_rel_error, precision) && d.cosine >= tol.min_cosine;
  return d;
}

namespace {

// Reads the subnormal values (nonzero, below `smallest_normal` in magnitude) as zero: from_host.
void flush_subnormals(Output& out, double smallest_normal) {
  for (double& v : out.values) {
    if (v != 0 && std::abs(v) < smallest_normal) {
      v = 0;
      ++out.flushed;
    }
  }
}

}  // namespace

// A host tensor (a runtime's output, or a saved .pb) as an Output.
Output detail::from_host(const HostTensor& t) {
  if (!t.is_tensor()) {
    throw Error(ErrorKind::Internal,
                fmt::format("output '{}' is a {}, not a tensor", t.name, describe_value(t)));
  }
  Output out;
  out.name = t.name;
  out.type = t.dtype;
  out.shape = t.shape;
  const size_t n = static_cast<size_t>(t.element_count());
  if (t.dtype == DType::String) {
    if (t.strings.size() != n) {
      throw Error(ErrorKind::Internal, fmt::format("output '{}' holds {} strings, its shape {}",
                                                   t.name, t.strings.size(), n));
    }
    out.strings = t.strings;
    return out;
  }
  const std::byte* data = t.data.data();
  const size_t size = dtype_size_bytes(t.dtype);
  if (t.data.size() < n * size) {
    throw Error(ErrorKind::Internal, fmt::format("output '{}' holds fewer bytes than its shape",
                                                 t.name));
  }
  switch (t.dtype) {
    case DType::Float32:
      out.values.resize(n);
      for (size_t k = 0; k < n; ++k) {
        float f;
        std::memcpy(&f, data + k * 4, 4);
        out.values[k] = f;
      }
      flush_subnormals(out, std::numeric_limits<float>::min());
      break;
    case DType::Float64:
      out.values.resize(n);
      std::memcpy(out.values.data(), data, n * 8);
      flush_subnormals(out, std::numeric_limits<double>::min());
      break;
    default:
      if (is_float_type(t.dtype)) {  // the 8- and 16-bit floats
        out.values.resize(n);
        for (size_t k = 0; k < n; ++k)
          out.values[k] = small_float_to_double(t.dtype, data + k * size);
        // bfloat16 has float32's exponent; float16's subnormals are normal float32 numbers in
        // the arithmetic CPUs do for it, and the 8-bit floats' rounding dwarfs theirs.
        if (t.dtype == DType::BFloat16) flush_subnormals(out, std::numeric_limits<float>::min());
        break;
      }
      out.elem_bytes = size;
      out.bytes.assign(reinterpret_cast<const char*>(data), n * out.elem_bytes);
  }
  return out;
}

namespace {

// "T" a tensor, "S3(T,T,T)" a sequence, "-" an empty optional (an optional with a value is its
// value: runtimes hand that over as the value itself).
std::string structure_of(const HostTensor& v) {
  switch (v.kind) {
    case ValueKind::Tensor:
      return "T";
    case ValueKind::Optional:
      return v.elements.empty() ? "-" : structure_of(v.elements[0]);
    case ValueKind::Sequence: {
      std::string s = fmt::format("S{}(", v.elements.size());
      for (const HostTensor& e : v.elements) s += structure_of(e);
      return s + ")";
    }
  }
  return "?";
}

std::string structure_text(const HostTensor& v) {
  if (v.kind == ValueKind::Optional) {
    return v.elements.empty() ? "an empty optional" : structure_text(v.elements[0]);
  }
  return v.kind == ValueKind::Sequence ? fmt::format("a sequence of {}", v.elements.size())
                                       : "a tensor";
}

// The tensors of a value, named: a sequence's k-th "name[k]".
void flatten(const HostTensor& v, const std::string& name, std::vector<Output>& out) {
  if (v.is_tensor()) {
    out.push_back(detail::from_host(v));
    out.back().name = name;
    return;
  }
  for (size_t k = 0; k < v.elements.size(); ++k) {
    flatten(v.elements[k], v.kind == ValueKind::Sequence ? fmt::format("{}[{}]", name, k) : name,
            out);
  }
}

}  // namespace

Comparison compare_outputs(const std::vector<HostTensor>& reference,
                           const std::vector<HostTensor>& candidate, const Tolerance& tolerance) {
  if (reference.size() != candidate.size()) {
    throw Error(ErrorKind::NumericMismatch,
                fmt::format("{} outputs where PyTorch returned {}", candidate.size(),
                            reference.size()));
  }
  // Sequences and optionals compare tensor by tensor once their structures agree.
  std::vector<Output> ref, cand;
  std::vector<OutputDiff> structure;
  for (size_t i = 0; i < reference.size(); ++i) {
    if (structure_of(reference[i]) != structure_of(candidate[i])) {
      OutputDiff d;
      d.name = reference[i].name;
      d.dtype = dtype_name(candidate[i].dtype);
      d.max_abs_error = d.rel_error = std::numeric_limits<double>::infinity();
      d.cosine = 0;
      d.within = false;
      d.shape_mismatch = true;
      d.shape_note = fmt::format("output '{}' is {} where the reference is {}", d.name,
                                 structure_text(candidate[i]), structure_text(reference[i]));
      structure.push_back(std::move(d));
      continue;
    }
    flatten(reference[i], reference[i].name, ref);
    flatten(candidate[i], reference[i].name, cand);
  }
  Comparison c = compare_aligned(ref, cand, tolerance);
  for (OutputDiff& d : structure) {
    c.within = false;
    c.worst_rel_error = d.rel_error;
    c.worst_cosine = 0;
    c.outputs.push_back(std::move(d));
  }
  return c;
}

Comparison compare_models(const fs::path& reference, const fs::path& candidate,
                          const CompareOptions& options) {
  onnx_model::ModelFacts facts;
  try {
    facts = onnx_model::load_facts(reference);
  } catch (const Error& e) {
    throw e.with_context("reference");
  }
  const auto resolved = onnx_model::resolve_input_shapes(facts, options.shapes);
  const std::vector<HostTensor> inputs = onnx_model::generate_inputs(facts, resolved, options.seed);

  const std::vector<Output> ref = run_model(reference, inputs, options.optimize_reference);
  std::vector<Output> cand;
  try {
    cand = run_model(candidate, inputs, options.optimize_candidate);
  } catch (const Error& e) {
    throw e.with_context("candidate");
  }
  std::vector<Output> aligned;
  for (const Output& r : ref) {
    auto it =
        std::find_if(cand.begin(), cand.end(), [&](const Output& c) { return c.name == r.name; });
    if (it == cand.end()) {
      throw Error(ErrorKind::InvalidInput, fmt::format("candidate has no output '{}'", r.name));
    }
    aligned.push_back(std::move(*it));
  }
  return compare_aligned(ref, aligned, options.tolerance);
}

std::string describe_ties(const Comparison& comparison) {
  const int64_t total = comparison.ordered_rows;
  std::string out;
  if (comparison.reordered_rows > 0) {
    out = fmt::format("{} of {} rows in another order among tied scores", comparison.reordered_rows,
                      total);
  }
  if (comparison.substituted_rows > 0) {
    out += fmt::format("{}{} of {} rows other than the reference's, with tied scores",
                       out.empty() ? "" : "; ", comparison.substituted_rows, total);
  }
  return out;
}

}  // namespace turnkey::transforms
