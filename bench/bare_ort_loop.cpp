// The floor for harness overhead: a bare ONNX Runtime C++ loop, timed per iteration the same way
// turnkey's loop is (steady_clock around Run()). Usage:
//   bare_ort_loop MODEL.onnx ITERATIONS WARMUP THREADS [DIMS|-] [REQUESTS]
// Prints "median_ms <value> mean_ms <value> p99_ms <value>". Inputs are float32 0.5 or int64 1
// of the model's shapes; each input's symbolic dims take DIMS's values in order ("1,128"), else 1.
// REQUESTS > 1: that many threads call Run on the one session at once, ITERATIONS calls each
// (turnkey's --concurrency with a shared session), and it prints "ips <calls per second>" over
// the wall time from the first call to the last.
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "turnkey/measure/statistics.h"

namespace {

double concurrent_ips(const std::function<void()>& run, int requests, int iterations) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < requests; ++t) {
    threads.emplace_back([&] {
      ++ready;
      while (!go) std::this_thread::yield();
      for (int i = 0; i < iterations; ++i) run();
    });
  }
  while (ready < requests) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  go = true;
  for (std::thread& t : threads) t.join();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return requests * static_cast<double>(iterations) / wall_s;
}

// The model's inputs: float32 0.5 or int64 1, each symbolic dim taking the next of `dims`, else 1.
struct Inputs {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<int64_t>> ints;
  std::vector<Ort::Value> values;
};

void make_inputs(Ort::Session& session, const std::vector<int64_t>& dims, Inputs& in) {
  Ort::AllocatorWithDefaultOptions alloc;
  auto mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  const size_t n_in = session.GetInputCount();
  in.shapes.reserve(n_in);  // the values point into these buffers: no reallocation
  in.floats.reserve(n_in);
  in.ints.reserve(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    in.names.push_back(session.GetInputNameAllocated(i, alloc).get());
    Ort::TypeInfo type = session.GetInputTypeInfo(i);  // owns what `info` reads
    auto info = type.GetTensorTypeAndShapeInfo();
    in.shapes.push_back(info.GetShape());
    auto& shape = in.shapes.back();
    size_t n = 1, k = 0;
    for (int64_t& d : shape) {
      if (d <= 0) d = k < dims.size() ? dims[k++] : 1;
      n *= static_cast<size_t>(d);
    }
    if (info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) {
      in.ints.emplace_back(n, 1);
      in.values.push_back(Ort::Value::CreateTensor<int64_t>(mem, in.ints.back().data(), n,
                                                            shape.data(), shape.size()));
    } else {
      in.floats.emplace_back(n, 0.5f);
      in.values.push_back(Ort::Value::CreateTensor<float>(mem, in.floats.back().data(), n,
                                                          shape.data(), shape.size()));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || argc > 7) {
    std::fprintf(stderr, "usage: %s MODEL.onnx ITERATIONS WARMUP THREADS [DIMS|-] [REQUESTS]\n",
                 argv[0]);
    return 2;
  }
  std::vector<int64_t> dims;
  const int requests = argc == 7 ? std::stoi(argv[6]) : 1;
  if (argc >= 6 && std::string(argv[5]) != "-") {
    std::stringstream list(argv[5]);
    for (std::string d; std::getline(list, d, ',');) dims.push_back(std::stoll(d));
  }
  const int iterations = std::stoi(argv[2]);
  const int warmup = std::stoi(argv[3]);
  Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "bare");
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(std::stoi(argv[4]));
  so.SetGraphOptimizationLevel(ORT_ENABLE_ALL);
  Ort::Session session(env, argv[1], so);
  Inputs in;
  make_inputs(session, dims, in);
  Ort::AllocatorWithDefaultOptions alloc;
  std::vector<std::string> out_names;
  for (size_t i = 0; i < session.GetOutputCount(); ++i) {
    out_names.push_back(session.GetOutputNameAllocated(i, alloc).get());
  }
  std::vector<const char*> in_ptrs, out_ptrs;
  for (auto& s : in.names) in_ptrs.push_back(s.c_str());
  for (auto& s : out_names) out_ptrs.push_back(s.c_str());
  Ort::RunOptions run_options;
  auto run = [&] {
    return session.Run(run_options, in_ptrs.data(), in.values.data(), in.values.size(),
                       out_ptrs.data(), out_ptrs.size());
  };
  for (int i = 0; i < warmup + 1; ++i) run();
  if (requests > 1) {
    std::printf("ips %.6f\n", concurrent_ips([&] { run(); }, requests, iterations));
    return 0;
  }
  using clock = std::chrono::steady_clock;
  std::vector<clock::duration> raw(static_cast<size_t>(iterations));
  std::vector<Ort::Value> outputs;
  for (auto& r : raw) {
    outputs.clear();  // the previous call's outputs freed before the clock, as turnkey's loop does
    auto t0 = clock::now();
    outputs = run();
    r = clock::now() - t0;
  }
  std::vector<double> ms;
  for (auto& r : raw) ms.push_back(std::chrono::duration<double, std::milli>(r).count());
  // The project's one statistics engine, after the timed calls (measure/statistics.h).
  const turnkey::LatencyStats st = turnkey::compute_stats(std::move(ms));
  // The median first: scripts read the second field.
  std::printf("median_ms %.9f mean_ms %.9f p99_ms %.9f\n", st.median_ms, st.mean_ms, st.p99_ms);
  return 0;
}
