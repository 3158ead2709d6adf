// The openvino runtime's settings (part of turnkey_openvino.so): --rt-args and the run's threads
// and requests in flight, turned into OpenVINO's compile properties, and the properties the
// compiled model reports back for the result. Pure functions; OpenVINO's headers stay in the
// module.
#pragma once

#include <nlohmann/json.hpp>
#include <openvino/openvino.hpp>
#include <optional>
#include <string>

#include "turnkey/runtime/runtime.h"

namespace turnkey::openvino_options {

struct Settings {
  ov::hint::PerformanceMode hint = ov::hint::PerformanceMode::LATENCY;
  int threads_total = 0;        // ov::inference_num_threads: all requests' threads; 0 = OpenVINO's
  int requests = 1;             // ov::hint::num_requests under THROUGHPUT: streams are at most this
  std::string streams;          // ov::num_streams: "" = the hint's choice, "AUTO", or a number
  std::optional<bool> pinning;  // ov::hint::enable_cpu_pinning; unset = OpenVINO's default
  // ov::hint::inference_precision. f32 by default: OpenVINO's own default is bf16 on CPUs with
  // AVX-512 BF16 or AMX, which no fp32 reference output matches to 1e-3; precision=bf16 asks.
  std::string precision = "f32";
  bool reshape = true;     // dynamic input dimensions fixed to the inputs' shapes
  bool profiling = false;  // ov::enable_profiling (--profile's session)
};

// Reads options.runtime_args (hint=latency|throughput, streams=N|auto, pinning=true|false,
// precision=f32|bf16|f16, reshape=true|false, threads=N per request) over the defaults: LATENCY
// for one request, THROUGHPUT for several. Throws Error(InvalidInput) naming the argument.
Settings parse(const RuntimeOptions& options);

// The properties compile_model gets.
ov::AnyMap compile_config(const Settings& settings);

// What the compiled model says it does, keyed as the field table (src/cache/fields.cpp) names
// them: openvino_hint, _streams, _inference_threads, _optimal_requests, _precision, _pinning (a
// key is left out when OpenVINO does not answer it).
nlohmann::json compiled_facts(const ov::CompiledModel& compiled);

}  // namespace turnkey::openvino_options
