// One table: each message type the Python side sends and its fields (docs/protocol.md). Sizes are
// generous for what a real Python side sends (a traceback of a deep recursion, a log of a large
// export) and small enough that a forged message costs the core nothing.
#include "turnkey/discovery/protocol_schema.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <vector>

#include "turnkey/discovery/python_side.h"

namespace turnkey::protocol {

using nlohmann::json;

namespace {

enum class Kind {
  Str,       // a string of at most `max` bytes
  Enum,      // a string among `words` ("|"-separated)
  Hex64,     // 64 hex digits (a model's hash)
  Int,       // an integer in [min, max]
  Num,       // a finite number in [min, max]
  Bool,
  StrList,   // a list of at most `items` strings of at most `max` bytes
  IntList,   // a list of at most `items` integers in [min, max]
  NumList,   // a list of at most `items` finite numbers in [min, max]
  ObjList,   // a list of at most `items` objects of the fields `of`
  IdMap,     // an object whose keys are decimal ids (< kMaxModels) and values Int/Num in range
  Scalars,   // an object of at most 256 scalars, string lists and objects of scalars (stats)
};

struct Field {
  const char* name;
  Kind kind;
  bool required = false;
  double min = 0, max = 0;  // Int, Num, lists of them; Str: max bytes
  size_t items = 0;         // lists
  const std::vector<Field>* of = nullptr;
  const char* words = nullptr;
  bool integral = false;  // IdMap: integer values
};

constexpr double kI62 = 4611686018427387904.0;  // 2^62: counts and sizes
constexpr size_t kPathBytes = 4096, kLineBytes = size_t{1} << 20, kTextBytes = size_t{4} << 20;

Field str(const char* name, size_t max_bytes, bool required = false) {
  return {name, Kind::Str, required, 0, static_cast<double>(max_bytes)};
}
Field integer(const char* name, double min, double max, bool required = false) {
  return {name, Kind::Int, required, min, max};
}
Field number(const char* name, double min, double max) { return {name, Kind::Num, false, min, max}; }
Field strings(const char* name, size_t items, size_t max_bytes) {
  return {name, Kind::StrList, false, 0, static_cast<double>(max_bytes), items};
}

const std::vector<Field> kTensorEntry = {  // model.inputs, exported.intermediates
    str("name", kPathBytes),
    str("module", kPathBytes),
    str("tensor", kPathBytes),
    str("path", kPathBytes),
    {"shape", Kind::IntList, false, 0, kI62, 64},
    str("dtype", 64)};
const std::vector<Field> kOp = {str("op_type", 1024, true), number("self_ms", 0, 1e12),
                                integer("count", 0, kI62)};

// Fields of a reply to a command: its id and how it failed.
std::vector<Field> reply(std::initializer_list<Field> own) {
  std::vector<Field> f = {integer("id", -1, 1e9),       {"ok", Kind::Bool, true},
                          str("error", kLineBytes),     str("error_type", 1024),
                          str("error_status", 64),      str("traceback", kTextBytes)};
  f.insert(f.end(), own);
  return f;
}

struct Row {
  const char* type;
  std::vector<Field> fields;
};

const std::vector<Row>& table() {
  static const std::vector<Row> rows = {
      {"hello",
       {str("python", 256), str("torch", 256), str("onnx", 256), str("onnxscript", 256),
        integer("pid", 1, 1 << 22)}},
      {"model",
       {integer("id", 0, kMaxModels - 1, true), integer("parent_id", 0, kMaxModels - 1),
        integer("depth", 0, 10000), str("name", kPathBytes), str("class_name", kPathBytes),
        str("class_path", kPathBytes), str("model_type", 256), str("file", kPathBytes),
        integer("line", 0, 1e9), integer("parameters", 0, kI62),
        integer("parameter_bytes", 0, kI62),
        {"inputs", Kind::ObjList, false, 0, 0, 10000, &kTensorEntry},
        integer("signature_index", 0, kMaxModels), {"hash", Kind::Hex64, true},
        integer("module_id", 0, kMaxModels), str("framework_versions", 1024),
        integer("batch_size", 1, kI62)}},
      {"warning", {str("message", 65536), str("traceback", kTextBytes)}},
      {"script_end",
       {{"status", Kind::Enum, true, 0, 0, 0, nullptr, "ok|exception|exit"},
        integer("exit_code", -2147483648.0, 2147483647.0), str("error", kLineBytes),
        str("error_type", 1024), str("error_status", 64), str("traceback", kTextBytes),
        {"interrupted", Kind::Bool}}},
      {"counts",
       {{"counts", Kind::IdMap, false, 0, kI62, 0, nullptr, nullptr, true},
        {"first_call_s", Kind::IdMap, false, 0, 1e9}}},
      {"ready", {}},
      {"error", {str("error", kLineBytes)}},
      {"exported",
       reply({str("onnx_path", kPathBytes), strings("inputs", 10000, kPathBytes),
              strings("outputs", 10000, kPathBytes), strings("float64_outputs", 10000, kPathBytes),
              strings("input_names", 10000, kPathBytes),
              strings("output_names", 10000, kPathBytes), integer("opset", 1, 1000),
              str("exporter", 64), str("exporter_version", 1024),
              str("exporter_fallback", kLineBytes),
              str("exporter_warning", kLineBytes), str("float64_left_out", kLineBytes),
              number("export_s", 0, 1e9),
              str("log", kTextBytes), strings("exporter_fixes", 1000, 256),
              {"intermediates", Kind::ObjList, false, 0, 0, 1000, &kTensorEntry}})},
      {"bench_ready",
       reply({integer("threads", 0, 100000), {"compiled", Kind::Scalars},
              {"cuda", Kind::Scalars}})},
      {"bench_samples",
       reply({{"samples_ns", Kind::NumList, false, 0, 1e18, size_t{1} << 21},
              {"device_memory", Kind::Scalars}})},
      {"bench_profiled",
       reply({{"ops", Kind::ObjList, false, 0, 0, 100000, &kOp}, number("run_ms", 0, 1e12)})},
      {"bench_outputs", reply({strings("outputs", 10000, kPathBytes)})},
      {"reference_saved",
       reply({strings("inputs", 10000, kPathBytes), strings("outputs", 10000, kPathBytes)})},
      {"float64_saved",
       reply({strings("float64_outputs", 10000, kPathBytes), str("float64_left_out", kLineBytes),
              str("log", kTextBytes)})},
      {"traced", reply({str("path", kPathBytes), strings("inputs", 10000, kPathBytes)})},
      {"stage_done", reply({str("log", kTextBytes)})},
  };
  return rows;
}

// A bound as people write it: 4611686018427387904, not 4.611686018427388e+18.
std::string bound(double d) {
  if (d == std::floor(d) && std::abs(d) < 9.2e18) return std::to_string(static_cast<int64_t>(d));
  return fmt::format("{}", d);
}

[[noreturn]] void refuse(const std::string& where, const std::string& why) {
  throw ProtocolError(fmt::format("{} {}", where, why));
}

bool in_range(const json& v, double min, double max, bool integral) {
  if (integral ? !v.is_number_integer() : !v.is_number()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && d >= min && d <= max;
}

const char* kind_text(const Field& f) {
  switch (f.kind) {
    case Kind::Str: return "a string";
    case Kind::Enum: return "one of its words";
    case Kind::Hex64: return "64 hex digits";
    case Kind::Int: return "an integer";
    case Kind::Num: return "a number";
    case Kind::Bool: return "a boolean";
    case Kind::StrList: return "a list of strings";
    case Kind::IntList: return "a list of integers";
    case Kind::NumList: return "a list of numbers";
    case Kind::ObjList: return "a list of objects";
    case Kind::IdMap: return "an object of model ids";
    case Kind::Scalars: return "an object of plain values";
  }
  return "?";
}

json fields_of(const json& object, const std::vector<Field>& fields, const std::string& where);

bool is_scalar(const json& v, size_t max_bytes) {
  if (v.is_string()) return v.get_ref<const json::string_t&>().size() <= max_bytes;
  return v.is_null() || v.is_boolean() || (v.is_number() && std::isfinite(v.get<double>()));
}

// Stats an optional reply part carries (torch.compile's facts, CUDA's): plain values, lists of
// strings, and one level of objects of plain values.
bool scalars(const json& v, int depth) {
  if (!v.is_object() || v.size() > 256) return false;
  for (const auto& [key, value] : v.items()) {
    if (key.size() > 256) return false;
    if (is_scalar(value, 65536)) continue;
    if (value.is_array() && value.size() <= 1000) {
      for (const json& s : value) {
        if (!s.is_string() || s.get_ref<const json::string_t&>().size() > 65536) return false;
      }
      continue;
    }
    if (depth == 0 && scalars(value, 1)) continue;
    return false;
  }
  return true;
}

bool id_key(const std::string& key) {
  if (key.empty() || key.size() > 6) return false;
  for (char c : key) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return std::strtoul(key.c_str(), nullptr, 10) < kMaxModels;
}

json value_of(const Field& f, const json& v, const std::string& where) {
  const std::string at = fmt::format("{}: field '{}'", where, f.name);
  auto list = [&](auto check) {
    if (!v.is_array()) refuse(at, fmt::format("is not {}", kind_text(f)));
    if (v.size() > f.items) refuse(at, fmt::format("has more than {} items", f.items));
    for (const json& item : v) check(item);
    return v;
  };
  switch (f.kind) {
    case Kind::Str:
    case Kind::Enum:
    case Kind::Hex64: {
      if (!v.is_string()) refuse(at, fmt::format("is not {}", kind_text(f)));
      const std::string& s = v.get_ref<const json::string_t&>();
      if (f.kind == Kind::Str && s.size() > f.max) {
        refuse(at, fmt::format("is longer than {} bytes", bound(f.max)));
      }
      if (f.kind == Kind::Enum &&
          fmt::format("|{}|", f.words).find(fmt::format("|{}|", s)) == std::string::npos) {
        refuse(at, fmt::format("is '{}', not one of {}", excerpt(s, 40), f.words));
      }
      if (f.kind == Kind::Hex64 &&
          (s.size() != 64 || s.find_first_not_of("0123456789abcdef") != std::string::npos)) {
        refuse(at, "is not 64 hex digits");
      }
      return v;
    }
    case Kind::Int:
    case Kind::Num:
      if (!in_range(v, f.min, f.max, f.kind == Kind::Int)) {
        refuse(at, fmt::format("is not {} in [{}, {}]", kind_text(f), bound(f.min), bound(f.max)));
      }
      return v;
    case Kind::Bool:
      if (!v.is_boolean()) refuse(at, "is not a boolean");
      return v;
    case Kind::StrList:
      return list([&](const json& s) {
        if (!s.is_string() || s.get_ref<const json::string_t&>().size() > f.max) {
          refuse(at, fmt::format("holds an item that is not a string of at most {} bytes",
                                 bound(f.max)));
        }
      });
    case Kind::IntList:
    case Kind::NumList:
      return list([&](const json& n) {
        if (!in_range(n, f.min, f.max, f.kind == Kind::IntList)) {
          refuse(at, fmt::format("holds an item that is not a number in [{}, {}]", bound(f.min),
                                 bound(f.max)));
        }
      });
    case Kind::ObjList: {
      if (!v.is_array()) refuse(at, "is not a list of objects");
      if (v.size() > f.items) refuse(at, fmt::format("has more than {} items", f.items));
      json out = json::array();
      for (const json& item : v) out.push_back(fields_of(item, *f.of, at));
      return out;
    }
    case Kind::IdMap:
      if (!v.is_object()) refuse(at, "is not an object");
      for (const auto& [key, n] : v.items()) {
        if (!id_key(key)) refuse(at, "has a key that is not a model id");
        if (!in_range(n, f.min, f.max, f.integral)) {
          refuse(at, fmt::format("holds a value that is not a number in [{}, {}]", bound(f.min),
                                 bound(f.max)));
        }
      }
      return v;
    case Kind::Scalars:
      if (!scalars(v, 0)) refuse(at, "is not an object of at most 256 plain values");
      return v;
  }
  refuse(at, "has no rule");
}

json fields_of(const json& object, const std::vector<Field>& fields, const std::string& where) {
  if (!object.is_object()) refuse(where, "holds something other than an object");
  json out = json::object();
  for (const Field& f : fields) {
    auto it = object.find(f.name);
    if (it == object.end() || it->is_null()) {
      if (f.required) refuse(where, fmt::format("lacks its field '{}'", f.name));
      continue;
    }
    out[f.name] = value_of(f, *it, where);
  }
  return out;
}

// A value a message sent where a plain one belongs, for an error. An array or object is named,
// not printed: a line may nest millions deep, and printing recurses per level.
std::string described(const json& v) {
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return excerpt(v.dump(), 40);
}

}  // namespace

json validate(const json& message) {
  if (!message.is_object()) throw ProtocolError("sent a line that is not a JSON object");
  auto v = message.find("v");
  if (v == message.end() || !v->is_number_integer() || v->get<int64_t>() != kProtocolVersion) {
    throw ProtocolError(fmt::format("protocol version mismatch: core speaks {}, the line says {}",
                                    kProtocolVersion,
                                    v == message.end() ? "nothing" : described(*v)));
  }
  auto type = message.find("type");
  if (type == message.end() || !type->is_string()) throw ProtocolError("a message has no type");
  const std::string& name = type->get_ref<const json::string_t&>();
  for (const Row& row : table()) {
    if (name != row.type) continue;
    json out = fields_of(message, row.fields, fmt::format("'{}' message", row.type));
    out["v"] = kProtocolVersion;
    out["type"] = row.type;
    return out;
  }
  throw ProtocolError(fmt::format("unknown message type '{}'", excerpt(name, 60)));
}

bool conforms(const json& message) {
  try {
    return validate(message) == message;
  } catch (const ProtocolError&) {
    return false;
  }
}

std::string excerpt(std::string_view text, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < text.size() && out.size() < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (text.size() > max_bytes && out.size() >= max_bytes) out += "...";
  return out;
}

}  // namespace turnkey::protocol
