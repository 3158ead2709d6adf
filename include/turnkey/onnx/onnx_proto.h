// ONNX's protobuf classes (ModelProto, ...) under the name onnx::, whichever namespace the ONNX
// library was built with. scripts/setup-onnx builds it as onnx_tk (so that it can share a process
// with Debian's LibTorch, which links Debian's libonnx in namespace onnx); code says onnx::
// either way. Include this instead of <onnx/onnx_pb.h>.
#pragma once

#include <onnx/onnx_pb.h>

// Qualified lookup of onnx::X finds ONNX_NAMESPACE::X through the using-directive (a no-op when
// ONNX_NAMESPACE is onnx itself).
namespace onnx {
using namespace ONNX_NAMESPACE;  // NOLINT(google-build-using-namespace)
}
