// A bare OpenVINO C++ loop: the third point beside benchmark_app and turnkey --runtime openvino in
// bench/peers, with nothing but OpenVINO's own calls in it. Usage:
//   bare_openvino_loop MODEL.onnx DURATION_S latency|throughput [DIMS|-] [REQUESTS]
// latency: the LATENCY hint, one request, infer() back to back for DURATION_S, each call timed
//   with steady_clock (as turnkey's loop times it); prints "median_ms <v> mean_ms <v> calls <n>".
// throughput: the THROUGHPUT hint, REQUESTS infer requests (default: the compiled model's
//   optimal number), each started again from its own completion callback until DURATION_S has
//   passed: no thread waits for an idle request between two inferences, unlike benchmark_app's
//   Python loop (get_idle_request_id + start_async) and turnkey's callers (one thread per
//   request, each calling infer()); prints "ips <completions per second> requests <n> streams
//   <n>" over the wall time from the first start to the last completion.
// Both at f32 (benchmark_app -infer_precision f32; turnkey's default). Inputs: float 0.5, integer
// 1, of the model's shapes; a dynamic dim takes the next of DIMS ("1,128"), else 1. BIND=external
// in the environment binds them as turnkey does (see new_request).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <openvino/openvino.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "turnkey/measure/statistics.h"

namespace {

using Clock = std::chrono::steady_clock;

// Gives every dynamic dim of every input the next value of `dims` (else 1).
void make_static(ov::Model& model, const std::vector<int64_t>& dims) {
  std::map<ov::Output<ov::Node>, ov::PartialShape> shapes;
  size_t k = 0;
  for (ov::Output<ov::Node>& in : model.inputs()) {
    ov::PartialShape shape = in.get_partial_shape();
    for (auto& d : shape) {
      if (d.is_dynamic()) d = k < dims.size() ? dims[k++] : 1;
    }
    shapes[in] = shape;
  }
  model.reshape(shapes);
}

void fill(ov::Tensor& t) {
  const ov::element::Type type = t.get_element_type();
  if (type == ov::element::f32) {
    float* p = t.data<float>();
    for (size_t i = 0; i < t.get_size(); ++i) p[i] = 0.5f;
  } else if (type == ov::element::i64) {
    int64_t* p = t.data<int64_t>();
    for (size_t i = 0; i < t.get_size(); ++i) p[i] = 1;
  } else if (type == ov::element::i32) {
    int32_t* p = t.data<int32_t>();
    for (size_t i = 0; i < t.get_size(); ++i) p[i] = 1;
  } else {
    std::memset(t.data(), 0, t.get_byte_size());
  }
}

// BIND=external: each input in bytes of the loop's own (malloc'd, as turnkey's host tensors
// are), bound with set_tensor, as turnkey's openvino runtime did before session 16; else the
// request's own tensors are written (benchmark_app's way). Tells what binding costs per call.
bool bind_external() {
  const char* bind = std::getenv("BIND");
  return bind && std::string(bind) == "external";
}

ov::InferRequest new_request(ov::CompiledModel& compiled) {
  static std::vector<std::vector<uint8_t>> owned;  // outlives every request
  ov::InferRequest r = compiled.create_infer_request();
  for (const ov::Output<const ov::Node>& in : compiled.inputs()) {
    ov::Tensor t = r.get_tensor(in);
    fill(t);
    if (bind_external()) {
      owned.emplace_back(static_cast<const uint8_t*>(t.data()),
                         static_cast<const uint8_t*>(t.data()) + t.get_byte_size());
      r.set_tensor(in, ov::Tensor(t.get_element_type(), t.get_shape(), owned.back().data()));
    }
  }
  return r;
}

int latency(ov::CompiledModel& compiled, double duration_s) {
  ov::InferRequest r = new_request(compiled);
  for (int i = 0; i < 10; ++i) r.infer();  // warm-up, as bench/peers gives the ORT loop
  std::vector<double> ms;
  const Clock::time_point end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(duration_s));
  while (Clock::now() < end) {
    const Clock::time_point t0 = Clock::now();
    r.infer();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const size_t calls = ms.size();
  // The project's one statistics engine, after the timed calls (measure/statistics.h).
  const turnkey::LatencyStats st = turnkey::compute_stats(std::move(ms));
  std::printf("median_ms %.9f mean_ms %.9f calls %zu\n", st.median_ms, st.mean_ms, calls);
  return 0;
}

int throughput(ov::CompiledModel& compiled, double duration_s, uint32_t requests) {
  if (requests == 0) requests = compiled.get_property(ov::optimal_number_of_infer_requests);
  std::vector<ov::InferRequest> pool;
  for (uint32_t i = 0; i < requests; ++i) pool.push_back(new_request(compiled));
  for (ov::InferRequest& r : pool) r.start_async();  // warm-up: each request once
  for (ov::InferRequest& r : pool) r.wait();
  std::mutex mutex;
  std::condition_variable all_done;
  std::exception_ptr failure;
  long completed = 0;
  uint32_t running = requests;
  Clock::time_point last;
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(duration_s));
  for (ov::InferRequest& r : pool) {
    r.set_callback([&, req = &r](std::exception_ptr error) {
      std::lock_guard<std::mutex> lock(mutex);
      const Clock::time_point now = Clock::now();
      if (error && !failure) failure = error;
      if (!error) ++completed;
      if (!error && now < end) {
        req->start_async();  // again at once, from OpenVINO's own thread
        return;
      }
      last = std::max(last, now);
      if (--running == 0) all_done.notify_one();
    });
  }
  for (ov::InferRequest& r : pool) r.start_async();
  std::unique_lock<std::mutex> lock(mutex);
  all_done.wait(lock, [&] { return running == 0; });
  if (failure) std::rethrow_exception(failure);
  const double wall_s = std::chrono::duration<double>(last - start).count();
  std::printf("ips %.6f requests %u streams %u\n", static_cast<double>(completed) / wall_s,
              requests, compiled.get_property(ov::num_streams).num);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: %s MODEL.onnx DURATION_S latency|throughput [DIMS|-] [REQUESTS]\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[3];
  if (mode != "latency" && mode != "throughput") {
    std::fprintf(stderr, "bare_openvino_loop: mode '%s': expected latency or throughput\n",
                 argv[3]);
    return 2;
  }
  // The numbers first, in one line each when they are not numbers (before minutes of compiling).
  std::vector<int64_t> dims;
  uint32_t requests = 0;
  double duration_s = 0;
  try {
    duration_s = std::stod(argv[2]);
    if (argc >= 5 && std::string(argv[4]) != "-") {
      std::stringstream list(argv[4]);
      for (std::string d; std::getline(list, d, ',');) dims.push_back(std::stoll(d));
    }
    if (argc == 6) requests = static_cast<uint32_t>(std::stoul(argv[5]));
  } catch (const std::exception&) {
    std::fprintf(stderr, "bare_openvino_loop: DURATION_S, DIMS and REQUESTS must be numbers\n");
    return 2;
  }
  try {
    ov::Core core;
    std::shared_ptr<ov::Model> model = core.read_model(argv[1]);
    if (model->is_dynamic()) make_static(*model, dims);
    const bool tput = mode == "throughput";
    ov::AnyMap config{
        {ov::hint::performance_mode.name(),
         tput ? ov::hint::PerformanceMode::THROUGHPUT : ov::hint::PerformanceMode::LATENCY},
        {ov::hint::inference_precision.name(), ov::element::f32}};
    if (tput && requests > 0) config[ov::hint::num_requests.name()] = requests;
    ov::CompiledModel compiled = core.compile_model(model, "CPU", config);
    return tput ? throughput(compiled, duration_s, requests) : latency(compiled, duration_s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bare_openvino_loop: %s: %s\n", argv[1], e.what());
    return 1;
  }
}
