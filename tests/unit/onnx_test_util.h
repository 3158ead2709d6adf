// Helpers of the ONNX reader tests (test_onnx_facts.cpp, test_tensor_pb.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "turnkey/common/error.h"
#include "turnkey/common/tensor.h"

namespace turnkey::onnx_model::onnx_test_util {

// Runs `f`, expecting Error(kind) whose message contains `needle` and is one line.
template <typename F>
inline std::string expect_error(F&& f, ErrorKind kind, const std::string& needle) {
  try {
    f();
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_EQ(e.kind(), kind) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "'" << what << "' lacks '" << needle << "'";
    EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
    return what;
  }
  ADD_FAILURE() << "no Error thrown; expected one containing '" << needle << "'";
  return "";
}

// Hostile files may fail to parse or parse into something the checker rejects; either is right.
template <typename F>
inline std::string expect_rejected(F&& f) {
  std::string msg = expect_error(f, ErrorKind::InvalidInput, "");
  EXPECT_TRUE(msg.rfind("not an ONNX model (", 0) == 0 || msg.rfind("ONNX checker: ", 0) == 0 ||
              msg.rfind("initializer '", 0) == 0)
      << msg;
  return msg;
}

inline std::vector<float> floats_of(const HostTensor& t) {
  std::vector<float> v(static_cast<size_t>(t.element_count()));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

}  // namespace turnkey::onnx_model::onnx_test_util
