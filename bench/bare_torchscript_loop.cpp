// A bare LibTorch loop: loads a traced module and its inputs (.pb files), runs `warmup` calls,
// then times `iterations` forward() calls, each between two steady_clock reads under
// c10::InferenceMode (as turnkey's torchscript session does), and prints "median_ms <value>".
// The floor turnkey's torchscript runtime is compared with (bench/overhead_torchscript).
//   bare_torchscript_loop MODULE.pt ITERATIONS WARMUP THREADS INPUT_0.pb [INPUT_1.pb ...]
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "turnkey/onnx/model_facts.h"

namespace {

c10::ScalarType to_torch(turnkey::DType d) {
  using turnkey::DType;
  switch (d) {
    case DType::Float32:
      return torch::kFloat32;
    case DType::Float64:
      return torch::kFloat64;
    case DType::Int64:
      return torch::kInt64;
    case DType::Int32:
      return torch::kInt32;
    case DType::Bool:
      return torch::kBool;
    default:
      break;
  }
  std::fprintf(stderr, "bare_torchscript_loop: unsupported input type\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: bare_torchscript_loop MODULE.pt ITERATIONS WARMUP THREADS INPUT.pb...\n");
    return 2;
  }
  const int iterations = std::atoi(argv[2]);
  const int warmup = std::atoi(argv[3]);
  at::set_num_threads(std::atoi(argv[4]));
  torch::jit::Module module = torch::jit::load(argv[1]);
  module.eval();
  std::vector<c10::IValue> inputs;
  for (int i = 5; i < argc; ++i) {
    turnkey::HostTensor t = turnkey::onnx_model::read_tensor_pb(argv[i]);
    inputs.emplace_back(
        torch::from_blob(t.data.data(), t.shape, torch::TensorOptions().dtype(to_torch(t.dtype)))
            .clone());
  }
  c10::IValue out;
  for (int i = 0; i < warmup; ++i) {
    c10::InferenceMode guard;
    out = module.forward(inputs);
  }
  using clock = std::chrono::steady_clock;
  std::vector<clock::duration> raw(static_cast<size_t>(iterations));
  for (auto& d : raw) {
    out = c10::IValue();  // the previous call's outputs freed before the clock, as turnkey's loop
    const auto start = clock::now();
    {
      c10::InferenceMode guard;
      out = module.forward(inputs);
    }
    d = clock::now() - start;
  }
  std::vector<double> ms;
  for (const auto& d : raw) ms.push_back(std::chrono::duration<double, std::milli>(d).count());
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  std::printf("median_ms %.9g\n", median);
  return 0;
}
