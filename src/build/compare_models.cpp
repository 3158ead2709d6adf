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
#include "turnkey/build/build_stages.h"
#include "turnkey/common/error.h"

namespace turnkey::build {

namespace fs = std::filesystem;
using detail::compare_aligned;
using detail::is_float_type;
using detail::Output;

namespace {
const char* type_name(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return "float64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
      return "bfloat16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return "bool";
    default:
      return "other";
  }
}

ONNXTensorElementDataType to_ort(DType d) {
  switch (d) {
    case DType::Float32:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    case DType::Float16:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
    case DType::Float64:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
    case DType::Int8:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
    case DType::Uint8:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    case DType::Int16:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
    case DType::Int32:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
    case DType::Int64:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    case DType::Bool:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
    case DType::Unknown:
      break;
  }
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
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
    Output out;
    out.name = out_names[i];
    if (!results[i].IsTensor()) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{}: output '{}' is not a tensor, which the comparison cannot read",
                              path.filename().string(), out.name));
    }
    auto info = results[i].GetTensorTypeAndShapeInfo();
    out.type = info.GetElementType();
    out.shape = info.GetShape();
    const size_t n = info.GetElementCount();
    const void* data = results[i].GetTensorRawData();
    if (out.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      const float* f = static_cast<const float*>(data);
      out.values.assign(f, f + n);
    } else if (out.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE) {
      const double* d = static_cast<const double*>(data);
      out.values.assign(d, d + n);
    } else if (out.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {
      const uint16_t* h = static_cast<const uint16_t*>(data);
      out.values.resize(n);
      for (size_t k = 0; k < n; ++k) out.values[k] = onnx_model::half_to_float(h[k]);
    } else if (out.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16) {
      const uint16_t* h = static_cast<const uint16_t*>(data);
      out.values.resize(n);
      for (size_t k = 0; k < n; ++k) {
        const uint32_t bits = static_cast<uint32_t>(h[k]) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        out.values[k] = f;
      }
    } else if (out.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{}: output '{}' is a string tensor, which the comparison cannot "
                              "read",
                              path.filename().string(), out.name));
    } else {
      size_t elem = 1;
      switch (out.type) {
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
          elem = 8;
          break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
          elem = 4;
          break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
          elem = 2;
          break;
        default:
          break;
      }
      out.elem_bytes = elem;
      out.bytes.assign(static_cast<const char*>(data), n * elem);
    }
    outputs.push_back(std::move(out));
  }
  return outputs;
}

}  // namespace

OutputDiff detail::diff(const Output& ref, const Output& cand, const Tolerance& tol) {
  OutputDiff d;
  d.name = ref.name;
  d.dtype = type_name(cand.type);
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
  d.within = d.rel_error <= tol.max_rel_error && d.cosine >= tol.min_cosine;
  return d;
}

// A host tensor (a runtime's output, or a saved .pb) as an Output.
Output detail::from_host(const HostTensor& t) {
  Output out;
  out.name = t.name;
  out.type = to_ort(t.dtype);
  out.shape = t.shape;
  const size_t n = static_cast<size_t>(t.element_count());
  const std::byte* data = t.data.data();
  if (t.data.size() < n * dtype_size_bytes(t.dtype)) {
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
      break;
    case DType::Float64:
      out.values.resize(n);
      std::memcpy(out.values.data(), data, n * 8);
      break;
    case DType::Float16:
      out.values.resize(n);
      for (size_t k = 0; k < n; ++k) {
        uint16_t h;
        std::memcpy(&h, data + k * 2, 2);
        out.values[k] = onnx_model::half_to_float(h);
      }
      break;
    default:
      out.elem_bytes = dtype_size_bytes(t.dtype);
      out.bytes.assign(reinterpret_cast<const char*>(data), n * out.elem_bytes);
  }
  return out;
}

Comparison compare_outputs(const std::vector<HostTensor>& reference,
                           const std::vector<HostTensor>& candidate, const Tolerance& tolerance) {
  if (reference.size() != candidate.size()) {
    throw Error(ErrorKind::NumericMismatch,
                fmt::format("{} outputs where PyTorch returned {}", candidate.size(),
                            reference.size()));
  }
  std::vector<Output> ref, cand;
  for (const HostTensor& t : reference) ref.push_back(detail::from_host(t));
  for (size_t i = 0; i < candidate.size(); ++i) {
    cand.push_back(detail::from_host(candidate[i]));
    cand.back().name = ref[i].name;
  }
  return compare_aligned(ref, cand, tolerance);
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

}  // namespace turnkey::build
