// Output comparison between two models run by ONNX Runtime on the same generated inputs.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <new>

#include "model_io.h"
#include "ort_util.h"
#include "turnkey/build/build_stages.h"
#include "turnkey/common/error.h"

namespace turnkey::build {

namespace fs = std::filesystem;

namespace {

struct Output {
  std::string name;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> shape;
  std::vector<double> values;  // float types, widened
  std::string bytes;           // other types, raw
  size_t elem_bytes = 0;       // of `bytes`
};

bool is_float_type(ONNXTensorElementDataType t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ||
         t == ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
}

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

OutputDiff diff(const Output& ref, const Output& cand, const Tolerance& tol) {
  OutputDiff d;
  d.name = ref.name;
  d.dtype = type_name(cand.type);
  const double inf = std::numeric_limits<double>::infinity();
  if (ref.shape != cand.shape || is_float_type(ref.type) != is_float_type(cand.type)) {
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
Output from_host(const HostTensor& t) {
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

// ---- rows ordered by a score (build_stages.h, Comparison) -------------------------------------

size_t element_count(const Output& o) {
  return is_float_type(o.type) ? o.values.size()
                               : (o.elem_bytes ? o.bytes.size() / o.elem_bytes : 0);
}

size_t row_width(const Output& o) {
  return o.shape.empty() || o.shape[0] <= 0 ? 0
                                            : element_count(o) / static_cast<size_t>(o.shape[0]);
}

// The largest difference an element may have: what diff() allows relative to max|reference|.
double abs_tolerance(const Output& ref, const Tolerance& tol) {
  double largest = 0;
  for (double v : ref.values) {
    if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
  }
  return largest > 0 ? largest * tol.max_rel_error : tol.max_rel_error;
}

bool rows_equal(const Output& ref, size_t i, const Output& cand, size_t j, double abs_tol) {
  const size_t w = row_width(ref);
  if (is_float_type(ref.type)) {
    for (size_t e = 0; e < w; ++e) {
      const double r = ref.values[i * w + e], c = cand.values[j * w + e];
      if (r == c || (std::isnan(r) && std::isnan(c))) continue;
      if (!(std::abs(c - r) <= abs_tol)) return false;
    }
    return true;
  }
  const size_t b = w * ref.elem_bytes;
  return std::memcmp(ref.bytes.data() + i * b, cand.bytes.data() + j * b, b) == 0;
}

bool finite(const std::vector<double>& values) {
  return std::all_of(values.begin(), values.end(), [](double x) { return std::isfinite(x); });
}

// Outputs of one result (the same name up to its last `[`: `output[0]` for
// `output[0]['boxes']`) with the same leading dimension, and which of them order the rows.
struct RowGroup {
  int64_t rows = 0;
  std::vector<size_t> members;  // indices into the outputs
  std::vector<size_t> keys;     // members that are scores: rank 1, float, finite, sorted
};

std::vector<RowGroup> row_groups(const std::vector<Output>& ref, const std::vector<Output>& cand) {
  std::map<std::pair<std::string, int64_t>, RowGroup> groups;
  for (size_t k = 0; k < ref.size(); ++k) {
    const Output& r = ref[k];
    const Output& c = cand[k];
    if (r.shape.empty() || r.shape[0] < 2 || r.shape != c.shape ||
        is_float_type(r.type) != is_float_type(c.type) || r.elem_bytes != c.elem_bytes) {
      continue;
    }
    const size_t bracket = r.name.rfind('[');
    RowGroup& g = groups[{bracket == std::string::npos ? std::string() : r.name.substr(0, bracket),
                          r.shape[0]}];
    g.rows = r.shape[0];
    g.members.push_back(k);
    if (r.shape.size() == 1 && is_float_type(r.type) && finite(r.values) && finite(c.values) &&
        (std::is_sorted(r.values.begin(), r.values.end()) ||
         std::is_sorted(r.values.rbegin(), r.values.rend()))) {
      g.keys.push_back(k);
    }
  }
  std::vector<RowGroup> out;
  for (auto& [name, g] : groups) {
    if (!g.keys.empty()) out.push_back(std::move(g));
  }
  return out;
}

struct RowMatch {
  bool explained = false;         // every row matched, or substituted among tied scores
  std::vector<int64_t> cand_row;  // per reference row: its candidate row, -1 if substituted
  int64_t reordered = 0, substituted = 0;
};

RowMatch match_rows(const RowGroup& g, const std::vector<Output>& ref,
                    const std::vector<Output>& cand, const std::vector<double>& abs_tol) {
  const auto n = static_cast<size_t>(g.rows);
  const auto same_row = [&](size_t i, size_t j) {
    return std::all_of(g.members.begin(), g.members.end(),
                       [&](size_t k) { return rows_equal(ref[k], i, cand[k], j, abs_tol[k]); });
  };
  // Scores tie: reference row i against reference row j (positions), or against candidate row j.
  const auto tie = [&](const std::vector<Output>& other, size_t i, size_t j) {
    return std::all_of(g.keys.begin(), g.keys.end(), [&](size_t k) {
      return std::abs(ref[k].values[i] - other[k].values[j]) <= abs_tol[k];
    });
  };
  RowMatch m;
  m.cand_row.assign(n, -1);
  std::vector<char> used(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (same_row(i, i)) m.cand_row[i] = static_cast<int64_t>(i), used[i] = 1;
  }
  // A moved row stays among the positions whose scores tie with its own: with sorted scores,
  // a contiguous run around it.
  for (size_t i = 0; i < n; ++i) {
    if (m.cand_row[i] >= 0) continue;
    for (int step : {-1, 1}) {
      for (auto j = static_cast<int64_t>(i) + step;
           j >= 0 && j < g.rows && tie(ref, i, static_cast<size_t>(j)) && m.cand_row[i] < 0;
           j += step) {
        if (!used[j] && same_row(i, static_cast<size_t>(j))) m.cand_row[i] = j, used[j] = 1;
      }
    }
    if (m.cand_row[i] >= 0) ++m.reordered;
  }
  std::vector<size_t> left_ref, left_cand;
  for (size_t i = 0; i < n; ++i) {
    if (m.cand_row[i] < 0) left_ref.push_back(i);
    if (!used[i]) left_cand.push_back(i);
  }
  // A substitution needs a tie among the reference's own rows too: with scores the right
  // values and rows that differ, a score no other row shares is a wrong row, not a tie broken
  // another way.
  const auto tied_with_neighbour = [&](size_t i) {
    return (i > 0 && tie(ref, i, i - 1)) || (i + 1 < n && tie(ref, i, i + 1));
  };
  for (size_t t = 0; t < left_ref.size(); ++t) {
    if (!tie(cand, left_ref[t], left_cand[t]) || !tied_with_neighbour(left_ref[t])) return m;
  }
  m.substituted = static_cast<int64_t>(left_ref.size());
  m.explained = true;
  return m;
}

Output take_rows(const Output& o, const std::vector<size_t>& rows) {
  Output out = o;
  const size_t w = row_width(o);
  out.shape[0] = static_cast<int64_t>(rows.size());
  if (is_float_type(o.type)) {
    out.values.clear();
    for (size_t r : rows)
      out.values.insert(out.values.end(), o.values.begin() + r * w, o.values.begin() + (r + 1) * w);
  } else {
    out.bytes.clear();
    for (size_t r : rows) out.bytes.append(o.bytes, r * w * o.elem_bytes, w * o.elem_bytes);
  }
  return out;
}

// Compares outputs aligned by position (cand[k] is the candidate for ref[k]), elementwise and,
// where that fails for rows ordered by a score, up to ties.
Comparison compare_aligned(const std::vector<Output>& ref, const std::vector<Output>& cand,
                           const Tolerance& tol) {
  std::vector<OutputDiff> diffs;
  for (size_t k = 0; k < ref.size(); ++k) diffs.push_back(diff(ref[k], cand[k], tol));
  Comparison result;
  for (const RowGroup& g : row_groups(ref, cand)) {
    if (std::all_of(g.members.begin(), g.members.end(),
                    [&](size_t k) { return diffs[k].within; })) {
      continue;
    }
    std::vector<double> abs_tol(ref.size(), 0);
    for (size_t k : g.members) abs_tol[k] = abs_tolerance(ref[k], tol);
    const RowMatch m = match_rows(g, ref, cand, abs_tol);
    if (!m.explained) continue;
    std::vector<size_t> ref_rows, cand_rows;
    for (size_t i = 0; i < m.cand_row.size(); ++i) {
      if (m.cand_row[i] < 0) continue;
      ref_rows.push_back(i);
      cand_rows.push_back(static_cast<size_t>(m.cand_row[i]));
    }
    for (size_t k : g.members) {
      diffs[k] = diff(take_rows(ref[k], ref_rows), take_rows(cand[k], cand_rows), tol);
      diffs[k].reordered_rows = m.reordered;
      diffs[k].substituted_rows = m.substituted;
    }
    result.ordered_rows += g.rows;
    result.reordered_rows += m.reordered;
    result.substituted_rows += m.substituted;
  }
  for (OutputDiff& d : diffs) {
    result.within &= d.within;
    result.worst_rel_error = std::max(result.worst_rel_error, d.rel_error);
    result.worst_cosine = std::min(result.worst_cosine, d.cosine);
    result.outputs.push_back(std::move(d));
  }
  result.inconclusive = result.within && result.substituted_rows > 0;
  return result;
}

}  // namespace

Comparison compare_outputs(const std::vector<HostTensor>& reference,
                           const std::vector<HostTensor>& candidate, const Tolerance& tolerance) {
  if (reference.size() != candidate.size()) {
    throw Error(ErrorKind::NumericMismatch,
                fmt::format("{} outputs where PyTorch returned {}", candidate.size(),
                            reference.size()));
  }
  std::vector<Output> ref, cand;
  for (const HostTensor& t : reference) ref.push_back(from_host(t));
  for (size_t i = 0; i < candidate.size(); ++i) {
    cand.push_back(from_host(candidate[i]));
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
