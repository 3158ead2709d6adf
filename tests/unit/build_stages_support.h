// Helpers shared by the build-stage unit tests (test_build_stages.cpp, test_compare_outputs.cpp).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>
#include <iterator>
#include <string>

#include "support/onnx_factory.h"
#include "support/temp_dir.h"
#include "turnkey/common/error.h"
#include "turnkey/transforms/transforms.h"
#include "turnkey/onnx/onnx_proto.h"

namespace turnkey::build_test {

inline onnx::ModelProto read_model(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(bytes)) << path;
  return model;
}

// Runs `fn`, expects turnkey::Error of `kind` whose one-line message contains `needle`.
template <typename Fn>
void expect_error(Fn fn, ErrorKind kind, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

// linear_relu(256, 16) as dir/m.onnx with W (16 KiB) stored externally in dir/w.bin.
inline void large_external_linear(const test::TempDir& dir) {
  test::linear_relu(dir / "inline.onnx", 256, 16);
  onnx::ModelProto model = read_model(dir / "inline.onnx");
  auto* w = model.mutable_graph()->mutable_initializer(0);
  ASSERT_EQ(w->name(), "W");
  test::write_bytes(dir / "w.bin", w->raw_data());
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  test::save_model(model, dir / "m.onnx");
}

inline std::vector<const onnx::NodeProto*> nodes_of(const onnx::GraphProto& g, const std::string& op) {
  std::vector<const onnx::NodeProto*> out;
  for (const auto& n : g.node()) {
    if (n.op_type() == op) out.push_back(&n);
  }
  return out;
}

// optimize_ort's promise: the same outputs, up to float reassociation in fused kernels. The
// optimized model runs as saved (ORT 1.29 cannot re-optimize some of them).
inline const transforms::CompareOptions kSameOutputs = [] {
  transforms::CompareOptions o;
  o.tolerance = {1e-5, 0.99999};
  o.optimize_candidate = false;
  return o;
}();

}  // namespace turnkey::build_test
