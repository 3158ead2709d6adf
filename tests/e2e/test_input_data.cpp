// End-to-end: benchmark --input-data (docs/measurement.md). The ONNX backend node tests of
// libonnx-testdata, fed their own test data as a .pb folder and as an .npz (numpy), reproduce
// their expected outputs within tolerance, and the verdict says the reference is the data's;
// data that does not fit (shape, dtype), is missing or is damaged is one line. Cost: about 5 s
// of tiny models.
#include <gtest/gtest.h>

#include "e2e_util.h"
#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/cache/build_cache.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kNode = fs::path(TURNKEY_ONNX_TESTDATA) / "node";

// Writes `npz` from a backend test's test_data_set_0 with numpy: arrays named after the graph's
// inputs and outputs; `transform` is a numpy expression applied to every input array `a`.
void npz_from_test_data(const fs::path& test, const fs::path& npz, const std::string& transform) {
  const std::string code =
      "import sys, numpy as np, onnx\n"
      "from onnx import numpy_helper\n"
      "test, out, transform = sys.argv[1], sys.argv[2], sys.argv[3]\n"
      "m = onnx.load(test + '/model.onnx')\n"
      "inits = {i.name for i in m.graph.initializer}\n"
      "def load(p):\n"
      "    t = onnx.TensorProto()\n"
      "    t.ParseFromString(open(p, 'rb').read())\n"
      "    return numpy_helper.to_array(t)\n"
      "arrays = {}\n"
      "ins = [i.name for i in m.graph.input if i.name not in inits]\n"
      "for n, name in enumerate(ins):\n"
      "    a = load('%s/test_data_set_0/input_%d.pb' % (test, n))\n"
      "    arrays[name] = eval(transform)\n"
      "for n, o in enumerate(m.graph.output):\n"
      "    arrays[o.name] = load('%s/test_data_set_0/output_%d.pb' % (test, n))\n"
      "np.savez_compressed(out, **arrays)\n";
  RunResult r =
      run_command({"/usr/bin/python3", "-c", code, test.string(), npz.string(), transform});
  ASSERT_EQ(r.exit_code, 0) << r.all();
}

std::string status_line(const std::string& out) {
  const size_t at = out.find("Status:");
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

class InputData : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kNode)) GTEST_SKIP() << "libonnx-testdata not installed (scripts/setup does)";
  }
};

TEST_F(InputData, BackendNodeTestsReproduceTheirExpectedOutputs) {
  TempDir dir{"tk-e2e-input-data"};
  // Float and int64 inputs, several inputs, several outputs.
  for (const char* test : {"test_conv_with_strides_padding", "test_gather_0", "test_matmul_2d",
                           "test_add_bcast", "test_top_k"}) {
    const fs::path folder = kNode / test / "test_data_set_0";
    const fs::path npz = dir / (std::string(test) + ".npz");
    npz_from_test_data(kNode / test, npz, "a");
    for (const fs::path& data : {folder, npz}) {
      SCOPED_TRACE(data.string());
      const fs::path cache = dir / ("cache_" + data.filename().string());
      RunResult r = run_turnkey({(kNode / test / "model.onnx").string(), "--input-data",
                                 data.string(), "--iterations", "3"},
                                cache);
      ASSERT_EQ(r.exit_code, 0) << r.all();
      EXPECT_NE(r.out.find("Correctness:    within tolerance: "), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("(against --input-data's outputs)"), std::string::npos) << r.out;
      fs::path build;
      for (const auto& e : fs::directory_iterator(cache)) {
        if (fs::exists(e.path() / "turnkey_stats.yaml")) build = e.path();
      }
      const json stats = json_from_yaml(slurp(build / "turnkey_stats.yaml"));
      EXPECT_EQ(stats["correctness"]["verdict"], "within_tolerance");
      EXPECT_EQ(stats["correctness"]["reference"], "the expected outputs of --input-data");
      EXPECT_EQ(stats["input_source"].get<std::string>().rfind("--input-data: ", 0), 0u)
          << stats["input_source"];
    }
  }
}

TEST_F(InputData, DataThatDoesNotFitIsOneLineNamingTheInput) {
  TempDir dir{"tk-e2e-input-data-bad"};
  const fs::path conv = kNode / "test_conv_with_strides_padding";
  const std::string model = (conv / "model.onnx").string();
  const fs::path f64 = dir / "f64.npz", good = dir / "good.npz";
  npz_from_test_data(conv, f64, "a.astype(np.float64)");
  npz_from_test_data(conv, good, "a");
  const std::string bytes = slurp(good);
  write_bytes(dir / "truncated.npz", bytes.substr(0, bytes.size() / 2));
  // A byte of the first member's deflate data: after its local header (30 bytes, name, extra).
  auto u16 = [&](size_t at) {
    return static_cast<size_t>(static_cast<unsigned char>(bytes[at])) |
           static_cast<size_t>(static_cast<unsigned char>(bytes[at + 1])) << 8;
  };
  const size_t data_at = 30 + u16(26) + u16(28);
  std::string flipped = bytes;
  flipped[data_at + 12] = static_cast<char>(flipped[data_at + 12] ^ 0x5a);
  write_bytes(dir / "flipped.npz", flipped);

  const std::vector<std::pair<std::string, std::string>> cases = {
      {(kNode / "test_add" / "test_data_set_0").string(),
       "input 'x' (input_0.pb): the model takes float32 [1, 1, 7, 5], the data holds float32 "
       "[3, 4, 5]"},
      {f64.string(),
       "input 'x': the model takes float32 [1, 1, 7, 5], the data holds float64 [1, 1, 7, 5]"},
      {(dir / "truncated.npz").string(), "not a zip archive"},
      {(dir / "flipped.npz").string(), "member 'x.npy': "},
  };
  for (const auto& [data, reason] : cases) {
    SCOPED_TRACE(data);
    RunResult r = run_turnkey({model, "--input-data", data, "--iterations", "3"}, dir / "cache");
    EXPECT_EQ(r.exit_code, 1) << r.all();
    const std::string status = status_line(r.out);
    EXPECT_EQ(status.rfind("Status:         Failed at load-onnx: --input-data " + data + ": ", 0),
              0u)
        << r.out;
    EXPECT_NE(status.find(reason), std::string::npos) << status;
    EXPECT_FALSE(looks_like_crash(r)) << r.all();
  }

  // A path that is not there, or is neither a folder nor an .npz: a usage error before any work.
  for (const std::string& data : {(dir / "missing.npz").string(), model}) {
    RunResult r = run_turnkey({model, "--input-data", data}, dir / "cache2");
    EXPECT_EQ(r.exit_code, 2) << r.all();
    EXPECT_EQ(count_occurrences(r.err, "\n"), 1) << r.err;
    EXPECT_NE(r.err.find("--input-data " + data + ": "), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "cache2"));
  }
}

TEST(InputDataLive, ARuntimeOfLiveModelsRefusesInputDataInOneLine) {
  TempDir dir{"tk-e2e-input-data-live"};
  const fs::path model = dir / "lin.onnx";
  linear_relu(model);
  RunResult r =
      run_turnkey({(fs::path(TURNKEY_SOURCE_DIR) / "examples/cli/scripts/hello_world.py").string(),
                   "--runtime", "torch-eager", "--input-data", dir.path().string()},
                  dir / "cache");
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_NE(r.err.find("--input-data feeds ONNX models; torch-eager runs the live PyTorch model"),
            std::string::npos)
      << r.err;
}

// Writes into `dir` (issue 35): image.onnx, a uint8 image model (image uint8 [1,3,8,8] ->
// Cast(float) -> Conv(4x3x1x1) + bias -> logits [1,4,8,8]), and seq.onnx, a model with a
// sequence input (seq: sequence of float [2,3] -> ConcatFromSequence(axis 0) -> out [6,3]); for
// each, data the model has not seen (numpy, seeded) with the outputs numpy computes for it, as a
// backend-test folder (<name>_pb/input_0.pb, output_0.pb: TensorProto, SequenceProto) and as an
// .npz (<name>.npz: image/logits; seq[0], seq[1], seq[2]/out).
void uint8_and_sequence_models(const fs::path& dir) {
  const std::string code = R"(
import os, sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
d = sys.argv[1]
rng = np.random.default_rng(35)
def save(name, graph, inputs, outputs):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, os.path.join(d, name + '.onnx'))
    os.makedirs(os.path.join(d, name + '_pb'))
    for kind, values in (('input', inputs), ('output', outputs)):
        for n, v in enumerate(values):
            open(os.path.join(d, name + '_pb', '%s_%d.pb' % (kind, n)), 'wb').write(
                v.SerializeToString())
w = rng.uniform(-1, 1, (4, 3, 1, 1)).astype(np.float32)
b = rng.uniform(-1, 1, (4,)).astype(np.float32)
g = helper.make_graph(
    [helper.make_node('Cast', ['image'], ['f'], to=TensorProto.FLOAT),
     helper.make_node('Conv', ['f', 'w', 'b'], ['logits'])], 'image',
    [helper.make_tensor_value_info('image', TensorProto.UINT8, [1, 3, 8, 8])],
    [helper.make_tensor_value_info('logits', TensorProto.FLOAT, [1, 4, 8, 8])],
    [numpy_helper.from_array(w, 'w'), numpy_helper.from_array(b, 'b')])
image = rng.integers(0, 256, (1, 3, 8, 8), dtype=np.uint8)
logits = (np.einsum('oc,nchw->nohw', w[:, :, 0, 0], image.astype(np.float32))
          + b[None, :, None, None]).astype(np.float32)
save('image', g, [numpy_helper.from_array(image, 'image')],
     [numpy_helper.from_array(logits, 'logits')])
np.savez(os.path.join(d, 'image.npz'), image=image, logits=logits)
seq_type = helper.make_sequence_type_proto(
    helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3]))
g = helper.make_graph(
    [helper.make_node('ConcatFromSequence', ['seq'], ['out'], axis=0)], 'seq',
    [helper.make_value_info('seq', seq_type)],
    [helper.make_tensor_value_info('out', TensorProto.FLOAT, [None, 3])])
parts = [rng.uniform(-1, 1, (2, 3)).astype(np.float32) for _ in range(3)]
seq = onnx.SequenceProto(name='seq', elem_type=onnx.SequenceProto.TENSOR)
seq.tensor_values.extend([numpy_helper.from_array(p) for p in parts])
out = np.concatenate(parts, axis=0)
save('seq', g, [seq], [numpy_helper.from_array(out, 'out')])
np.savez(os.path.join(d, 'seq.npz'), out=out, **{'seq[%d]' % i: p for i, p in enumerate(parts)})
)";
  RunResult r = run_command({"/usr/bin/python3", "-c", code, dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.all();
}

// Issue 35's acceptance: a uint8 image model and a model with a sequence input benchmark with
// real data (a .pb folder and an .npz), compared with the outputs numpy computed for it.
TEST(InputDataTypes, Uint8ImageAndSequenceInputBenchmarkWithRealData) {
  TempDir dir{"tk-e2e-input-data-types"};
  ASSERT_NO_FATAL_FAILURE(uint8_and_sequence_models(dir.path()));
  for (const std::string name : {"image", "seq"}) {
    for (const fs::path& data : {dir / (name + "_pb"), dir / (name + ".npz")}) {
      SCOPED_TRACE(data.string());
      RunResult r = run_turnkey(
          {(dir / (name + ".onnx")).string(), "--input-data", data.string(), "--iterations", "3"},
          dir / ("cache_" + data.filename().string()));
      ASSERT_EQ(r.exit_code, 0) << r.all();
      EXPECT_NE(r.out.find("Correctness:    within tolerance: "), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("(against --input-data's outputs)"), std::string::npos) << r.out;
      if (name == "seq") {
        EXPECT_NE(r.out.find("'seq': sequence of 3 float32 tensors"), std::string::npos) << r.out;
      }
    }
  }
  // Without data: generated input of the right type and range (uint8 in [0, 100); a sequence of
  // 2 tensors), not checked.
  for (const std::string name : {"image", "seq"}) {
    RunResult r = run_turnkey({(dir / (name + ".onnx")).string(), "--iterations", "3"},
                              dir / ("cache_generated_" + name));
    EXPECT_EQ(r.exit_code, 0) << r.all();
    EXPECT_NE(r.out.find("Successfully benchmarked"), std::string::npos) << r.out;
  }
  // A sequence's file is never read as a tensor: a TensorProto where the graph declares a
  // sequence is one line naming the input.
  fs::copy_file(dir / "image_pb" / "input_0.pb", dir / "seq_pb" / "input_0.pb",
                fs::copy_options::overwrite_existing);
  RunResult r = run_turnkey(
      {(dir / "seq.onnx").string(), "--input-data", (dir / "seq_pb").string(), "--iterations", "3"},
      dir / "cache_wrong");
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_NE(r.out.find("input 'seq' (input_0.pb): "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("elements"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace turnkey::test
