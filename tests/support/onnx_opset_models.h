// Models of the newer ONNX releases (IR 10/11, opsets 18-23, model-local functions), built with
// the protobuf classes like the rest of the factory (onnx_factory.h) and checked with the ONNX
// library before they are written. Functions throw std::runtime_error on failure.
#pragma once

#include <filesystem>

namespace turnkey::test {

// x [1,4,8,8] -> Conv(8x4x3x3, pad 1) + bias -> Split(axis 1, num_outputs 2) -> Add -> Pad(pads
// [1,1,1,1] on axes [2,3] as inputs, constant 0.5) -> Resize(scales [1,1,0.8,0.8], linear)
// -> Sub(ReduceMean over axes [2,3] as an input, keepdims) -> ReduceMax(axes [2,3] input) = y
// [1,4]; from opset 23 y = RMSNormalization(that, scale [4]). The ops whose attributes became
// inputs (or that are new) in opset 18-23, declared at `opset` and IR `ir_version`.
void opset_net(const std::filesystem::path& path, int opset, int ir_version);

// x [1,16] -> Block(x, W1, B1) -> Block(., W2, B2) -> MatMul(W3 [16,4]) -> Relu -> y [1,4], where
// Block (model-local function, domain "pkg.turnkey") is LinearTanh(x, w, b) + x and LinearTanh
// (another one) is Tanh(MatMul(x, w) + b): nested calls, as torch's dynamo exporter writes them.
// Ops a runtime computes: MatMul 3, Add 4, Tanh 2, Relu 1.
void local_function_net(const std::filesystem::path& path, int opset = 18, int ir_version = 10);

}  // namespace turnkey::test
