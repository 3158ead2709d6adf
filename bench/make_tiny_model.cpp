// Writes the tiny models the bench scripts measure: make_tiny_model KIND PATH, KIND one of
// linear (Linear(16->4) + ReLU, the guide's harness-overhead model), symbolic (the same with a
// symbolic batch dim), conv (a small conv net, batch fixed at 1), transformer (a tiny encoder
// block whose Reshape fixes batch 1).
#include <cstdio>
#include <string>

#include "support/onnx_factory.h"

int main(int argc, char** argv) {
  const std::string kind = argc == 3 ? argv[1] : "";
  if (kind == "linear") {
    turnkey::test::linear_relu(argv[2], 16, 4);
  } else if (kind == "symbolic") {
    turnkey::test::symbolic_dim(argv[2]);
  } else if (kind == "conv") {
    turnkey::test::small_conv_net(argv[2]);
  } else if (kind == "transformer") {
    turnkey::test::tiny_transformer(argv[2]);
  } else {
    std::fprintf(stderr, "usage: %s linear|symbolic|conv|transformer PATH\n", argv[0]);
    return 2;
  }
  return 0;
}
