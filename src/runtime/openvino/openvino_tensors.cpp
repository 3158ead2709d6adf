#include "openvino_tensors.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "turnkey/common/error.h"

namespace turnkey::openvino_tensors {

namespace {

struct TypePair {
  DType dtype;
  ov::element::Type_t ov;
};

// The one mapping between turnkey's element types and OpenVINO's.
constexpr TypePair kTypes[] = {
    {DType::Float32, ov::element::f32},  {DType::Float16, ov::element::f16},
    {DType::Float64, ov::element::f64},  {DType::BFloat16, ov::element::bf16},
    {DType::Int8, ov::element::i8},      {DType::Uint8, ov::element::u8},
    {DType::Int16, ov::element::i16},    {DType::Uint16, ov::element::u16},
    {DType::Int32, ov::element::i32},    {DType::Uint32, ov::element::u32},
    {DType::Int64, ov::element::i64},    {DType::Uint64, ov::element::u64},
    {DType::Bool, ov::element::boolean},
};

ov::element::Type to_ov(DType d, const std::string& name) {
  for (const TypePair& p : kTypes) {
    if (p.dtype == d) return p.ov;
  }
  throw Error(
      ErrorKind::InvalidInput,
      fmt::format("openvino: input '{}' is {}, which OpenVINO cannot take", name, dtype_name(d)));
}

DType from_ov(const ov::element::Type& t) {
  for (const TypePair& p : kTypes) {
    if (ov::element::Type(p.ov) == t) return p.dtype;
  }
  return DType::Unknown;
}

}  // namespace

size_t prepared_input(const std::unordered_set<std::string>& names,
                      const std::vector<HostTensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor& t = inputs[i];
    if (!names.count(t.name)) continue;
    if (!t.is_tensor() || t.dtype == DType::String) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("openvino: input '{}' is {}: OpenVINO takes plain numeric tensors",
                              t.name, describe_value(t)));
    }
    return i;
  }
  throw Error(ErrorKind::Runtime,
              fmt::format("openvino: no prepared input named {}",
                          names.empty() ? std::string("(unnamed)") : "'" + *names.begin() + "'"));
}

ov::Tensor wrap(HostTensor& t) {
  const ov::Shape shape(t.shape.begin(), t.shape.end());
  return ov::Tensor(to_ov(t.dtype, t.name), shape, t.data.empty() ? nullptr : t.data.data());
}

HostTensor to_host(const ov::Tensor& t, const std::string& name) {
  HostTensor h;
  h.name = name;
  h.dtype = from_ov(t.get_element_type());
  for (size_t d : t.get_shape()) h.shape.push_back(static_cast<int64_t>(d));
  h.data.resize(t.get_byte_size());
  if (!h.data.empty()) std::memcpy(h.data.data(), t.data(), h.data.size());
  return h;
}

OpProfile sum_profile(const std::vector<std::vector<ov::ProfilingInfo>>& per_call,
                      const std::filesystem::path& raw_file) {
  OpProfile p;
  p.profiler = "OpenVINO per-layer counters";
  p.calls = static_cast<int>(per_call.size());
  std::map<std::string, size_t> index;  // node name -> position in p.nodes
  std::vector<std::string> exec_types;
  std::vector<double> cpu_ms;
  for (const std::vector<ov::ProfilingInfo>& call : per_call) {
    for (const ov::ProfilingInfo& info : call) {
      if (info.status != ov::ProfilingInfo::Status::EXECUTED) continue;
      auto [it, inserted] = index.emplace(info.node_name, p.nodes.size());
      if (inserted) {
        p.nodes.push_back({info.node_name, info.node_type, 0, 0});
        exec_types.push_back(info.exec_type);
        cpu_ms.push_back(0);
      }
      p.nodes[it->second].total_ms += info.real_time.count() / 1000.0;
      cpu_ms[it->second] += info.cpu_time.count() / 1000.0;
      ++p.nodes[it->second].count;
    }
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    nodes.push_back({{"node", p.nodes[i].node},
                     {"node_type", p.nodes[i].op_type},
                     {"exec_type", exec_types[i]},
                     {"real_time_ms", p.nodes[i].total_ms},
                     {"cpu_time_ms", cpu_ms[i]},
                     {"executions", p.nodes[i].count}});
  }
  const nlohmann::json raw = {{"profiler", p.profiler}, {"calls", p.calls}, {"nodes", nodes}};
  const std::filesystem::path tmp = raw_file.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << raw.dump(1) << "\n";
    if (!out) throw Error(ErrorKind::Io, "writing " + tmp.string());
  }
  std::filesystem::rename(tmp, raw_file);
  p.raw_file = raw_file;
  return p;
}

}  // namespace turnkey::openvino_tensors
