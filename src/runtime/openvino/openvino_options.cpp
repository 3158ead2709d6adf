#include "openvino_options.h"

#include <fmt/format.h>

#include <sstream>

#include "turnkey/common/error.h"

namespace turnkey::openvino_options {

namespace {

Error bad(const std::string& key, const std::string& value, const std::string& expected) {
  return Error(ErrorKind::InvalidInput,
               fmt::format("openvino: {}={} is not {}", key, value, expected));
}

bool parse_bool(const std::string& key, const std::string& value) {
  if (value == "true" || value == "1" || value == "yes") return true;
  if (value == "false" || value == "0" || value == "no") return false;
  throw bad(key, value, "true or false");
}

int parse_int(const std::string& key, const std::string& value, int min, int max) {
  try {
    size_t used = 0;
    const int v = std::stoi(value, &used);
    if (used == value.size() && v >= min && v <= max) return v;
  } catch (const std::exception&) {
  }
  throw bad(key, value, fmt::format("a whole number in [{}, {}]", min, max));
}

template <typename T>
std::string text(const T& value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

}  // namespace

Settings parse(const RuntimeOptions& options) {
  Settings s;
  const int requests = std::max(1, options.concurrency);
  int threads = options.threads;
  s.hint =
      requests > 1 ? ov::hint::PerformanceMode::THROUGHPUT : ov::hint::PerformanceMode::LATENCY;
  for (const auto& [key, value] : options.runtime_args) {
    if (key == "hint") {
      if (value == "latency")
        s.hint = ov::hint::PerformanceMode::LATENCY;
      else if (value == "throughput")
        s.hint = ov::hint::PerformanceMode::THROUGHPUT;
      else
        throw bad(key, value, "latency or throughput");
    } else if (key == "streams") {
      s.streams = value == "auto" || value == "AUTO"
                      ? "AUTO"
                      : std::to_string(parse_int(key, value, 1, 4096));
    } else if (key == "pinning") {
      s.pinning = parse_bool(key, value);
    } else if (key == "precision") {
      if (value != "f32" && value != "bf16" && value != "f16") {
        throw bad(key, value, "f32, bf16 or f16");
      }
      s.precision = value;
    } else if (key == "reshape") {
      s.reshape = parse_bool(key, value);
    } else if (key == "threads") {
      threads = parse_int(key, value, 1, 4096);
    } else {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("openvino: unknown runtime argument '{}' (known: hint, streams, "
                              "pinning, precision, reshape, threads)",
                              key));
    }
  }
  // turnkey's threads are per request (docs/measurement.md); OpenVINO's are the compiled
  // model's, which its streams share.
  s.threads_total = threads > 0 ? threads * requests : 0;
  s.requests = requests;
  s.profiling = !options.profile_prefix.empty();
  return s;
}

ov::AnyMap compile_config(const Settings& s) {
  ov::AnyMap config;
  config[ov::hint::performance_mode.name()] = s.hint;
  if (s.hint == ov::hint::PerformanceMode::THROUGHPUT) {
    config[ov::hint::num_requests.name()] = static_cast<uint32_t>(s.requests);
  }
  if (s.threads_total > 0) config[ov::inference_num_threads.name()] = s.threads_total;
  if (s.streams == "AUTO") {
    config[ov::num_streams.name()] = ov::streams::AUTO;
  } else if (!s.streams.empty()) {
    config[ov::num_streams.name()] = ov::streams::Num(std::stoi(s.streams));
  }
  if (s.pinning) config[ov::hint::enable_cpu_pinning.name()] = *s.pinning;
  if (!s.precision.empty()) {
    config[ov::hint::inference_precision.name()] = ov::element::Type(s.precision);
  }
  if (s.profiling) config[ov::enable_profiling.name()] = true;
  return config;
}

nlohmann::json compiled_facts(const ov::CompiledModel& compiled) {
  nlohmann::json facts = nlohmann::json::object();
  // Each read on its own: a property this plugin version does not answer is left out.
  auto read = [&](const char* key, auto&& get) {
    try {
      facts[key] = get();
    } catch (const std::exception&) {
    }
  };
  read("openvino_hint", [&] { return text(compiled.get_property(ov::hint::performance_mode)); });
  read("openvino_streams", [&] { return compiled.get_property(ov::num_streams).num; });
  read("openvino_inference_threads",
       [&] { return compiled.get_property(ov::inference_num_threads); });
  read("openvino_optimal_requests",
       [&] { return compiled.get_property(ov::optimal_number_of_infer_requests); });
  read("openvino_precision",
       [&] { return compiled.get_property(ov::hint::inference_precision).get_type_name(); });
  read("openvino_pinning", [&] { return compiled.get_property(ov::hint::enable_cpu_pinning); });
  return facts;
}

}  // namespace turnkey::openvino_options
