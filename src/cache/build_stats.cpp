// BuildStats (build_records.h): turnkey_stats.yaml as the engine builds it, every field checked
// against the field table (fields.h).
#include <fmt/format.h>

#include "turnkey/cache/build_records.h"
#include "turnkey/cache/fields.h"
#include "turnkey/common/error.h"

namespace turnkey {

using nlohmann::json;

namespace {

// How the build ended: keys of the stats that are not fields of the table (the report computes
// its columns of the same names from them).
const struct {
  const char* key;
  std::string BuildStats::*member;
} kRecordTexts[] = {
    {"build_name", &BuildStats::build_name}, {"build_status", &BuildStats::build_status},
    {"status", &BuildStats::status},         {"failed_tool", &BuildStats::failed_tool},
    {"error", &BuildStats::error},           {"samples_file", &BuildStats::samples_file}};

const char* type_name(FieldType type) {
  switch (type) {
    case FieldType::Text:
      return "text";
    case FieldType::Integer:
      return "an integer";
    case FieldType::Number:
      return "a number";
    case FieldType::Boolean:
      return "a boolean";
    case FieldType::TextList:
      return "a list of text";
    case FieldType::Object:
      return "a mapping or list";
  }
  return "?";
}

}  // namespace

bool fits_field(const StatsField& field, const json& value) {
  if (value.is_null()) return true;
  switch (field.type) {
    case FieldType::Text:
      return value.is_string();
    case FieldType::Integer:
      return value.is_number_integer();
    case FieldType::Number:
      return value.is_number();
    case FieldType::Boolean:
      return value.is_boolean();
    case FieldType::TextList:
      if (!value.is_array()) return false;
      for (const json& v : value) {
        if (!v.is_string()) return false;
      }
      return true;
    case FieldType::Object:
      return value.is_structured();
  }
  return false;
}

void BuildStats::set(std::string_view key, json value) {
  const StatsField* f = find_field(key);
  if (!f || f->scope == FieldScope::Report) {
    throw Error(
        ErrorKind::Internal,
        fmt::format("stats field '{}' is not in the field table (src/cache/fields.cpp)", key));
  }
  if (!fits_field(*f, value)) {
    throw Error(ErrorKind::Internal, fmt::format("stats field '{}' must be {}, got {}", key,
                                                 type_name(f->type), value.dump()));
  }
  fields_[f->key] = std::move(value);
}

bool BuildStats::has(std::string_view key) const { return find(key) != nullptr; }

const json* BuildStats::find(std::string_view key) const {
  auto it = fields_.find(std::string(key));
  return it == fields_.end() ? nullptr : &*it;
}

std::string BuildStats::text(std::string_view key, const std::string& fallback) const {
  const json* v = find(key);
  return v && v->is_string() ? v->get<std::string>() : fallback;
}

bool BuildStats::flag(std::string_view key, bool fallback) const {
  const json* v = find(key);
  return v && v->is_boolean() ? v->get<bool>() : fallback;
}

double BuildStats::number(std::string_view key, double fallback) const {
  const json* v = find(key);
  return v && v->is_number() ? v->get<double>() : fallback;
}

void BuildStats::carry_model_facts(const json& from) {
  if (!from.is_object()) return;
  for (const StatsField& f : field_table()) {
    if (f.scope != FieldScope::Model) continue;
    auto it = from.find(f.key);
    if (it != from.end() && fits_field(f, *it)) fields_[f.key] = *it;
  }
}

json BuildStats::to_json() const {
  json j = rest_;
  for (const auto& [key, value] : fields_.items()) j[key] = value;
  for (const auto& t : kRecordTexts) {
    if (!(this->*t.member).empty()) j[t.key] = this->*t.member;
  }
  if (results_recorded || !results.empty()) {
    json all = json::array();
    for (const ResultRecord& r : results) all.push_back(r.to_json());
    j["results"] = all;
  }
  return j;
}

BuildStats BuildStats::from_json(const json& stats) {
  BuildStats s;
  s.results_recorded = stats.is_object() && stats.contains("results");
  if (!stats.is_object()) return s;
  for (const auto& [key, value] : stats.items()) {
    if (key == "schema_version") continue;  // the writer stamps its own
    if (key == "results" && value.is_array()) {
      for (const json& r : value) {
        if (r.is_object()) s.results.push_back(ResultRecord::from_json(r));
      }
      continue;
    }
    bool taken = false;
    for (const auto& t : kRecordTexts) {
      if (key == t.key && value.is_string()) {
        s.*t.member = value.get<std::string>();
        taken = true;
      }
    }
    const StatsField* f = find_field(key);
    if (!taken && f && f->scope != FieldScope::Report && fits_field(*f, value)) {
      s.fields_[key] = value;
      taken = true;
    }
    if (!taken) s.rest_[key] = value;
  }
  return s;
}

}  // namespace turnkey
