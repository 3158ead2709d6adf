// The output comparison of src/transforms/ (compare_models, compare_outputs with tied scores) and the
// check of outputs that carry no signal, on models the factory builds.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "build_stages_support.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/transforms/transforms.h"
#include "turnkey/common/error.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey {
namespace {

namespace fs = std::filesystem;
using build_test::expect_error;
using build_test::read_model;
using test::TempDir;

// ---- compare_models -----------------------------------------------------------------------------

TEST(CompareModels, FlagsADifferentModel) {
  TempDir dir;
  test::linear_relu(dir / "a.onnx");
  onnx::ModelProto model = read_model(dir / "a.onnx");
  auto* b = model.mutable_graph()->mutable_initializer(1);
  ASSERT_EQ(b->name(), "B");
  std::string raw = b->raw_data();
  float f;
  std::memcpy(&f, raw.data(), 4);
  f += 1.0f;  // one output element moves by 1 (before Relu; the bias is small)
  std::memcpy(raw.data(), &f, 4);
  b->set_raw_data(raw);
  test::save_model(model, dir / "b.onnx");
  transforms::Comparison same = transforms::compare_models(dir / "a.onnx", dir / "a.onnx");
  EXPECT_TRUE(same.within);
  EXPECT_EQ(same.worst_rel_error, 0.0);
  transforms::Comparison c = transforms::compare_models(dir / "a.onnx", dir / "b.onnx");
  EXPECT_FALSE(c.within);
  EXPECT_GT(c.worst_rel_error, 1e-2);
}

TEST(CompareModels, NeedsShapesForSymbolicDims) {
  TempDir dir;
  test::symbolic_dim(dir / "s.onnx");
  expect_error([&] { transforms::compare_models(dir / "s.onnx", dir / "s.onnx"); },
               ErrorKind::InvalidInput, "symbolic");
  transforms::CompareOptions options;
  options.shapes = {{"x", {3, 16}}};
  EXPECT_TRUE(transforms::compare_models(dir / "s.onnx", dir / "s.onnx", options).within);
}

TEST(CompareOutputs, HostTensorsWithinToleranceAndAlteredOnesNot) {
  auto tensor = [](std::vector<float> v) {
    HostTensor t;
    t.name.push_back('y');  // (assigning a literal trips GCC 12's -Wrestrict false positive)
    t.dtype = DType::Float32;
    t.shape = {static_cast<int64_t>(v.size())};
    t.data.resize(v.size() * 4);
    std::memcpy(t.data.data(), v.data(), t.data.size());
    return t;
  };
  const transforms::Tolerance tol{1e-3, 0.9999};
  transforms::Comparison same = transforms::compare_outputs({tensor({1, -2, 3})}, {tensor({1, -2, 3})}, tol);
  EXPECT_TRUE(same.within);
  EXPECT_EQ(same.outputs[0].max_abs_error, 0);
  transforms::Comparison close =
      transforms::compare_outputs({tensor({1, -2, 3})}, {tensor({1.0001f, -2, 3})}, tol);
  EXPECT_TRUE(close.within);
  transforms::Comparison altered =
      transforms::compare_outputs({tensor({1, -2, 3})}, {tensor({1.5f, -2.75f, 4.75f})}, tol);
  EXPECT_FALSE(altered.within);
  EXPECT_NEAR(altered.outputs[0].max_abs_error, 1.75, 1e-6);
  EXPECT_NEAR(altered.worst_rel_error, 1.75 / 3, 1e-6);
  transforms::Comparison shape = transforms::compare_outputs({tensor({1, 2})}, {tensor({1, 2, 3})}, tol);
  EXPECT_FALSE(shape.within);
  EXPECT_TRUE(shape.outputs[0].shape_mismatch);
  EXPECT_EQ(shape.outputs[0].shape_note, "output 'y' has shape 3 where the reference has 2");
  // Dims of size 1 apart (OpenCV 4.6 gives a 1-D output as Nx1): the same elements, compared.
  HostTensor column = tensor({1, -2, 3});
  column.shape = {3, 1};
  transforms::Comparison unit = transforms::compare_outputs({tensor({1, -2, 3})}, {column}, tol);
  EXPECT_TRUE(unit.within);
  EXPECT_FALSE(unit.outputs[0].shape_mismatch);
  EXPECT_EQ(unit.outputs[0].shape_note,
            "output 'y' has shape 3x1 where the reference has 3: the same elements, compared in "
            "order");
  column = tensor({1, -2, 3, 4});
  column.shape = {2, 2};  // the same count, another layout: a mismatch
  EXPECT_FALSE(transforms::compare_outputs({tensor({1, -2, 3, 4})}, {column}, tol).within);
  try {
    transforms::compare_outputs({tensor({1})}, {tensor({1}), tensor({2})}, tol);
    FAIL() << "a different output count was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NumericMismatch);
  }
}

// Detections as torchvision returns them: rows sorted by score, with boxes and labels of the
// same result (`output[0][...]`).
struct Detections {
  std::vector<float> boxes;  // 4 per row
  std::vector<int64_t> labels;
  std::vector<float> scores;  // sorted, descending

  std::vector<HostTensor> tensors(const std::string& result = "output[0]") const {
    const auto rows = static_cast<int64_t>(scores.size());
    auto make = [&](const std::string& key, DType dtype, std::vector<int64_t> shape,
                    const void* data, size_t bytes) {
      HostTensor t;
      t.name = result + "['" + key + "']";
      t.dtype = dtype;
      t.shape = std::move(shape);
      t.data.resize(bytes);
      std::memcpy(t.data.data(), data, bytes);
      return t;
    };
    return {make("boxes", DType::Float32, {rows, 4}, boxes.data(), boxes.size() * 4),
            make("labels", DType::Int64, {rows}, labels.data(), labels.size() * 8),
            make("scores", DType::Float32, {rows}, scores.data(), scores.size() * 4)};
  }
  void swap_rows(size_t a, size_t b) {
    for (int k = 0; k < 4; ++k) std::swap(boxes[a * 4 + k], boxes[b * 4 + k]);
    std::swap(labels[a], labels[b]);
    std::swap(scores[a], scores[b]);
  }
};

Detections five_detections() {
  return {{10, 10, 50, 50, 20, 30, 80, 90, 0, 0, 100, 100, 5, 5, 15, 25, 60, 60, 200, 210},
          {3, 7, 7, 1, 9},
          {0.9f, 0.75f, 0.7499f, 0.5f, 0.2f}};
}

TEST(CompareOutputs, RowsSwappedAmongTiedScoresAreTheSameDetections) {
  const transforms::Tolerance tol{1e-3, 0.9999};
  const Detections ref = five_detections();
  Detections cand = ref;
  cand.swap_rows(1, 2);  // 0.75 and 0.7499 tie within 1e-3 of the largest score
  std::swap(cand.scores[1], cand.scores[2]);  // sorted again, as a runtime returns them
  transforms::Comparison c = transforms::compare_outputs(ref.tensors(), cand.tensors(), tol);
  EXPECT_TRUE(c.within);
  EXPECT_FALSE(c.inconclusive);
  EXPECT_EQ(c.reordered_rows, 2);
  EXPECT_EQ(c.substituted_rows, 0);
  EXPECT_EQ(c.outputs[0].max_abs_error, 0);  // boxes compared row to matched row
  EXPECT_EQ(transforms::describe_ties(c), "2 of 5 rows in another order among tied scores");
}

TEST(CompareOutputs, RowsSwappedAcrossDistinctScoresAreAMismatch) {
  const transforms::Tolerance tol{1e-3, 0.9999};
  const Detections ref = five_detections();
  Detections cand = ref;
  cand.swap_rows(0, 3);  // 0.9 and 0.5: an order no tie explains
  std::swap(cand.scores[0], cand.scores[3]);
  transforms::Comparison c = transforms::compare_outputs(ref.tensors(), cand.tensors(), tol);
  EXPECT_FALSE(c.within);
  EXPECT_EQ(c.reordered_rows, 0);
  EXPECT_EQ(transforms::describe_ties(c), "");
}

TEST(CompareOutputs, OtherRowsWithTiedScoresAreInconclusiveAndOthersAMismatch) {
  const transforms::Tolerance tol{1e-3, 0.9999};
  const Detections ref = five_detections();
  Detections tied = ref;  // the runtime kept another box of (almost) the same score
  tied.boxes[2 * 4] = 33;
  tied.labels[2] = 4;
  tied.scores[2] = 0.74985f;
  transforms::Comparison c = transforms::compare_outputs(ref.tensors(), tied.tensors(), tol);
  EXPECT_TRUE(c.within);
  EXPECT_TRUE(c.inconclusive);
  EXPECT_EQ(c.substituted_rows, 1);
  EXPECT_EQ(c.outputs[1].substituted_rows, 1);
  EXPECT_EQ(transforms::describe_ties(c), "1 of 5 rows other than the reference's, with tied scores");

  Detections wrong = ref;  // another box where no score ties: a wrong output
  wrong.boxes[0] = 33;
  wrong.labels[0] = 4;
  c = transforms::compare_outputs(ref.tensors(), wrong.tensors(), tol);
  EXPECT_FALSE(c.within);
  EXPECT_FALSE(c.inconclusive);

  Detections moved = ref;  // same labels and scores, the box of the untied top score moved
  moved.boxes[1] += 40;
  c = transforms::compare_outputs(ref.tensors(), moved.tensors(), tol);
  EXPECT_FALSE(c.within);

  // Where the score ties with its neighbour's, a moved box could be another detection of that
  // score: not a pass, but not provably wrong either.
  moved = ref;
  moved.boxes[1 * 4 + 1] += 40;
  c = transforms::compare_outputs(ref.tensors(), moved.tensors(), tol);
  EXPECT_TRUE(c.within);
  EXPECT_TRUE(c.inconclusive);
}

TEST(CompareOutputs, TiesAreResolvedPerResultAndOnlyWhereAScoreOrdersTheRows) {
  const transforms::Tolerance tol{1e-3, 0.9999};
  // Two images with five detections each: a swap in image 1 is matched within image 1 only.
  const Detections ref = five_detections();
  Detections cand = ref;
  cand.swap_rows(1, 2);
  std::swap(cand.scores[1], cand.scores[2]);
  std::vector<HostTensor> two_ref = ref.tensors("output[0]"), two_cand = ref.tensors("output[0]");
  for (HostTensor& t : ref.tensors("output[1]")) two_ref.push_back(std::move(t));
  for (HostTensor& t : cand.tensors("output[1]")) two_cand.push_back(std::move(t));
  transforms::Comparison c = transforms::compare_outputs(two_ref, two_cand, tol);
  EXPECT_TRUE(c.within);
  EXPECT_EQ(c.reordered_rows, 2);
  EXPECT_EQ(c.outputs[0].reordered_rows, 0);  // image 0 untouched
  EXPECT_EQ(c.outputs[3].reordered_rows, 2);

  // Unsorted scores order nothing: the same swap is a mismatch.
  Detections unsorted = ref;
  std::swap(unsorted.scores[0], unsorted.scores[4]);
  Detections unsorted_cand = unsorted;
  unsorted_cand.swap_rows(1, 2);
  c = transforms::compare_outputs(unsorted.tensors(), unsorted_cand.tensors(), tol);
  EXPECT_FALSE(c.within);
}

}  // namespace
}  // namespace turnkey

// ---- Outputs that carry no signal (issue 18) -------------------------------------------------

namespace turnkey::transforms {
namespace {

namespace fs = std::filesystem;
using build_test::large_external_linear;
using test::TempDir;

HostTensor floats(const std::vector<float>& values, std::vector<int64_t> shape) {
  HostTensor t;  // unnamed: the check reads values only
  t.dtype = DType::Float32;
  t.shape = std::move(shape);
  t.data.resize(values.size() * 4);
  // No values, no buffer: data() may be null, which memcpy must not see (UBSan: nonnull).
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

TEST(NoSignal, EmptyZeroConstantAndNonFiniteOutputsCarryNone) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(no_signal_reason({floats({}, {0, 4})}), "every output is empty");
  EXPECT_EQ(no_signal_reason({}), "every output is empty");
  EXPECT_EQ(no_signal_reason({floats({0, 0, -0.0f, 0}, {1, 4})}), "every output is all zeros");
  EXPECT_EQ(no_signal_reason({floats({0.5f, 0.5f}, {2}), floats({}, {0})}),
            "every output is empty or constant");
  EXPECT_EQ(no_signal_reason({floats({nan, nan}, {2})}), "every output is empty");
  // One varying element anywhere is signal; a NaN beside varying values does not hide it.
  EXPECT_EQ(no_signal_reason({floats({0, 0}, {2}), floats({1, nan, 2}, {3})}), "");
  HostTensor ints;
  ints.dtype = DType::Int64;
  ints.shape = {2};
  ints.data.resize(16);
  EXPECT_EQ(no_signal_reason({ints}), "every output is all zeros");
  ints.data[8] = std::byte{3};
  EXPECT_EQ(no_signal_reason({ints}), "");
}

// A one-element output is what a reduction, an index or a loss computes: a comparison of it
// checks that computation (issue 35). Strings and sequences carry signal as their contents do.
TEST(NoSignal, OneElementStringsAndSequences) {
  EXPECT_EQ(no_signal_reason({floats({0}, {1})}), "");
  EXPECT_EQ(no_signal_reason({floats({0.5f}, {})}), "");
  HostTensor s;
  s.dtype = DType::String;
  s.shape = {2};
  s.strings = {"a", "a"};
  EXPECT_EQ(no_signal_reason({s}), "every output is empty or constant");
  s.strings[1] = "b";
  EXPECT_EQ(no_signal_reason({s}), "");
  HostTensor seq;
  seq.kind = ValueKind::Sequence;
  seq.elements = {floats({0, 0}, {2}), floats({0, 0}, {2})};
  EXPECT_EQ(no_signal_reason({seq}), "every output is all zeros");
  seq.elements[1] = floats({1, 2}, {2});
  EXPECT_EQ(no_signal_reason({seq}), "");
}

// Subnormal float32 numbers keep fewer bits at each step and a runtime may flush them to zero: a
// randomly initialised MobileViT's outputs (~2.5e-39) differed from ONNX Runtime's by 6e-41,
// 2.4% of their largest, and were reported as a mismatch. They read as zero on both sides and
// carry no signal; a normal value beside them is still compared and still signal.
TEST(NoSignal, SubnormalOutputsReadAsZeroAndCarryNone) {
  const float tiny = std::numeric_limits<float>::min();  // the smallest normal float32
  const std::vector<float> ref = {2.5e-39f, -1.2e-39f, 0, 7e-42f};
  const std::vector<float> runtime = {2.44e-39f, 0, 0, 0};
  Comparison c = compare_outputs({floats(ref, {4})}, {floats(runtime, {4})}, {1e-3, 0.9999});
  EXPECT_TRUE(c.within);
  EXPECT_EQ(c.outputs[0].max_abs_error, 0);
  EXPECT_EQ(no_signal_reason({floats(ref, {4})}),
            "every output is zero or subnormal, below its type's smallest normal number, where "
            "runtimes may flush values to zero");
  EXPECT_EQ(no_signal_reason({floats(ref, {4}), floats({0, 0}, {2})}),
            "every output is zero or subnormal, below its type's smallest normal number, where "
            "runtimes may flush values to zero");
  // The smallest normal number is signal, and a normal value is compared as before.
  EXPECT_EQ(no_signal_reason({floats({tiny, 0}, {2})}), "");
  EXPECT_FALSE(compare_outputs({floats({1, 2.5e-39f}, {2})}, {floats({1.5f, 0}, {2})},
                               {1e-3, 0.9999})
                   .within);
}

// Strings compare exactly; sequences tensor by tensor once their lengths agree; an optional with
// a value is that value; bfloat16 outputs are held to their own rounding (issue 35).
TEST(CompareOutputs, StringsSequencesOptionalsAndBfloat16) {
  HostTensor a;
  a.name = "s";
  a.dtype = DType::String;
  a.shape = {2};
  a.strings = {"x", "y"};
  HostTensor b = a;
  EXPECT_TRUE(compare_outputs({a}, {b}, {}).within);
  b.strings[1] = "z";
  Comparison c = compare_outputs({a}, {b}, {});
  EXPECT_FALSE(c.within);
  EXPECT_EQ(c.outputs[0].mismatches, 1);

  HostTensor ref;
  ref.name = "seq";
  ref.kind = ValueKind::Sequence;
  ref.dtype = DType::Float32;
  ref.elements = {floats({1, 2}, {2}), floats({3}, {1})};
  HostTensor cand = ref;
  EXPECT_TRUE(compare_outputs({ref}, {cand}, {}).within);
  cand.elements[1] = floats({3.5f}, {1});
  c = compare_outputs({ref}, {cand}, {});
  EXPECT_FALSE(c.within);
  ASSERT_EQ(c.outputs.size(), 2u);
  EXPECT_EQ(c.outputs[1].name, "seq[1]");
  cand.elements.pop_back();
  c = compare_outputs({ref}, {cand}, {});
  EXPECT_FALSE(c.within);
  EXPECT_EQ(c.outputs.back().shape_note,
            "output 'seq' is a sequence of 1 where the reference is a sequence of 2");
  HostTensor opt;
  opt.name = "seq";
  opt.kind = ValueKind::Optional;
  opt.elements = {ref};
  EXPECT_TRUE(compare_outputs({opt}, {ref}, {}).within);
  opt.elements.clear();
  EXPECT_FALSE(compare_outputs({opt}, {ref}, {}).within);

  // 1.0 and 1.0078125 (one bfloat16 step) against a float32 reference of 1.0 and 1.004.
  HostTensor bf;
  bf.name = "y";
  bf.dtype = DType::BFloat16;
  bf.shape = {2};
  bf.data = {std::byte{0x80}, std::byte{0x3f}, std::byte{0x81}, std::byte{0x3f}};
  EXPECT_TRUE(compare_outputs({floats({1.0f, 1.004f}, {2})}, {bf}, {1e-3, 0.9999}).within);
  EXPECT_FALSE(compare_outputs({floats({1.0f, 1.02f}, {2})}, {bf}, {1e-3, 0.9999}).within);
}

TEST(NoSignal, ACheckModelOutputsTheNamedIntermediateValuesAfterItsOwn) {
  test::TempDir dir;
  test::small_conv_net(dir / "net.onnx");
  add_graph_outputs(dir / "net.onnx", dir / "check.onnx", {"relu", "pool"},
                    {DType::Float32, DType::Float32});
  onnx_model::ModelFacts facts = onnx_model::load_facts(dir / "check.onnx");
  ASSERT_EQ(facts.outputs.size(), 3u);
  EXPECT_EQ(facts.outputs[0].name, "output");
  EXPECT_EQ(facts.outputs[1].name, "relu");
  EXPECT_EQ(facts.outputs[2].name, "pool");
  // The original is untouched.
  EXPECT_EQ(onnx_model::load_facts(dir / "net.onnx").outputs.size(), 1u);
  // A value the graph does not have, and one that is an output already, are refused.
  EXPECT_THROW(add_graph_outputs(dir / "net.onnx", dir / "bad.onnx", {"nope"}, {}), Error);
  EXPECT_THROW(add_graph_outputs(dir / "net.onnx", dir / "bad.onnx", {"output"}, {}), Error);
  EXPECT_FALSE(fs::exists(dir / "bad.onnx"));
}

// A model with external data: the check model is its graph alone, the data files copied beside
// it (not hard links, which ONNX's checker refuses), and ONNX Runtime runs it.
TEST(NoSignal, ACheckModelOfAModelWithExternalDataCopiesItsWeights) {
  TempDir dir;
  large_external_linear(dir);
  fs::create_directories(dir / "check");
  add_graph_outputs(dir / "m.onnx", dir / "check" / "c.onnx", {"mm"}, {DType::Float32});
  struct stat a {
  }, b{};
  ASSERT_EQ(stat((dir / "w.bin").c_str(), &a), 0);
  ASSERT_EQ(stat((dir / "check" / "w.bin").c_str(), &b), 0);
  EXPECT_NE(a.st_ino, b.st_ino);
  EXPECT_EQ(b.st_nlink, 1u);
  EXPECT_EQ(fs::file_size(dir / "check" / "w.bin"), fs::file_size(dir / "w.bin"));
  EXPECT_LT(fs::file_size(dir / "check" / "c.onnx"), 4096u);  // the graph, not the 16 KiB of W
  const CheckVerdict v = check_onnx(dir / "check" / "c.onnx");
  EXPECT_TRUE(v.passed) << v.stage << ": " << v.reason;
  EXPECT_EQ(onnx_model::load_facts(dir / "check" / "c.onnx").outputs.size(), 2u);
}

}  // namespace
}  // namespace turnkey::transforms
