// Input shapes and deterministic input data. No libonnx here: only ModelFacts.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cstring>
#include <new>
#include <set>
#include <string_view>

#include "turnkey/common/error.h"
#include "turnkey/common/text.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey::onnx_model {

namespace {

Error invalid(const std::string& message) { return Error(ErrorKind::InvalidInput, message); }

// "[batch, 16, ?]": the model's view of a shape, for messages.
std::string model_dims_string(const ValueInfo& input) {
  if (!input.has_shape) return "[unknown rank]";
  std::vector<std::string> parts;
  for (const Dim& d : input.dims) {
    parts.push_back(d.known() ? std::to_string(d.value) : d.param.empty() ? "?" : d.param);
  }
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// Bytes of a tensor of `shape`, or -1 when a dim is negative, -2 on overflow.
int64_t tensor_bytes(const std::vector<int64_t>& shape, DType dtype) {
  // A generated string is up to 2 digits in a std::string.
  int64_t n =
      static_cast<int64_t>(dtype == DType::String ? sizeof(std::string) : dtype_size_bytes(dtype));
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (__builtin_mul_overflow(n, d, &n)) return -2;
  }
  return n;
}

void check_size(const ValueInfo& input, const std::vector<int64_t>& shape) {
  int64_t bytes = tensor_bytes(shape, input.dtype);
  if (bytes == -1) {
    throw invalid(
        fmt::format("input '{}': negative dim in shape {}", input.name, fmt::join(shape, "x")));
  }
  if (bytes == -2 || bytes > kMaxInputBytes) {
    throw invalid(fmt::format(
        "input '{}' of shape {} ({}) needs more than the {} GB allowed for "
        "a generated input",
        input.name, shape_to_string(shape), dtype_name(input.dtype), kMaxInputBytes >> 30));
  }
}

void check_generatable(const ValueInfo& input) {
  if (input.dtype == DType::Unknown) {
    throw invalid(fmt::format("input '{}' has type {}, which turnkey cannot generate", input.name,
                              input.onnx_type.empty() ? "UNDEFINED" : input.onnx_type));
  }
}

// splitmix64 (Steele, Lea, Flood 2014): tiny, full-period, and its output is defined by the
// algorithm alone, unlike std::uniform_*_distribution whose results differ between libraries.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Exact in binary32: a 24-bit integer scaled by a power of two, so no rounding mode matters.
float uniform_float(uint64_t x) {
  return static_cast<float>(static_cast<int64_t>(x >> 40) - (int64_t{1} << 23)) * 0x1p-23f;
}
double uniform_double(uint64_t x) {
  return static_cast<double>(static_cast<int64_t>(x >> 11) - (int64_t{1} << 52)) * 0x1p-52;
}
// [0, n) by multiply-shift (Lemire): no modulo bias worth speaking of, no division.
uint64_t below(uint64_t x, uint64_t n) { return ((x >> 32) * n) >> 32; }

// What a generated integer stays under: kIntegerBound (valid token ids and small indices), or
// less where the model indexes a smaller table with the input (ValueInfo::index_bound).
constexpr uint64_t kIntegerBound = 100;
uint64_t integer_bound(const ValueInfo& input) {
  return input.index_bound > 0 && static_cast<uint64_t>(input.index_bound) < kIntegerBound
             ? static_cast<uint64_t>(input.index_bound)
             : kIntegerBound;
}

// A mask (attention_mask, pixel_mask, ...) is all ones: every position attends, as a tokenizer
// gives for an unpadded batch. Random values would mask most positions out, or, in the
// (1 - mask) * min form that exporters keep, overflow to infinities.
bool is_mask(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("mask") != std::string::npos;
}

template <typename T>
void fill(std::byte* dst, int64_t n, SplitMix64& rng, T (*make)(uint64_t)) {
  for (int64_t i = 0; i < n; ++i) {
    T v = make(rng.next());
    std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
  }
}

// An 8-bit float in (-1, 1): random sign and mantissa, an exponent below the bias (so never
// NaN or infinity); the FNUZ types' 0x80 (their NaN) becomes zero.
uint8_t small_float8(uint64_t x, int mbits, int bias) {
  const auto exponent = static_cast<uint8_t>(((x >> 8) & 0xff) % static_cast<uint64_t>(bias));
  const auto b =
      static_cast<uint8_t>((x >> 63) << 7 | exponent << mbits | (x & ((uint64_t{1} << mbits) - 1)));
  return b == 0x80 ? 0 : b;
}

template <typename T>
void fill_integers(std::byte* dst, int64_t n, SplitMix64& rng, uint64_t bound) {
  for (int64_t i = 0; i < n; ++i) {
    const auto v = static_cast<T>(below(rng.next(), bound));
    std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
  }
}

// The bits of 1 in each element type (integers and bool: 1).
uint64_t one_bits(DType dtype) {
  static constexpr std::pair<DType, uint64_t> kOnes[] = {
      {DType::Float32, 0x3f800000}, {DType::Float64, 0x3ff0000000000000},
      {DType::Float16, 0x3c00},     {DType::BFloat16, 0x3f80},
      {DType::Float8E4M3FN, 0x38},  {DType::Float8E4M3FNUZ, 0x40},
      {DType::Float8E5M2, 0x3c},    {DType::Float8E5M2FNUZ, 0x40}};
  for (const auto& [type, bits] : kOnes) {
    if (type == dtype) return bits;
  }
  return 1;
}

void fill_ones(HostTensor& t) {
  const size_t size = dtype_size_bytes(t.dtype);
  const uint64_t one = one_bits(t.dtype);
  for (size_t at = 0; size > 0 && at + size <= t.data.size(); at += size) {
    std::memcpy(t.data.data() + at, &one, size);  // little-endian: the low bytes
  }
}

void fill_tensor(HostTensor& t, SplitMix64& rng, uint64_t bound) {
  const int64_t n = t.element_count();
  std::byte* p = t.data.data();
  switch (t.dtype) {
    case DType::Float32:
      fill<float>(p, n, rng, uniform_float);
      break;
    case DType::Float64:
      fill<double>(p, n, rng, uniform_double);
      break;
    case DType::Float16:
      fill<uint16_t>(p, n, rng, [](uint64_t x) { return float_to_half(uniform_float(x)); });
      break;
    case DType::BFloat16:
      fill<uint16_t>(p, n, rng, [](uint64_t x) {
        return static_cast<uint16_t>(std::bit_cast<uint32_t>(uniform_float(x)) >> 16);
      });
      break;
    case DType::Float8E4M3FN:
      fill<uint8_t>(p, n, rng, [](uint64_t x) { return small_float8(x, 3, 7); });
      break;
    case DType::Float8E4M3FNUZ:
      fill<uint8_t>(p, n, rng, [](uint64_t x) { return small_float8(x, 3, 8); });
      break;
    case DType::Float8E5M2:
      fill<uint8_t>(p, n, rng, [](uint64_t x) { return small_float8(x, 2, 15); });
      break;
    case DType::Float8E5M2FNUZ:
      fill<uint8_t>(p, n, rng, [](uint64_t x) { return small_float8(x, 2, 16); });
      break;
    case DType::Bool:
      fill<uint8_t>(p, n, rng, [](uint64_t x) { return static_cast<uint8_t>(x >> 63); });
      break;
    case DType::Int8:
    case DType::Uint8:
      fill_integers<uint8_t>(p, n, rng, bound);
      break;
    case DType::Int16:
    case DType::Uint16:
      fill_integers<uint16_t>(p, n, rng, bound);
      break;
    case DType::Int32:
    case DType::Uint32:
      fill_integers<uint32_t>(p, n, rng, bound);
      break;
    case DType::Int64:
    case DType::Uint64:
      fill_integers<uint64_t>(p, n, rng, bound);
      break;
    case DType::String:
      for (int64_t i = 0; i < n; ++i) {
        t.strings.push_back(std::to_string(below(rng.next(), kIntegerBound)));
      }
      break;
    case DType::Unknown:
      break;
  }
  // An all-zero input can hide bugs (and makes some models divide by zero): make one element 1.
  // (Not for an index into a table of one row: 0 is its only valid value.)
  const bool all_zero =
      std::all_of(t.data.begin(), t.data.end(), [](std::byte b) { return b == std::byte{0}; });
  if (n > 0 && !t.data.empty() && all_zero && bound > 1) {
    const uint64_t one = one_bits(t.dtype);
    std::memcpy(p, &one, dtype_size_bytes(t.dtype));  // little-endian: the low bytes
  }
}

// How many tensors a generated sequence holds.
constexpr size_t kGeneratedSequenceLength = 2;

}  // namespace

InputShapes parse_input_shapes(const std::string& spec) {
  InputShapes shapes;
  std::string_view rest(spec);
  if (trim(rest).empty()) return shapes;
  const std::string usage = "expected name:dims[,name:dims...], e.g. input:1x3x224x224";
  while (true) {
    size_t comma = rest.find(',');
    const std::string entry = trim(rest.substr(0, comma));
    if (entry.empty())
      throw invalid(fmt::format("--input-shapes '{}': empty entry; {}", spec, usage));
    size_t colon = entry.rfind(':');
    if (colon == std::string::npos) {
      throw invalid(fmt::format("--input-shapes '{}': '{}' has no ':'; {}", spec, entry, usage));
    }
    std::string name = trim(std::string_view(entry).substr(0, colon));
    const std::string dims_text = trim(std::string_view(entry).substr(colon + 1));
    if (name.empty()) {
      throw invalid(
          fmt::format("--input-shapes '{}': '{}' has no input name; {}", spec, entry, usage));
    }
    std::vector<int64_t> dims;
    std::string_view d = dims_text;
    while (true) {
      size_t x = d.find_first_of("xX");
      const std::string part = trim(d.substr(0, x));
      int64_t value = 0;
      auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
      if (part.empty() || ec != std::errc() || end != part.data() + part.size() || value < 1) {
        throw invalid(
            fmt::format("--input-shapes '{}': '{}' in '{}' is not a dim (an integer >= 1)"
                        "; {}",
                        spec, part, entry, usage));
      }
      dims.push_back(value);
      if (x == std::string_view::npos) break;
      d.remove_prefix(x + 1);
    }
    if (!shapes.emplace(name, std::move(dims)).second) {
      throw invalid(fmt::format("--input-shapes '{}': input '{}' is given twice", spec, name));
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return shapes;
}

OnesShape symbolic_dims_at_one(const ValueInfo& input, size_t from_dim) {
  OnesShape out;
  for (size_t d = 0; d < input.dims.size(); ++d) {
    const Dim& dim = input.dims[d];
    if (d >= from_dim && !dim.known()) out.symbolic.push_back(dim.param.empty() ? "?" : dim.param);
    out.shape.push_back(dim.known() ? dim.value : 1);
  }
  return out;
}

void OnesNote::add(const std::string& input, const OnesShape& ones) {
  if (ones.symbolic.empty()) return;
  defaulted_.push_back(fmt::format("input '{}' [{}]", input, fmt::join(ones.symbolic, ", ")));
  examples_.push_back(fmt::format("{}:{}", input, fmt::join(ones.shape, "x")));
}

std::string OnesNote::text() const {
  if (defaulted_.empty()) return "";
  return fmt::format("symbolic dims set to 1: {} (choose with --input-shapes {})",
                     fmt::join(defaulted_, ", "), fmt::join(examples_, ","));
}

std::vector<std::vector<int64_t>> resolve_input_shapes(const ModelFacts& facts,
                                                       const InputShapes& overrides,
                                                       std::string* ones_note) {
  OnesNote ones;
  std::set<std::string> names;
  for (const ValueInfo& input : facts.inputs) names.insert(input.name);
  for (const auto& [name, dims] : overrides) {
    if (!names.count(name)) {
      throw invalid(
          fmt::format("--input-shapes names '{}', which is not an input of the model "
                      "(inputs: {})",
                      name, names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
    }
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const ValueInfo& input : facts.inputs) {
    check_generatable(input);
    std::vector<int64_t> shape;
    auto it = overrides.find(input.name);
    if (it != overrides.end()) {
      shape = it->second;
      if (input.has_shape) {
        if (input.dims.size() != shape.size()) {
          throw invalid(fmt::format("input '{}' has rank {} {}, --input-shapes gives rank {} ({})",
                                    input.name, input.dims.size(), model_dims_string(input),
                                    shape.size(), shape_to_string(shape)));
        }
        for (size_t i = 0; i < shape.size(); ++i) {
          if (input.dims[i].known() && input.dims[i].value != shape[i]) {
            throw invalid(fmt::format(
                "input '{}' has dim {} fixed at {} {}, --input-shapes gives "
                "{}",
                input.name, i, input.dims[i].value, model_dims_string(input), shape[i]));
          }
        }
      }
    } else {
      if (!input.has_shape) {
        throw invalid(
            fmt::format("input '{}' has no shape in the model: give --input-shapes "
                        "{}:<dims>",
                        input.name, input.name));
      }
      OnesShape at_one = symbolic_dims_at_one(input);
      if (!at_one.symbolic.empty() && !ones_note) {
        throw invalid(fmt::format("input '{}' has symbolic dims [{}]: give --input-shapes {}:{}",
                                  input.name, fmt::join(at_one.symbolic, ", "), input.name,
                                  fmt::join(at_one.shape, "x")));
      }
      ones.add(input.name, at_one);
      shape = std::move(at_one.shape);
    }
    check_size(input, shape);
    shapes.push_back(std::move(shape));
  }
  if (ones_note) *ones_note = ones.text();
  return shapes;
}

std::vector<HostTensor> generate_inputs(const ModelFacts& facts,
                                        const std::vector<std::vector<int64_t>>& shapes,
                                        uint64_t seed) {
  if (shapes.size() != facts.inputs.size()) {
    throw invalid(fmt::format("{} input shapes given for a model with {} inputs", shapes.size(),
                              facts.inputs.size()));
  }
  std::vector<HostTensor> tensors;
  tensors.reserve(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ValueInfo& input = facts.inputs[i];
    check_generatable(input);
    check_size(input, shapes[i]);
    // Keyed by name, so one input's data does not change when others are added or reordered.
    SplitMix64 rng(seed ^ fnv1a64(input.name));
    const auto make_tensor = [&] {
      HostTensor t;
      t.name = input.name;
      t.dtype = input.dtype;
      t.shape = shapes[i];
      try {
        t.data.resize(static_cast<size_t>(t.element_count()) * dtype_size_bytes(t.dtype));
      } catch (const std::bad_alloc&) {
        throw invalid(fmt::format("input '{}' of shape {}: out of memory", input.name,
                                  shape_to_string(t.shape)));
      }
      if (is_mask(input.name) && t.dtype != DType::String) {
        fill_ones(t);
      } else {
        fill_tensor(t, rng, integer_bound(input));
      }
      return t;
    };
    // Layers from the inside out: a sequence of kGeneratedSequenceLength tensors, an optional
    // that holds its value.
    HostTensor value = make_tensor();
    for (auto layer = input.layers.rbegin(); layer != input.layers.rend(); ++layer) {
      HostTensor outer;
      outer.name = input.name;
      outer.kind = *layer;
      outer.dtype = input.dtype;
      outer.elements.push_back(std::move(value));
      while (outer.kind == ValueKind::Sequence &&
             outer.elements.size() < kGeneratedSequenceLength) {
        outer.elements.push_back(make_tensor());
      }
      value = std::move(outer);
    }
    tensors.push_back(std::move(value));
  }
  return tensors;
}

uint16_t float_to_half(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000);
  const uint32_t abs = f & 0x7fffffff;
  if (abs >= 0x7f800000) {  // inf, or NaN kept quiet with its top payload bits
    return sign | (abs > 0x7f800000 ? static_cast<uint16_t>(0x7e00 | ((abs >> 13) & 0x3ff))
                                    : uint16_t{0x7c00});
  }
  if (abs >= 0x477ff000) return sign | 0x7c00;  // >= 65520 rounds past 65504, the largest half
  if (abs >= 0x38800000) {                      // normal half: rebias exponent 127 -> 15
    uint32_t r = abs - 0x38000000;
    uint32_t h = r >> 13;
    uint32_t rem = r & 0x1fff;
    // Round to nearest even; a carry out of the mantissa correctly bumps the exponent.
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
    return sign | static_cast<uint16_t>(h);
  }
  if (abs <= 0x33000000) return sign;  // <= 2^-25: rounds to (signed) zero
  // Subnormal half: units of 2^-24.
  const uint32_t mantissa = (abs & 0x7fffff) | 0x800000;
  const int shift = 126 - static_cast<int>(abs >> 23);
  uint32_t h = mantissa >> shift;
  const uint32_t rem = mantissa & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (h & 1))) ++h;
  return sign | static_cast<uint16_t>(h);
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000 | (mantissa << 13));
  if (exponent == 0) {
    // Subnormal (or zero): value = mantissa * 2^-24, exact in binary32.
    float v = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

}  // namespace turnkey::onnx_model
