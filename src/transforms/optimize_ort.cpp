// optimize-ort: ONNX Runtime's offline mode. ORT optimizes the graph while it creates a session
// and, with SetOptimizedModelFilePath, serializes the optimized graph; nothing is run.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <system_error>

#include "model_io.h"
#include "ort_util.h"
#include "turnkey/transforms/transforms.h"
#include "turnkey/common/error.h"

namespace turnkey::transforms {

namespace fs = std::filesystem;

namespace {

struct LevelName {
  OrtOptLevel level;
  const char* name;
  GraphOptimizationLevel ort;
};

constexpr LevelName kLevels[] = {
    {OrtOptLevel::Basic, "basic", ORT_ENABLE_BASIC},
    {OrtOptLevel::Extended, "extended", ORT_ENABLE_EXTENDED},
    {OrtOptLevel::Layout, "layout", ORT_ENABLE_LAYOUT},
    {OrtOptLevel::All, "all", ORT_ENABLE_ALL},
};

GraphOptimizationLevel to_ort(OrtOptLevel level) {
  for (const auto& l : kLevels) {
    if (l.level == level) return l.ort;
  }
  return ORT_ENABLE_ALL;
}

bool is_standard_domain(const std::string& domain) {
  return detail::is_default_domain(domain) || domain == "ai.onnx.ml";
}

void collect_runtime_specific_ops(const onnx::GraphProto& graph,
                                  std::map<std::string, int64_t>* ops) {
  for (const auto& node : graph.node()) {
    if (!is_standard_domain(node.domain())) ++(*ops)[node.domain() + "::" + node.op_type()];
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) collect_runtime_specific_ops(attr.g(), ops);
      for (const auto& g : attr.graphs()) collect_runtime_specific_ops(g, ops);
    }
  }
}

// Removes the files on destruction unless released: a failed stage leaves nothing behind.
class FileCleanup {
 public:
  void add(fs::path p) { paths_.push_back(std::move(p)); }
  void release() { paths_.clear(); }
  ~FileCleanup() {
    std::error_code ec;
    for (const auto& p : paths_) fs::remove(p, ec);
  }

 private:
  std::vector<fs::path> paths_;
};

}  // namespace

OrtOptLevel parse_ort_opt_level(const std::string& name) {
  for (const auto& l : kLevels) {
    if (name == l.name) return l.level;
  }
  throw Error(
      ErrorKind::InvalidInput,
      fmt::format("optimization level '{}' is not one of basic, extended, layout, all", name));
}

const char* ort_opt_level_name(OrtOptLevel level) {
  for (const auto& l : kLevels) {
    if (l.level == level) return l.name;
  }
  return "all";
}

namespace {

// The saved model must be one ORT loads again (layout-level models only on this CPU); what it
// became (nodes, runtime-specific ops, size, whether it kept a data file) goes into `result`.
void check_optimized(const fs::path& tmp, const fs::path& dir, OptimizeResult& result) {
  try {
    detail::open_session(tmp, detail::base_session_options(ORT_DISABLE_ALL));
  } catch (const Error& e) {
    throw Error(ErrorKind::Runtime,
                fmt::format("the optimized model does not load again: {}", e.what()));
  }
  detail::LoadedModel after;
  try {
    after = detail::load_model(tmp, /*load_external_data=*/false);
  } catch (const Error& e) {
    throw Error(ErrorKind::Runtime,
                fmt::format("the optimized model does not parse: {}", e.what()));
  }
  result.nodes_after = detail::count_nodes(after.model.graph());
  collect_runtime_specific_ops(after.model.graph(), &result.runtime_specific_ops);
  result.portable = result.runtime_specific_ops.empty();
  result.output_size_bytes = after.size_bytes;
  std::error_code ec;
  if (!result.external_data.empty() && !after.had_external_data) {
    // ORT kept every initializer inline (all below the size threshold): no data file.
    fs::remove(dir / result.external_data, ec);
    result.external_data.clear();
  }
}

}  // namespace

OptimizeResult optimize_ort(const fs::path& input, const fs::path& output, OrtOptLevel level) {
  const auto start = std::chrono::steady_clock::now();
  OptimizeResult result;
  detail::LoadedModel before;
  try {
    before = detail::load_model(input, /*load_external_data=*/false);
  } catch (const Error& e) {
    throw e.with_context("input");
  }
  // ORT inlines model-local functions (torch's dynamo exporter writes them): count their bodies
  // as the nodes it starts from, so that before and after compare like with like.
  try {
    detail::inline_local_functions(before.model);
  } catch (const Error& e) {
    throw e.with_context("input");
  }
  result.nodes_before = detail::count_nodes(before.model.graph());
  const bool external = before.had_external_data;
  before = {};  // ORT reads the file itself
  detail::check_output_location(input, output);

  // ORT writes the file itself, not atomically: it writes a temp file in the output's folder
  // (the ".onnx" ending keeps ORT from choosing its own .ort format), renamed when loadable.
  const fs::path dir = output.parent_path();
  std::random_device rd;
  const fs::path tmp =
      dir / fmt::format(".{}.tmp.{}.{:x}.onnx", output.filename().string(), ::getpid(), rd());
  FileCleanup cleanup;
  cleanup.add(tmp);

  Ort::SessionOptions options = detail::base_session_options(to_ort(level));
  options.SetOptimizedModelFilePath(tmp.c_str());
  if (external) {
    // Relative to the model's folder, as the location inside the saved model says.
    result.external_data = output.filename().string() + ".data";
    options.AddConfigEntry("session.optimized_model_external_initializers_file_name",
                           result.external_data.c_str());
    options.AddConfigEntry("session.optimized_model_external_initializers_min_size_in_bytes",
                           "1024");
    cleanup.add(dir / result.external_data);
  }
  try {
    detail::open_session(input, options);
  } catch (const Error& e) {
    throw e.with_context("optimizing");
  }
  std::error_code ec;
  if (!fs::is_regular_file(tmp, ec)) {
    throw Error(
        ErrorKind::Export,
        fmt::format("ONNX Runtime did not write the optimized model to '{}'", tmp.string()));
  }

  check_optimized(tmp, dir, result);

  fs::rename(tmp, output, ec);
  if (ec) {
    throw Error(ErrorKind::Export,
                fmt::format("cannot write output '{}': {}", output.string(), ec.message()));
  }
  cleanup.release();
  result.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace turnkey::transforms
