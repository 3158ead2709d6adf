// Validation and help of tool options, derived from the tool table (tools.cpp): one place says
// what values an option takes, so the command line, sequence files and help all agree.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include "catalog/tool_checks.h"
#include "turnkey/transforms/transforms.h"
#include "turnkey/cache/build_cache.h"
#include "turnkey/common/error.h"
#include "turnkey/common/text.h"
#include "turnkey/discovery/python_side.h"
#include "turnkey/catalog/tools.h"
#include "turnkey/machine/system_info.h"
#include "turnkey/onnx/model_facts.h"
#include "turnkey/runtime/runtime.h"

namespace turnkey {

using nlohmann::json;

namespace {

Error invalid(const std::string& message) { return Error(ErrorKind::InvalidInput, message); }

// Names users bring from other tools for values turnkey spells otherwise; offered as "did you
// mean" only when the value is one turnkey knows here.
struct ValueAlias {
  const char* given;
  const char* ours;
};
constexpr ValueAlias kValueAliases[] = {
    {"onnxruntime", "ort"},       {"onnx-runtime", "ort"},          {"onnxrt", "ort"},
    {"onnx", "ort"},              {"pytorch", "torch-eager"},       {"torch", "torch-eager"},
    {"eager", "torch-eager"},     {"torch-compile", "torch-compiled"}, {"compile", "torch-compiled"},
    {"inductor", "torch-compiled"}, {"jit", "torchscript"},         {"libtorch", "torchscript"},
    {"cpu", "x86"},               {"x64", "x86"},                   {"x86_64", "x86"},
    {"amd64", "x86"},             {"gpu", "nvidia"},                {"cuda", "nvidia"},
};

// The "did you mean" of a value: the same name in other case, a known alias, else the closest.
std::string value_hint(const std::string& value, const std::vector<std::string>& names) {
  std::string lower = value;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  auto known = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  if (lower != value && known(lower)) return lower;
  for (const ValueAlias& a : kValueAliases) {
    if (lower == a.given && known(a.ours)) return a.ours;
  }
  return closest_name(value, names);
}

// The runtimes whose sessions profile (Runtime::profiler()), for the message that refuses one.
std::vector<std::string> profiling_runtimes() {
  std::vector<std::string> names;
  for (const Runtime* r : runtime_registry()) {
    if (r->profiler().available) names.push_back(r->name());
  }
  return names;
}

std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

// A value as the user typed it: strings bare, numbers shortest ("0", not "0.0"), the rest JSON.
std::string shown(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) return number_text(value.get<double>());
  return value.dump();
}

// "from 1 to 100000000", "more than 0 and at most 86400", "at least 0".
std::string range_text(const OptionLimits& l) {
  if (l.low && l.high && !l.low_open && !l.high_open) {
    return fmt::format("from {} to {}", number_text(*l.low), number_text(*l.high));
  }
  std::vector<std::string> parts;
  if (l.low) parts.push_back((l.low_open ? "more than " : "at least ") + number_text(*l.low));
  if (l.high) parts.push_back((l.high_open ? "less than " : "at most ") + number_text(*l.high));
  return fmt::format("{}", fmt::join(parts, " and "));
}

const char* type_text(OptionSpec::Type type) {
  switch (type) {
    case OptionSpec::Type::Int: return "a whole number";
    case OptionSpec::Type::Float: return "a number";
    case OptionSpec::Type::String: return "a string";
    case OptionSpec::Type::Flag: return "true or false";
    case OptionSpec::Type::List: return "a list of strings";
    case OptionSpec::Type::Strings:
      return "a string (or a list of them)";
    case OptionSpec::Type::IntList:
      return "whole numbers separated by commas";
  }
  return "a value";
}

bool has_type(const json& value, OptionSpec::Type type) {
  switch (type) {
    case OptionSpec::Type::Int: return value.is_number_integer();
    case OptionSpec::Type::Float: return value.is_number();
    case OptionSpec::Type::String: return value.is_string();
    case OptionSpec::Type::Flag: return value.is_boolean();
    case OptionSpec::Type::List:
      if (!value.is_array()) return false;
      for (const json& item : value) {
        if (!item.is_string()) return false;
      }
      return true;
    case OptionSpec::Type::Strings:
      return value.is_string() || has_type(value, OptionSpec::Type::List);
    case OptionSpec::Type::IntList:
      if (value.is_number_integer()) return true;
      if (!value.is_array() || value.empty()) return false;
      for (const json& item : value) {
        if (!item.is_number_integer()) return false;
      }
      return true;
  }
  return false;
}

// The items of a value to check one by one: a list's items, else the value itself.
std::vector<json> items_of(const json& value) {
  if (value.is_array()) return std::vector<json>(value.begin(), value.end());
  return {value};
}

// An IntList as typed: "1,2,4".
std::string shown_list(const json& value) {
  std::vector<std::string> parts;
  for (const json& item : items_of(value)) parts.push_back(shown(item));
  return fmt::format("{}", fmt::join(parts, ","));
}

void check_choice(const OptionSpec& option, const std::string& value) {
  const std::vector<std::string> names = option.limits.choices();
  if (std::find(names.begin(), names.end(), value) != names.end()) return;
  throw invalid(not_one_of(option.long_flag(), value, names));
}

void check_value(const OptionSpec& option, const json& value) {
  if (value.is_null()) return;  // "no value": the option's default (or none)
  if (!has_type(value, option.type)) {
    throw invalid(fmt::format("{} {}: expected {}", option.long_flag(), shown(value),
                              type_text(option.type)));
  }
  const OptionLimits& l = option.limits;
  for (const json& item : items_of(value)) {
    if (!item.is_number() || !(l.low || l.high)) continue;
    const double v = item.get<double>();
    const bool ok = std::isfinite(v) && (!l.low || (l.low_open ? v > *l.low : v >= *l.low)) &&
                    (!l.high || (l.high_open ? v < *l.high : v <= *l.high));
    if (!ok) {
      throw invalid(fmt::format(
          "{} {}: expected {} {}", option.long_flag(), shown(item),
          option.type == OptionSpec::Type::IntList ? "whole numbers" : type_text(option.type),
          range_text(l)));
    }
  }
  if (option.type == OptionSpec::Type::IntList && value.is_array()) {
    std::vector<json> seen;
    for (const json& item : value) {
      if (std::find(seen.begin(), seen.end(), item) != seen.end()) {
        throw invalid(fmt::format("{} {}: {} is given twice", option.long_flag(), shown_list(value),
                                  shown(item)));
      }
      seen.push_back(item);
    }
  }
  if (l.choices) {
    if (value.is_string()) check_choice(option, value.get<std::string>());
    if (value.is_array()) {
      for (const json& item : value) check_choice(option, item.get<std::string>());
    }
  }
  if (l.check) {
    // A Strings option's check sees each use on its own.
    if (option.type == OptionSpec::Type::Strings) {
      for (const json& item : items_of(value)) l.check(item);
    } else {
      l.check(value);
    }
  }
}

}  // namespace

std::string not_one_of(const std::string& flag, const std::string& value,
                       const std::vector<std::string>& names) {
  const std::string hint = value_hint(value, names);
  return fmt::format("{} '{}': not one of {}{}", flag, value, fmt::join(names, ", "),
                     hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint));
}

std::optional<json> int_list_from_text(const std::string& text) {
  json out = json::array();
  size_t begin = 0;
  for (;;) {
    const size_t comma = text.find(',', begin);
    const std::string part = trim(
        std::string_view(text).substr(begin, comma == std::string::npos ? comma : comma - begin));
    long long v = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size()) return std::nullopt;
    out.push_back(v);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

std::vector<long long> int_list_values(const json& value) {
  std::vector<long long> out;
  if (value.is_null()) return out;
  for (const json& item : items_of(value)) out.push_back(item.get<long long>());
  return out;
}

std::vector<std::string> strings_values(const json& value) {
  std::vector<std::string> out;
  if (value.is_null()) return out;
  for (const json& item : items_of(value)) out.push_back(item.get<std::string>());
  return out;
}

std::string OptionSpec::long_flag() const {
  const size_t comma = flags.rfind(',');
  return comma == std::string::npos ? flags : flags.substr(comma + 1);
}

json default_tool_options(const ToolSpec& spec) {
  json o = json::object();
  for (const OptionSpec& opt : spec.options) {
    if (!opt.default_value.is_null()) o[opt.key] = opt.default_value;
  }
  return o;
}

void validate_tool_options(const ToolSpec& spec, const json& given) {
  if (!given.is_object()) {
    throw invalid(fmt::format("options of {} must be a map of option: value", spec.name));
  }
  for (const auto& [key, value] : given.items()) {
    const OptionSpec* option = nullptr;
    for (const OptionSpec& o : spec.options) {
      if (o.key == key) option = &o;
    }
    if (!option) throw invalid(fmt::format("{} has no option '{}'", spec.name, key));
    check_value(*option, value);
  }
  if (spec.check_together) {
    json options = default_tool_options(spec);
    options.update(given);
    spec.check_together(options);
  }
}

json tool_options_with_defaults(const ToolSpec& spec, const json& given) {
  validate_tool_options(spec, given);
  json options = default_tool_options(spec);
  options.update(given);
  return options;
}

std::string option_help(const OptionSpec& option, bool with_choices) {
  std::vector<std::string> facts;
  const OptionLimits& l = option.limits;
  if (l.low || l.high) facts.push_back(range_text(l));
  if (l.choices && with_choices) facts.push_back(fmt::format("one of {}", fmt::join(l.choices(), ", ")));
  const json& d = option.default_value;
  const bool shown_default = !d.is_null() && !d.is_array() && !d.is_boolean() &&
                             !(d.is_string() && d.get<std::string>().empty());
  if (shown_default) facts.push_back("default: " + shown(d));
  if (facts.empty()) return option.help;
  return fmt::format("{} ({})", option.help, fmt::join(facts, "; "));
}

// ---- the table's checks ------------------------------------------------------------------------

namespace tool_checks {

void check_runtime(const json& value) {
  const std::string name = value.get<std::string>();
  if (find_runtime(name)) return;
  // The original's GPU runtime: say what it needs rather than suggest 'ort'.
  if (name == "trt") {
    throw invalid(
        "--runtime 'trt': TensorRT needs an NVIDIA GPU (--device nvidia); turnkey has no built-in "
        "TensorRT runtime (a plugin can add one: docs/plugins.md)");
  }
  throw invalid(not_one_of("--runtime", name, runtime_names()));
}

std::vector<std::string> device_names() {
  std::vector<std::string> names;
  for (const Device& d : device_registry()) names.push_back(d.name);
  return names;
}

std::vector<std::string> exporters() { return {"auto", "torchscript", "dynamo"}; }

std::vector<std::string> ort_levels() {
  std::vector<std::string> names;
  for (transforms::OrtOptLevel level : {transforms::OrtOptLevel::Basic, transforms::OrtOptLevel::Extended,
                                   transforms::OrtOptLevel::Layout, transforms::OrtOptLevel::All}) {
    names.push_back(transforms::ort_opt_level_name(level));
  }
  return names;
}

// The Python side splits with shlex (POSIX rules): only an unclosed quote or a trailing
// backslash make that fail.
void check_script_args(const json& value) {
  const std::string s = value.get<std::string>();
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote == '\'') {
      if (c == '\'') quote = 0;
    } else if (c == '\\' && (quote == 0 || quote == '"')) {
      if (i + 1 == s.size()) {
        throw invalid(fmt::format("--script-args '{}': ends with a lone backslash", s));
      }
      ++i;
    } else if (quote == '"') {
      if (c == '"') quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    }
  }
  if (quote) throw invalid(fmt::format("--script-args '{}': no closing quotation", s));
}

void check_build_name(const json& value) {
  const std::string name = value.get<std::string>();
  if (!name.empty() && !is_safe_build_name(name)) {
    throw invalid(fmt::format("--build-name '{}': not a usable directory name", name));
  }
}

void check_attach(const json& value) {
  if (!value.get<std::string>().empty()) parse_attach_fds(value.get<std::string>());
}

void check_input_shapes(const json& value) {
  onnx_model::parse_input_shapes(value.get<std::string>());  // each use on its own
}

void check_input_data(const json& value) {
  const std::string path = value.get<std::string>();
  if (path.empty())
    throw invalid("--input-data: give a folder of input_N.pb files or an .npz file");
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status))
    throw invalid(fmt::format("--input-data {}: not found", path));
  if (!std::filesystem::is_directory(status) && std::filesystem::path(path).extension() != ".npz") {
    throw invalid(fmt::format(
        "--input-data {}: expected a folder of input_N.pb files or an .npz file", path));
  }
}

void check_cpu_list(const json& value) {
  if (!value.get<std::string>().empty()) parse_cpu_list(value.get<std::string>());
}

void check_runtime_args(const json& value) {
  for (const json& item : value) {
    const std::string s = item.get<std::string>();
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw invalid(fmt::format("--rt-args '{}': expected key=value", s));
    }
  }
}

void check_discover_together(const json& options) {
  if (int_list_values(options.value("batch_sizes", json())).empty()) return;
  if (!options.value("attach", "").empty()) {
    throw invalid(
        "--batch-sizes runs the script once per size; with --attach (the Python API's live "
        "model) give the inputs at each batch instead");
  }
  const std::string args = options.value("script_args", "");
  for (const char* flag : {"--batch_size ", "--batch_size="}) {
    if ((" " + args + " ").find(std::string(" ") + flag) != std::string::npos) {
      throw invalid(
          fmt::format("--batch-sizes and --script-args '{}' both set the batch size: "
                      "give one of them",
                      args));
    }
  }
}

void check_benchmark_together(const json& options) {
  const bool adaptive = options.value("adaptive", false);
  if (adaptive && options.contains("duration_s") && !options["duration_s"].is_null()) {
    throw invalid("--adaptive and --duration exclude each other");
  }
  // --profile and --input-data need what the runtime has: a profiler, an ONNX model to feed.
  const std::string name = options.value("runtime", std::string("ort"));
  const bool profile = options.value("profile", false);
  const bool input_data = !options.value("input_data", std::string()).empty();
  if (profile || input_data) {
    if (const Runtime* runtime = find_runtime(name)) {
      if (Availability a = runtime->profiler(); profile && !a.available) {
        throw invalid(
            fmt::format("--profile: {} (--profile works with the runtimes that have one: "
                        "{})",
                        a.reason, fmt::join(profiling_runtimes(), ", ")));
      }
      if (input_data && runtime->needs_live_model()) {
        throw invalid(fmt::format(
            "--input-data feeds ONNX models; {} runs the live PyTorch model on the inputs the "
            "script called it with",
            name));
      }
    }
  }
  long long most = 1;
  for (long long c : int_list_values(options.value("concurrency", json(1)))) {
    most = std::max(most, c);
  }
  if (most > 1) {
    if (adaptive) {
      throw invalid(fmt::format(
          "--concurrency {}: --adaptive stops on one request's median; with requests in "
          "flight use --iterations or --duration",
          most));
    }
    if (const Runtime* runtime = find_runtime(name)) {
      const ConcurrencySupport support = runtime->concurrency();
      if (!support.any()) {
        throw invalid(fmt::format("--concurrency {}: {} cannot serve concurrent requests: {}", most,
                                  name, support.refusal));
      }
    }
  }
  const int64_t low = options.value("min_iterations", int64_t{1});
  const int64_t high = options.value("max_iterations", low);
  if (low > high) {
    throw invalid(fmt::format("--min-iterations {} / --max-iterations {}: need min <= max", low,
                              high));
  }
}

void check_python_stage_together(const json& options) {
  const std::string stage = options.value("stage", "");
  if (stage.empty()) {
    throw Error(ErrorKind::InvalidInput, "python-stage needs --stage (the stage's unique_name)");
  }
  if (!is_safe_build_name(stage)) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("python-stage --stage '{}': not a usable name", stage));
  }
  const std::string file = options.value("file", "");
  std::error_code ec;
  if (!file.empty() && (std::filesystem::path(file).extension() != ".py" ||
                          !std::filesystem::is_regular_file(file, ec))) {
    throw Error(ErrorKind::InvalidInput,
                fmt::format("python-stage --file {}: not a Python file (.py)", file));
  }
}

}  // namespace tool_checks

}  // namespace turnkey
