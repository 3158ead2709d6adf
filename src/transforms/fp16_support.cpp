#include "fp16_support.h"

#include <fmt/format.h>
#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model_io.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey::transforms::fp16 {

int64_t element_count(const onnx::TensorProto& t, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) {
      throw invalid(fmt::format("{}: invalid dims", what));
    }
  }
  return n;
}

// float -> IEEE half, round to nearest even: the same bits as onnx_model::float_to_half, eight
// at a time with the F16C instruction where the CPU has it (a 100M-weight model converts in
// ~0.1 s instead of ~2 s).
namespace {

__attribute__((target("avx,f16c"))) void floats_to_halves_f16c(const float* in, uint16_t* out,
                                                               size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(in + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) out[i] = onnx_model::float_to_half(in[i]);
}

// F16C and AVX in the CPU and YMM state saved by the OS (XCR0 bits 1 and 2): from CPUID and
// XGETBV, as GCC and clang both build it (clang 14's __builtin_cpu_supports knows no "f16c").
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  if (!(c & bit_F16C) || !(c & bit_AVX) || !(c & bit_OSXSAVE)) return false;
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  return (xcr0_low & 6u) == 6u;
}

}  // namespace

void floats_to_halves(const float* in, uint16_t* out, size_t n) {
  static const bool has_f16c = cpu_has_f16c();
  if (has_f16c) {
    floats_to_halves_f16c(in, out, n);
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = onnx_model::float_to_half(in[i]);
}

void TensorConverter::convert(onnx::TensorProto* t, const std::string& what) {
  const int64_t n = element_count(*t, what);
  std::vector<float> values(static_cast<size_t>(n));
  if (!t->raw_data().empty()) {
    if (static_cast<int64_t>(t->raw_data().size()) != n * 4) {
      throw invalid(
          fmt::format("{}: {} bytes of data for {} floats", what, t->raw_data().size(), n));
    }
    std::memcpy(values.data(), t->raw_data().data(), values.size() * 4);
  } else if (t->float_data_size() == n) {
    std::copy(t->float_data().begin(), t->float_data().end(), values.begin());
  } else {
    throw invalid(
        fmt::format("{}: holds {} floats, its dims need {}", what, t->float_data_size(), n));
  }
  clamp(&values);
  std::string out(values.size() * 2, '\0');
  floats_to_halves(values.data(), reinterpret_cast<uint16_t*>(out.data()), values.size());
  t->clear_float_data();
  t->set_data_type(onnx::TensorProto::FLOAT16);
  t->set_raw_data(std::move(out));
}

void TensorConverter::clamp(std::vector<float>* values) {
  for (float& f : *values) {
    const float a = std::abs(f);
    if (a > kHalfMax && std::isfinite(f)) {
      f = std::copysign(kHalfMax, f);
      ++result_->values_clamped;
    } else if (a < kHalfMinSubnormal && a != 0.0f) {
      f = std::copysign(kHalfMinSubnormal, f);
      ++result_->values_raised;
    }
  }
}

bool is_float_tensor_type(const onnx::TypeProto& type) {
  return type.has_tensor_type() && type.tensor_type().elem_type() == onnx::TensorProto::FLOAT;
}

// Sequences, optionals and maps holding float: no Cast converts them, so nodes touching them stay
// float32 and so do the values.
bool is_float_container(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kSequenceType:
      return is_float_tensor_type(type.sequence_type().elem_type()) ||
             is_float_container(type.sequence_type().elem_type());
    case onnx::TypeProto::kOptionalType:
      return is_float_tensor_type(type.optional_type().elem_type()) ||
             is_float_container(type.optional_type().elem_type());
    case onnx::TypeProto::kMapType:
      return is_float_tensor_type(type.map_type().value_type()) ||
             is_float_container(type.map_type().value_type());
    case onnx::TypeProto::kSparseTensorType:
      return type.sparse_tensor_type().elem_type() == onnx::TensorProto::FLOAT;
    default:
      return false;
  }
}

bool has_subgraph(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) {
    if (a.has_g() || a.graphs_size() > 0) return true;
  }
  return false;
}

// Names a subgraph reads from enclosing scopes.
void free_names(const onnx::GraphProto& g, std::set<std::string>* out) {
  std::unordered_set<std::string> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& s : g.sparse_initializer()) defined.insert(s.values().name());
  for (const auto& node : g.node()) {
    for (const auto& i : node.input()) {
      if (!i.empty() && !defined.count(i)) out->insert(i);
    }
    for (const auto& a : node.attribute()) {
      std::set<std::string> inner;
      if (a.has_g()) free_names(a.g(), &inner);
      for (const auto& sub : a.graphs()) free_names(sub, &inner);
      for (const auto& name : inner) {
        if (!defined.count(name)) out->insert(name);
      }
    }
    for (const auto& o : node.output()) defined.insert(o);
  }
  for (const auto& v : g.output()) {
    if (!defined.count(v.name())) out->insert(v.name());
  }
}

// Renames a name the subgraph reads from an enclosing scope. ONNX forbids shadowing, so every
// occurrence is the outer value.
void rename_free(onnx::GraphProto* g, const std::string& from, const std::string& to) {
  for (auto& node : *g->mutable_node()) {
    for (auto& i : *node.mutable_input()) {
      if (i == from) i = to;
    }
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) rename_free(a.mutable_g(), from, to);
      for (auto& sub : *a.mutable_graphs()) rename_free(&sub, from, to);
    }
  }
  for (auto& v : *g->mutable_output()) {
    if (v.name() == from) v.set_name(to);
  }
  for (auto& v : *g->mutable_value_info()) {
    if (v.name() == from) v.set_name(to);
  }
}

void collect_names(const onnx::GraphProto& g, std::unordered_set<std::string>* names) {
  for (const auto& v : g.input()) names->insert(v.name());
  for (const auto& v : g.output()) names->insert(v.name());
  for (const auto& v : g.value_info()) names->insert(v.name());
  for (const auto& t : g.initializer()) names->insert(t.name());
  for (const auto& s : g.sparse_initializer()) names->insert(s.values().name());
  for (const auto& node : g.node()) {
    names->insert(node.name());
    for (const auto& i : node.input()) names->insert(i);
    for (const auto& o : node.output()) names->insert(o);
    for (const auto& a : node.attribute()) {
      if (a.has_g()) collect_names(a.g(), names);
      for (const auto& sub : a.graphs()) collect_names(sub, names);
    }
  }
}

std::string op_key(const onnx::NodeProto& node) {
  return detail::is_default_domain(node.domain()) ? node.op_type()
                                                  : node.domain() + "::" + node.op_type();
}

const onnx::OpSchema::FormalParameter* formal(const std::vector<onnx::OpSchema::FormalParameter>& f,
                                              int index) {
  if (f.empty()) return nullptr;
  if (index < static_cast<int>(f.size())) return &f[static_cast<size_t>(index)];
  if (f.back().GetOption() == onnx::OpSchema::Variadic) return &f.back();
  return nullptr;
}

}  // namespace turnkey::transforms::fp16
