#include "console/result_block.h"

#include <fmt/format.h>

#include <iostream>

#include "turnkey/common/files.h"

namespace turnkey::engine_internal {

namespace {

// 'x': (1, 16), 'mask': (1, 16) int64, in Python's repr quoting.
std::string input_shapes_text(const nlohmann::json& inputs) {
  std::string shapes;
  for (const auto& in : inputs) {
    if (!shapes.empty()) shapes += ", ";
    std::string name = in.value("name", "?");
    // Python's repr quoting: names such as scale['s'] go in double quotes.
    std::string quoted =
        name.find('\'') == std::string::npos ? "'" + name + "'" : "\"" + name + "\"";
    std::string dtype = in.value("dtype", "?");
    if (in.contains("shape") && in["shape"].is_array()) {
      std::string dims;
      for (size_t i = 0; i < in["shape"].size(); ++i) {
        if (i) dims += ", ";
        dims += in["shape"][i].dump();
      }
      if (in["shape"].size() == 1) dims += ",";
      // float32 is the common case and stays implicit, as in the reference output.
      shapes += fmt::format("{}: ({}){}", quoted, dims, dtype == "float32" ? "" : " " + dtype);
    } else {
      shapes += fmt::format("{}: {}", quoted, dtype);
    }
  }
  return shapes.empty() ? "()" : shapes;
}

}  // namespace

ModelBlock discovered_model_block(const DiscoveredModel& m) {
  ModelBlock b;
  b.depth = m.depth;
  b.name = m.name;
  b.group_key = fmt::format("module {}", m.module_id);
  b.signature_index = m.signature_index;
  b.executed = m.executed;
  b.title = m.first_call_s >= 0
                ? fmt::format("{} (executed {}x - {:.2f}s)", m.name, m.executed, m.first_call_s)
                : fmt::format("{} (executed {}x)", m.name, m.executed);
  b.fields.push_back({"Model Type", m.model_type});
  b.fields.push_back({"Class", fmt::format("{} (<class '{}'>)", m.class_name, m.class_path)});
  if (m.depth == 0) b.fields.push_back({"Location", fmt::format("{}, line {}", m.file, m.line)});
  b.fields.push_back(
      {"Parameters",
       fmt::format("{} ({})", m.parameters, format_bytes(static_cast<double>(m.parameter_bytes)))});
  b.sig_fields.push_back({"Input Shape", input_shapes_text(m.inputs)});
  b.sig_fields.push_back({"Hash", m.hash8()});
  return b;
}

std::string describe_onnx_inputs(const onnx_model::ModelFacts& facts) {
  std::string s;
  for (const auto& in : facts.inputs) {
    if (!s.empty()) s += ", ";
    std::string dims;
    for (size_t i = 0; i < in.dims.size(); ++i) {
      if (i) dims += ", ";
      dims += in.dims[i].known() ? std::to_string(in.dims[i].value)
                                 : (in.dims[i].param.empty() ? "?" : in.dims[i].param);
    }
    if (in.dims.size() == 1) dims += ",";
    s += fmt::format("'{}': ({})", in.name, dims);
  }
  return s;
}

ModelBlock onnx_file_block(const std::string& title, const onnx_model::ModelFacts& facts,
                           const std::string& build_dir) {
  ModelBlock b;
  b.title = title;
  b.fields = {{"Model Type", "ONNX File (.onnx)"},
              {"Opset", std::to_string(facts.opset)},
              {"Parameters", fmt::format("{} ({})", facts.parameters,
                                         format_bytes(static_cast<double>(facts.parameter_bytes)))},
              {"Input Shape", describe_onnx_inputs(facts)},
              {"Hash", facts.sha256.substr(0, 8)},
              {"Build dir", build_dir}};
  return b;
}

void ResultPrinter::print(const std::string& name, const std::vector<ModelBlock>& blocks,
                          const ScriptFooter& footer) {
  if (!header_printed_) {
    std::cout << "\nModels discovered during profiling:\n\n";
    header_printed_ = true;
  }
  print_script_block(std::cout, name, blocks, footer);
}

}  // namespace turnkey::engine_internal
