// --input-data read against a model's graph (onnx/input_data.h): a folder of input_N.pb (with or
// without output_N.pb) and an .npz by name; every mismatch is one line naming the input, what the
// model takes and what the data holds.
#include <gtest/gtest.h>
#include <onnx/onnx-data_pb.h>

#include "turnkey/onnx/onnx_proto.h"

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/common/error.h"
#include "turnkey/onnx/input_data.h"
#include "turnkey/onnx/onnx_proto.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using onnx_model::InputData;
using onnx_model::read_input_data;

void write_pb(const fs::path& path, int elem_type, const std::vector<int64_t>& dims) {
  onnx::TensorProto t;
  t.set_data_type(elem_type);
  int64_t n = 1;
  for (int64_t d : dims) {
    t.add_dims(d);
    n *= d;
  }
  const size_t item =
      elem_type == onnx::TensorProto::DOUBLE || elem_type == onnx::TensorProto::INT64 ? 8 : 4;
  t.set_raw_data(std::string(static_cast<size_t>(n) * item, '\x01'));
  std::string bytes;
  ASSERT_TRUE(t.SerializeToString(&bytes));
  write_bytes(path, bytes);
}

std::string reason(const fs::path& data, const onnx_model::ModelFacts& facts,
                   const onnx_model::InputShapes& shapes = {}) {
  try {
    read_input_data(data, facts, shapes);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    return e.what();
  }
  return "(read)";
}

TEST(InputData, PbFolderInGraphOrderWithOrWithoutExpectedOutputs) {
  TempDir dir{"tk-unit-input-data"};
  linear_relu(dir / "m.onnx");  // input [1,16] -> output [1,4]
  const auto facts = onnx_model::load_facts(dir / "m.onnx");
  fs::create_directories(dir / "d");
  write_pb(dir / "d" / "input_0.pb", onnx::TensorProto::FLOAT, {1, 16});
  InputData data = read_input_data(dir / "d", facts);
  ASSERT_EQ(data.inputs.size(), 1u);
  EXPECT_EQ(data.inputs[0].name, "input");
  EXPECT_TRUE(data.expected_outputs.empty());
  write_pb(dir / "d" / "output_0.pb", onnx::TensorProto::FLOAT, {1, 4});
  data = read_input_data(dir / "d", facts);
  ASSERT_EQ(data.expected_outputs.size(), 1u);
  EXPECT_EQ(data.expected_outputs[0].name, "output");

  write_pb(dir / "d" / "input_1.pb", onnx::TensorProto::FLOAT, {1, 16});
  EXPECT_EQ(reason(dir / "d", facts), "holds input_1.pb, but the model has 1 input");
  fs::remove(dir / "d" / "input_1.pb");
  write_pb(dir / "d" / "output_0.pb", onnx::TensorProto::INT64, {1, 4});
  EXPECT_EQ(reason(dir / "d", facts),
            "expected output 'output' (output_0.pb): the model takes float32 [1, 4], the data "
            "holds int64 [1, 4]");
  fs::remove(dir / "d" / "output_0.pb");
  write_pb(dir / "d" / "input_0.pb", onnx::TensorProto::FLOAT, {2, 16});
  EXPECT_EQ(reason(dir / "d", facts),
            "input 'input' (input_0.pb): the model takes float32 [1, 16], the data holds float32 "
            "[2, 16]");
  write_pb(dir / "d" / "input_0.pb", onnx::TensorProto::DOUBLE, {1, 16});
  EXPECT_EQ(reason(dir / "d", facts),
            "input 'input' (input_0.pb): the model takes float32 [1, 16], the data holds float64 "
            "[1, 16]");
  write_bytes(dir / "d" / "input_0.pb", "\xff\xff garbage");
  EXPECT_EQ(reason(dir / "d", facts).rfind("input 'input' (input_0.pb): ", 0), 0u)
      << reason(dir / "d", facts);
  fs::remove(dir / "d" / "input_0.pb");
  EXPECT_EQ(reason(dir / "d", facts), "no input_0.pb for input 'input' (the model has 1 input)");
  EXPECT_EQ(reason(dir / "nothing", facts), "not found");
  EXPECT_EQ(reason(dir / "m.onnx", facts), "expected a folder of input_N.pb files or an .npz file");
}

TEST(InputData, SymbolicDimsTakeTheDataAndInputShapesMustAgree) {
  TempDir dir{"tk-unit-input-data-sym"};
  symbolic_dim(dir / "m.onnx");  // x ["batch", 16]
  const auto facts = onnx_model::load_facts(dir / "m.onnx");
  fs::create_directories(dir / "d");
  write_pb(dir / "d" / "input_0.pb", onnx::TensorProto::FLOAT, {3, 16});
  EXPECT_EQ(read_input_data(dir / "d", facts).inputs[0].shape, (std::vector<int64_t>{3, 16}));
  EXPECT_EQ(reason(dir / "d", facts, {{"x", {2, 16}}}),
            "input 'x' (input_0.pb): --input-shapes says [2, 16], the data holds float32 [3, 16]");
  write_pb(dir / "d" / "input_0.pb", onnx::TensorProto::FLOAT, {3, 16, 1});
  EXPECT_EQ(reason(dir / "d", facts),
            "input 'x' (input_0.pb): the model takes float32 [batch, 16], the data holds float32 "
            "[3, 16, 1]");
}

TEST(InputData, NpzByInputNameWithOutputsOptional) {
  TempDir dir{"tk-unit-input-data-npz"};
  linear_relu(dir / "m.onnx");
  const auto facts = onnx_model::load_facts(dir / "m.onnx");
  const std::string code =
      "import sys, numpy as np\n"
      "d = sys.argv[1]\n"
      "x = np.ones((1, 16), dtype=np.float32)\n"
      "np.savez(d + '/good.npz', input=x)\n"
      "np.savez(d + '/with_out.npz', input=x, output=np.zeros((1, 4), dtype=np.float32))\n"
      "np.savez(d + '/other.npz', input=x, extra=x)\n"
      "np.savez(d + '/wrong_name.npz', x=x)\n";
  std::ofstream(dir / "make.py") << code;
  if (std::system(
          ("/usr/bin/python3 " + (dir / "make.py").string() + " " + dir.path().string()).c_str()) !=
      0) {
    GTEST_SKIP() << "numpy (python3-numpy) is missing";
  }
  InputData data = read_input_data(dir / "good.npz", facts);
  ASSERT_EQ(data.inputs.size(), 1u);
  EXPECT_TRUE(data.expected_outputs.empty());
  EXPECT_EQ(read_input_data(dir / "with_out.npz", facts).expected_outputs.size(), 1u);
  EXPECT_EQ(reason(dir / "other.npz", facts),
            "array 'extra' names no input or output of the model (inputs: 'input'; outputs: "
            "'output')");
  EXPECT_EQ(reason(dir / "wrong_name.npz", facts),
            "array 'x' names no input or output of the model (inputs: 'input'; outputs: "
            "'output')");
}

std::string serialized(const google::protobuf::MessageLite& m) {
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  return bytes;
}

// Every value file is read as the graph declares it (issue 35): a SequenceProto for a sequence,
// an OptionalProto for an optional, strings and unsigned types from their fields, bfloat16 from
// the UINT16 some backend tests carry it as; a sequence's bytes are never dims.
TEST(InputData, ValuesAreReadAsTheGraphDeclaresThem) {
  TempDir dir{"tk-unit-input-data-values"};
  onnx_model::ValueInfo seq;
  seq.name = "seq";
  seq.dtype = DType::Int64;
  seq.layers = {ValueKind::Sequence};
  onnx::SequenceProto sp;
  sp.set_name("seq");
  sp.set_elem_type(onnx::SequenceProto::TENSOR);
  for (int64_t n : {1, 2}) {
    onnx::TensorProto* t = sp.add_tensor_values();
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(n);
    for (int64_t k = 0; k < n; ++k) t->add_int64_data(k + 7);
  }
  write_bytes(dir / "seq.pb", serialized(sp));
  HostTensor v = onnx_model::read_value_pb(dir / "seq.pb", seq);
  EXPECT_EQ(v.kind, ValueKind::Sequence);
  ASSERT_EQ(v.elements.size(), 2u);
  EXPECT_EQ(v.elements[1].shape, (std::vector<int64_t>{2}));
  EXPECT_TRUE(onnx_model::value_fits(v, seq));
  // The same bytes where the graph declares a tensor: not a sequence's name read as dims.
  onnx_model::ValueInfo tensor = seq;
  tensor.layers.clear();
  try {
    onnx_model::read_value_pb(dir / "seq.pb", tensor);
    ADD_FAILURE() << "read a SequenceProto as a tensor";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("elements"), std::string::npos) << e.what();
  }

  onnx_model::ValueInfo opt = seq;
  opt.layers = {ValueKind::Optional, ValueKind::Sequence};
  onnx::OptionalProto op;
  op.set_elem_type(onnx::OptionalProto::SEQUENCE);
  *op.mutable_sequence_value() = sp;
  write_bytes(dir / "opt.pb", serialized(op));
  v = onnx_model::read_value_pb(dir / "opt.pb", opt);
  EXPECT_EQ(v.kind, ValueKind::Optional);
  ASSERT_EQ(v.elements.size(), 1u);
  EXPECT_EQ(v.elements[0].elements.size(), 2u);
  onnx::OptionalProto none;
  none.set_name("opt");
  write_bytes(dir / "none.pb", serialized(none));
  EXPECT_TRUE(onnx_model::read_value_pb(dir / "none.pb", opt).elements.empty());

  onnx_model::ValueInfo bf16;
  bf16.dtype = DType::BFloat16;
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::UINT16);
  t.add_dims(2);
  t.set_raw_data(std::string("\x80\x3f\x00\xc0", 4));  // 1.0, -2.0
  write_bytes(dir / "bf16.pb", serialized(t));
  v = onnx_model::read_value_pb(dir / "bf16.pb", bf16);
  EXPECT_EQ(v.dtype, DType::BFloat16);
  EXPECT_EQ(small_float_to_double(v.dtype, v.data.data() + 2), -2.0);

  t.Clear();
  t.set_data_type(onnx::TensorProto::STRING);
  t.add_dims(2);
  t.add_string_data("a");
  t.add_string_data("");
  write_bytes(dir / "s.pb", serialized(t));
  EXPECT_EQ(onnx_model::read_tensor_pb(dir / "s.pb").strings, (std::vector<std::string>{"a", ""}));
  t.Clear();
  t.set_data_type(onnx::TensorProto::UINT32);
  t.add_dims(1);
  t.add_uint64_data(4000000000u);
  write_bytes(dir / "u32.pb", serialized(t));
  v = onnx_model::read_tensor_pb(dir / "u32.pb");
  uint32_t u32;
  std::memcpy(&u32, v.data.data(), 4);
  EXPECT_EQ(u32, 4000000000u);
}

}  // namespace
}  // namespace turnkey::test
