#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "turnkey/common/error.h"
#include "turnkey/common/sha256.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey::onnx_model {
namespace {

template <typename F>
std::string expect_invalid(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
    std::string what = e.what();
    EXPECT_NE(what.find(needle), std::string::npos) << "'" << what << "' lacks '" << needle << "'";
    return what;
  }
  ADD_FAILURE() << "no Error thrown; expected one containing '" << needle << "'";
  return "";
}

ValueInfo input(const std::string& name, DType dtype, std::vector<int64_t> dims,
                const std::string& onnx_type = "") {
  ValueInfo v;
  v.name = name;
  v.dtype = dtype;
  v.onnx_type = onnx_type.empty() ? dtype_name(dtype) : onnx_type;
  v.has_shape = true;
  for (int64_t d : dims) {
    Dim dim;
    dim.value = d;
    v.dims.push_back(dim);
  }
  return v;
}

ModelFacts facts_with(std::vector<ValueInfo> inputs) {
  ModelFacts f;
  f.inputs = std::move(inputs);
  return f;
}

template <typename T>
std::vector<T> values_of(const HostTensor& t) {
  std::vector<T> v(static_cast<size_t>(t.element_count()));
  EXPECT_EQ(t.data.size(), v.size() * sizeof(T));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

std::string hash_of(const HostTensor& t) {
  Sha256 h;
  h.update(t.data.data(), t.data.size());
  return h.hex_digest();
}

// --- parse_input_shapes ---

TEST(ParseInputShapes, Valid) {
  EXPECT_EQ(parse_input_shapes("x:1x16"), (InputShapes{{"x", {1, 16}}}));
  EXPECT_EQ(parse_input_shapes(" a:1x3x224x224 , b:1X128 "),
            (InputShapes{{"a", {1, 3, 224, 224}}, {"b", {1, 128}}}));
  // TensorFlow-style names carry a ':'; the last one separates the dims.
  EXPECT_EQ(parse_input_shapes("input:0:1x16"), (InputShapes{{"input:0", {1, 16}}}));
  EXPECT_EQ(parse_input_shapes("ids:7"), (InputShapes{{"ids", {7}}}));
  EXPECT_TRUE(parse_input_shapes("").empty());
  EXPECT_TRUE(parse_input_shapes("  ").empty());
}

TEST(ParseInputShapes, Errors) {
  expect_invalid([] { parse_input_shapes("x"); }, "'x' has no ':'");
  expect_invalid([] { parse_input_shapes("x:"); }, "'' in 'x:' is not a dim");
  expect_invalid([] { parse_input_shapes(":1x2"); }, "has no input name");
  expect_invalid([] { parse_input_shapes("x:1xx2"); }, "is not a dim");
  expect_invalid([] { parse_input_shapes("x:0x2"); },
                 "'0' in 'x:0x2' is not a dim (an integer >= 1)");
  expect_invalid([] { parse_input_shapes("x:-1"); }, "is not a dim");
  expect_invalid([] { parse_input_shapes("x:1.5"); }, "'1.5' in 'x:1.5' is not a dim");
  expect_invalid([] { parse_input_shapes("x:99999999999999999999"); }, "is not a dim");
  expect_invalid([] { parse_input_shapes("x:1,x:2"); }, "input 'x' is given twice");
  expect_invalid([] { parse_input_shapes("x:1,,y:2"); }, "empty entry");
  expect_invalid([] { parse_input_shapes("x:1,"); }, "empty entry");
  // Every message says what a valid spec looks like.
  expect_invalid([] { parse_input_shapes("x"); }, "e.g. input:1x3x224x224");
}

// --- resolve_input_shapes ---

TEST(ResolveInputShapes, FixedShapesPassThroughInOrder) {
  ModelFacts f = facts_with({input("b", DType::Float32, {1, 3}), input("a", DType::Int64, {2})});
  EXPECT_EQ(resolve_input_shapes(f, {}), (std::vector<std::vector<int64_t>>{{1, 3}, {2}}));
  // An override that agrees with fixed dims is fine.
  EXPECT_EQ(resolve_input_shapes(f, {{"a", {2}}}),
            (std::vector<std::vector<int64_t>>{{1, 3}, {2}}));
}

TEST(ResolveInputShapes, UngeneratableTypes) {
  ModelFacts f = facts_with({input("s", DType::Unknown, {1}, "COMPLEX64")});
  expect_invalid([&] { resolve_input_shapes(f, {}); },
                 "input 's' has type COMPLEX64, which turnkey cannot generate");
  ValueInfo seq;
  seq.name = "q";
  seq.onnx_type = "SEQUENCE";
  expect_invalid([&] { resolve_input_shapes(facts_with({seq}), {}); },
                 "input 'q' has type SEQUENCE, which turnkey cannot generate");
}

TEST(ResolveInputShapes, NoShapeAtAll) {
  ValueInfo v = input("x", DType::Float32, {});
  v.has_shape = false;
  ModelFacts f = facts_with({v});
  expect_invalid([&] { resolve_input_shapes(f, {}); },
                 "input 'x' has no shape in the model: give --input-shapes x:<dims>");
  EXPECT_EQ(resolve_input_shapes(f, {{"x", {2, 2}}}), (std::vector<std::vector<int64_t>>{{2, 2}}));
}

TEST(ResolveInputShapes, SymbolicDimsNamedAndUnnamed) {
  ValueInfo v = input("tokens", DType::Int64, {-1, 128, -1});
  v.dims[0].param = "batch";
  ModelFacts f = facts_with({v});
  expect_invalid([&] { resolve_input_shapes(f, {}); },
                 "input 'tokens' has symbolic dims [batch, ?]: give --input-shapes tokens:1x128x1");
  EXPECT_EQ(resolve_input_shapes(f, {{"tokens", {2, 128, 5}}}),
            (std::vector<std::vector<int64_t>>{{2, 128, 5}}));
}

// The symbolic->1 step both --input-shapes resolution and --batch-sizes take: every symbolic dim
// at 1, named from `from_dim` on (an unnamed one as "?"), and one note over the inputs given.
TEST(SymbolicDimsAtOne, OneStepForShapesAndBatches) {
  ValueInfo tokens = input("tokens", DType::Int64, {-1, 128, -1});
  tokens.dims[0].param = "batch";
  OnesShape all = symbolic_dims_at_one(tokens);
  EXPECT_EQ(all.shape, (std::vector<int64_t>{1, 128, 1}));
  EXPECT_EQ(all.symbolic, (std::vector<std::string>{"batch", "?"}));
  OnesShape after_batch = symbolic_dims_at_one(tokens, 1);
  EXPECT_EQ(after_batch.shape, (std::vector<int64_t>{1, 128, 1}));
  EXPECT_EQ(after_batch.symbolic, (std::vector<std::string>{"?"}));
  const OnesShape fixed = symbolic_dims_at_one(input("scale", DType::Float32, {4, 2}));
  EXPECT_EQ(fixed.shape, (std::vector<int64_t>{4, 2}));
  EXPECT_TRUE(fixed.symbolic.empty());

  OnesNote note;
  EXPECT_EQ(note.text(), "");
  note.add("scale", fixed);  // nothing symbolic: not named
  EXPECT_EQ(note.text(), "");
  note.add("tokens", all);
  note.add("mask", symbolic_dims_at_one(input("mask", DType::Int64, {-1})));
  EXPECT_EQ(note.text(),
            "symbolic dims set to 1: input 'tokens' [batch, ?], input 'mask' [?] (choose with "
            "--input-shapes tokens:1x128x1,mask:1)");
}

// Issue 17: with a note to fill, symbolic dims left without an override become 1 and the note
// names each input and its dims on one line; overridden inputs are not named.
TEST(ResolveInputShapes, SymbolicDimsAsOnesWithANote) {
  ValueInfo tokens = input("tokens", DType::Int64, {-1, 128, -1});
  tokens.dims[0].param = "batch";
  ValueInfo mask = input("mask", DType::Int64, {-1, 128});
  mask.dims[0].param = "batch";
  ValueInfo fixed = input("scale", DType::Float32, {1});
  ModelFacts f = facts_with({tokens, mask, fixed});
  std::string note = "stale";
  EXPECT_EQ(resolve_input_shapes(f, {}, &note),
            (std::vector<std::vector<int64_t>>{{1, 128, 1}, {1, 128}, {1}}));
  EXPECT_EQ(note,
            "symbolic dims set to 1: input 'tokens' [batch, ?], input 'mask' [batch] (choose with "
            "--input-shapes tokens:1x128x1,mask:1x128)");
  EXPECT_EQ(note.find('\n'), std::string::npos);
  EXPECT_EQ(resolve_input_shapes(f, {{"tokens", {2, 128, 3}}}, &note),
            (std::vector<std::vector<int64_t>>{{2, 128, 3}, {1, 128}, {1}}));
  EXPECT_EQ(note,
            "symbolic dims set to 1: input 'mask' [batch] (choose with --input-shapes "
            "mask:1x128)");
  EXPECT_EQ(resolve_input_shapes(f, {{"tokens", {2, 128, 3}}, {"mask", {2, 128}}}, &note).size(),
            3u);
  EXPECT_EQ(note, "");
  // Without a note the dims stay an error, as before.
  expect_invalid([&] { resolve_input_shapes(f, {}); }, "input 'tokens' has symbolic dims");
}

TEST(ResolveInputShapes, RefusesHugeShapes) {
  ModelFacts f = facts_with({input("x", DType::Float32, {1000000, 1000000})});
  expect_invalid([&] { resolve_input_shapes(f, {}); }, "input 'x' of shape 1000000x1000000");
  ModelFacts g = facts_with({input("x", DType::Float32, {-1, 8})});
  expect_invalid(
      [&] {
        resolve_input_shapes(g, {{"x", {int64_t{1} << 62, 8}}});
      },
      "needs more than the 4 GB");
}

// --- generate_inputs ---

TEST(GenerateInputs, DeterministicAndSeeded) {
  ModelFacts f =
      facts_with({input("x", DType::Float32, {4, 64}), input("ids", DType::Int64, {1, 32})});
  auto shapes = resolve_input_shapes(f, {});
  auto a = generate_inputs(f, shapes);
  auto b = generate_inputs(f, shapes);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].data, b[0].data);
  EXPECT_EQ(a[1].data, b[1].data);
  EXPECT_EQ(a[0].name, "x");
  EXPECT_EQ(a[0].shape, (std::vector<int64_t>{4, 64}));
  EXPECT_EQ(a[1].dtype, DType::Int64);
  auto c = generate_inputs(f, shapes, 42);
  EXPECT_NE(a[0].data, c[0].data);
  EXPECT_NE(a[1].data, c[1].data);
  // Keyed by name: reordering or adding inputs leaves each input's data alone.
  ModelFacts reordered = facts_with({input("new", DType::Float32, {3}), f.inputs[1], f.inputs[0]});
  auto r = generate_inputs(reordered, resolve_input_shapes(reordered, {}));
  EXPECT_EQ(r[2].data, a[0].data);
  EXPECT_EQ(r[1].data, a[1].data);
}

// Pinned bytes: any change to the generator (or a platform difference) shows up here. The values
// were cross-checked with an independent Python splitmix64 + fnv1a64.
TEST(GenerateInputs, GoldenBytes) {
  ModelFacts f =
      facts_with({input("x", DType::Float32, {1, 64}), input("ids", DType::Int64, {1, 16}),
                  input("h", DType::Float16, {32})});
  auto t = generate_inputs(f, resolve_input_shapes(f, {}));
  auto x = values_of<float>(t[0]);
  auto ids = values_of<int64_t>(t[1]);
  EXPECT_EQ(x[0], -0x1.4cd004p-1f);
  EXPECT_EQ(x[1], 0x1.92d51cp-1f);
  EXPECT_EQ(ids[0], 42);
  EXPECT_EQ(ids[1], 21);
  EXPECT_EQ(hash_of(t[0]), "83a3fcbce354602d72e74c5350ccf42f2286e0c9ccac7663f1a099469bab62f4");
  EXPECT_EQ(hash_of(t[1]), "63bbd79a6fca5cb6bea5cb5ea3520a2944b4a45e4294242ab83ccfd303dc0776");
  EXPECT_EQ(hash_of(t[2]), "b73aa0668dba75295b9bc20e50db9a267809c3ca4c470a23150234e90c18ea74");
}

TEST(GenerateInputs, RangesForEveryDtype) {
  ModelFacts f = facts_with({
      input("f32", DType::Float32, {10000}),
      input("f64", DType::Float64, {10000}),
      input("f16", DType::Float16, {10000}),
      input("i8", DType::Int8, {10000}),
      input("u8", DType::Uint8, {10000}),
      input("i16", DType::Int16, {10000}),
      input("i32", DType::Int32, {10000}),
      input("i64", DType::Int64, {10000}),
      input("b", DType::Bool, {10000}),
  });
  auto t = generate_inputs(f, resolve_input_shapes(f, {}));
  ASSERT_EQ(t.size(), 9u);
  auto check_float_range = [](const std::vector<double>& v, double hi_inclusive) {
    double lo = 1e9, hi = -1e9;
    for (double x : v) {
      ASSERT_GE(x, -1.0);
      ASSERT_LE(x, hi_inclusive);
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    // Spread over the whole interval, not stuck in a corner.
    EXPECT_LT(lo, -0.99);
    EXPECT_GT(hi, 0.99);
  };
  {
    auto v = values_of<float>(t[0]);
    std::vector<double> d(v.begin(), v.end());
    for (double x : d) ASSERT_LT(x, 1.0);
    check_float_range(d, 1.0);
  }
  {
    auto v = values_of<double>(t[1]);
    for (double x : v) ASSERT_LT(x, 1.0);
    check_float_range(v, 1.0);
  }
  {
    auto v = values_of<uint16_t>(t[2]);
    std::vector<double> d;
    for (uint16_t h : v) d.push_back(half_to_float(h));
    check_float_range(d, 1.0);  // rounding to half may reach 1.0 itself
  }
  auto check_ints = [](const std::vector<int64_t>& v) {
    std::vector<int> seen(100, 0);
    for (int64_t x : v) {
      ASSERT_GE(x, 0);
      ASSERT_LT(x, 100);
      ++seen[static_cast<size_t>(x)];
    }
    // 10000 draws over 100 values: every value appears (expected 100 times each).
    for (int k = 0; k < 100; ++k) EXPECT_GT(seen[static_cast<size_t>(k)], 50) << k;
  };
  auto widen = [](auto vec) { return std::vector<int64_t>(vec.begin(), vec.end()); };
  check_ints(widen(values_of<int8_t>(t[3])));
  check_ints(widen(values_of<uint8_t>(t[4])));
  check_ints(widen(values_of<int16_t>(t[5])));
  check_ints(widen(values_of<int32_t>(t[6])));
  check_ints(values_of<int64_t>(t[7]));
  auto bools = values_of<uint8_t>(t[8]);
  int ones = 0;
  for (uint8_t b : bools) {
    ASSERT_LE(b, 1);
    ones += b;
  }
  EXPECT_GT(ones, 4500);
  EXPECT_LT(ones, 5500);
}

// The types beyond the first nine (issue 35): unsigned integers in [0, 100), bfloat16 and the
// float8 types in (-1, 1) and never NaN, strings the decimal text of such integers; a sequence
// holds 2 tensors of the input's shape, an optional its value.
TEST(GenerateInputs, UnsignedBfloat16Float8StringsSequencesAndOptionals) {
  ModelFacts f =
      facts_with({input("u16", DType::Uint16, {1000}), input("u32", DType::Uint32, {1000}),
                  input("u64", DType::Uint64, {1000}), input("bf16", DType::BFloat16, {1000}),
                  input("s", DType::String, {1000}), input("e4m3", DType::Float8E4M3FN, {1000}),
                  input("e5m2fnuz", DType::Float8E5M2FNUZ, {1000}),
                  input("seq", DType::Float32, {2, 3}), input("opt", DType::Int64, {4})});
  f.inputs[7].layers = {ValueKind::Sequence};
  f.inputs[8].layers = {ValueKind::Optional};
  auto t = generate_inputs(f, resolve_input_shapes(f, {}));
  ASSERT_EQ(t.size(), 9u);
  for (uint16_t v : values_of<uint16_t>(t[0])) ASSERT_LT(v, 100);
  for (uint32_t v : values_of<uint32_t>(t[1])) ASSERT_LT(v, 100u);
  for (uint64_t v : values_of<uint64_t>(t[2])) ASSERT_LT(v, 100u);
  for (const size_t k : {3, 5, 6}) {
    SCOPED_TRACE(t[k].name);
    const size_t size = dtype_size_bytes(t[k].dtype);
    double lo = 1, hi = -1;
    for (int64_t i = 0; i < t[k].element_count(); ++i) {
      const double x = small_float_to_double(t[k].dtype, t[k].data.data() + i * size);
      ASSERT_TRUE(x > -1 && x < 1) << x;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    EXPECT_LT(lo, -0.5);
    EXPECT_GT(hi, 0.5);
  }
  ASSERT_EQ(t[4].strings.size(), 1000u);
  EXPECT_TRUE(t[4].data.empty());
  for (const std::string& v : t[4].strings) ASSERT_LT(std::stoi(v), 100) << v;
  EXPECT_EQ(t[7].kind, ValueKind::Sequence);
  ASSERT_EQ(t[7].elements.size(), 2u);
  EXPECT_EQ(t[7].elements[1].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_NE(t[7].elements[0].data, t[7].elements[1].data);
  EXPECT_EQ(t[8].kind, ValueKind::Optional);
  ASSERT_EQ(t[8].elements.size(), 1u);
  EXPECT_EQ(t[8].elements[0].dtype, DType::Int64);
}

// A one-element integer input is 0 for about 1 seed in 100; the generator must never hand a model
// an all-zero input.
TEST(GenerateInputs, NeverAllZeros) {
  ModelFacts f = facts_with({input("u8", DType::Uint8, {1}), input("b", DType::Bool, {1}),
                             input("i64", DType::Int64, {2})});
  auto shapes = resolve_input_shapes(f, {});
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    auto t = generate_inputs(f, shapes, seed);
    EXPECT_NE(values_of<uint8_t>(t[0])[0], 0) << seed;
    EXPECT_EQ(values_of<uint8_t>(t[1])[0], 1) << seed;
    auto v = values_of<int64_t>(t[2]);
    EXPECT_TRUE(v[0] != 0 || v[1] != 0) << seed;
  }
}

// What a model built from a tokenizer's output needs: masks of ones (every position attends),
// indices inside the table they index (token type ids into 2 rows), a one-row table's only index.
TEST(GenerateInputs, MasksAreOnesAndIndicesStayInsideTheirTable) {
  ValueInfo types = input("token_type_ids", DType::Int64, {64});
  types.index_bound = 2;
  ValueInfo only_row = input("segment", DType::Int32, {3});
  only_row.index_bound = 1;
  ValueInfo words = input("input_ids", DType::Int64, {64});
  words.index_bound = 30522;  // a table over 100 rows: the usual [0, 100)
  ModelFacts f = facts_with({types, only_row, words, input("attention_mask", DType::Int64, {64}),
                             input("pixel_mask", DType::Float32, {4}),
                             input("Decoder_Attention_Mask", DType::Bool, {3})});
  auto t = generate_inputs(f, resolve_input_shapes(f, {}), 5);
  const auto tt = values_of<int64_t>(t[0]);
  EXPECT_TRUE(std::all_of(tt.begin(), tt.end(), [](int64_t v) { return v == 0 || v == 1; }));
  EXPECT_NE(std::count(tt.begin(), tt.end(), 1), 0);  // both values occur in 64 draws
  EXPECT_NE(std::count(tt.begin(), tt.end(), 0), 0);
  EXPECT_EQ(values_of<int32_t>(t[1]), (std::vector<int32_t>{0, 0, 0}));
  const auto ids = values_of<int64_t>(t[2]);
  EXPECT_TRUE(std::all_of(ids.begin(), ids.end(), [](int64_t v) { return v >= 0 && v < 100; }));
  EXPECT_GT(*std::max_element(ids.begin(), ids.end()), 50);
  EXPECT_EQ(values_of<int64_t>(t[3]), std::vector<int64_t>(64, 1));
  EXPECT_EQ(values_of<float>(t[4]), std::vector<float>(4, 1.0f));
  EXPECT_EQ(values_of<uint8_t>(t[5]), std::vector<uint8_t>(3, 1));
}

TEST(GenerateInputs, Errors) {
  ModelFacts f = facts_with({input("x", DType::Float32, {2})});
  expect_invalid([&] { generate_inputs(f, {}); }, "0 input shapes given for a model with 1 inputs");
  expect_invalid([&] { generate_inputs(f, {{-2}}); }, "input 'x': negative dim");
  expect_invalid([&] { generate_inputs(f, {{int64_t{1} << 40}}); }, "needs more than the 4 GB");
  ModelFacts s = facts_with({input("s", DType::Unknown, {1}, "COMPLEX64")});
  expect_invalid([&] { generate_inputs(s, {{1}}); },
                 "input 's' has type COMPLEX64, which turnkey cannot generate");
  // Zero-sized dims from a model are legal: an empty tensor.
  auto empty = generate_inputs(f, {{0}});
  EXPECT_TRUE(empty[0].data.empty());
}

// --- float16 ---

TEST(Float16, KnownValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::pair<float, uint16_t> cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {0.5f, 0x3800},
      {0.1f, 0x2e66},
      {1.0f / 3.0f, 0x3555},
      {65504.0f, 0x7bff},
      {65519.0f, 0x7bff},
      {65520.0f, 0x7c00},
      {1e10f, 0x7c00},
      {-1e10f, 0xfc00},
      {inf, 0x7c00},
      {-inf, 0xfc00},
      {0x1p-14f, 0x0400},
      {0x1p-24f, 0x0001},
      {0x1p-25f, 0x0000},
      {0x1.8p-25f, 0x0001},
      {0x1p-26f, 0x0000},
      {-0x1p-24f, 0x8001},
      {0x1.ff8p-15f, 0x03ff},
      {0x1.ffcp-15f, 0x0400},         // largest subnormal + half a unit: ties up into the normals
      {1.0f + 0x1p-11f, 0x3c00},      // tie -> even mantissa
      {1.0f + 3 * 0x1p-11f, 0x3c02},  // tie -> even (up)
      {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01},  // just above the tie
      {2047.0f, 0x67ff},
      {4097.0f, 0x6c00},
      {-3.140625f, 0xc248},
  };
  for (const auto& [value, bits] : cases) {
    EXPECT_EQ(float_to_half(value), bits) << value;
  }
  EXPECT_EQ(float_to_half(std::nanf("")) & 0x7c00, 0x7c00);
  EXPECT_NE(float_to_half(std::nanf("")) & 0x03ff, 0);
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_EQ(half_to_float(0x7c00), inf);
  EXPECT_EQ(half_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
}

// Every half converts to a float and back to the same bits (NaNs stay NaN).
TEST(Float16, RoundTripsAllHalves) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = half_to_float(h);
    if (std::isnan(f)) {
      EXPECT_EQ(h & 0x7c00, 0x7c00);
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    ASSERT_EQ(float_to_half(f), h) << std::hex << bits;
  }
}

}  // namespace
}  // namespace turnkey::onnx_model
