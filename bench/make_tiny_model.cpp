// Writes the tiny models the bench scripts measure: make_tiny_model linear PATH (Linear(16->4) +
// ReLU, the guide's harness-overhead model).
#include <cstdio>
#include <string>

#include "support/onnx_factory.h"

int main(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]) != "linear") {
    std::fprintf(stderr, "usage: %s linear PATH\n", argv[0]);
    return 2;
  }
  turnkey::test::linear_relu(argv[2], 16, 4);
  return 0;
}
