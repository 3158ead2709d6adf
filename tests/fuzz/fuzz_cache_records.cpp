// State and stats of a build (src/cache): <name>_state.yaml and turnkey_stats.yaml as another
// process, node or version may have left them in a shared cache. YAML to JSON, then each reader
// (BuildState, BuildStats, results), then back: what was read must be writable again.
#include "fuzz_support.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/cache/build_records.h"
#include "turnkey/common/error.h"

using namespace turnkey;
using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  json doc;
  try {
    doc = json_from_yaml(std::string(fuzz::as_view(data, size)));
  } catch (const Error&) {
    return 0;
  }
  std::vector<std::string> problems;
  const BuildState state = BuildState::from_json(doc, problems);
  yaml_from_json(state.to_json());
  for (const json& step : doc.is_object() && doc.contains("tools") && doc["tools"].is_array()
                              ? doc["tools"]
                              : json::array()) {
    ToolStep::from_json(step).to_json();
  }
  const BuildStats stats = BuildStats::from_json(doc);
  const std::string text = yaml_from_json(stats.to_json());
  json_from_yaml(text);  // what turnkey writes, it reads
  for (const ResultRecord& r : results_of(doc)) {
    r.summary();
    samples_file_name(r.fields);
  }
  result_key(result_fields_of(doc));
  return 0;
}
