// Report columns (from the field table) and what a row says about itself.
#include <fmt/format.h>

#include <limits>

#include "turnkey/cache/fields.h"
#include "turnkey/catalog/status.h"
#include "turnkey/catalog/tools.h"
#include "turnkey/report/report.h"

namespace turnkey::report {

using nlohmann::json;

const std::vector<Column>& columns() {
  static const std::vector<Column> kColumns = [] {
    std::vector<Column> out;
    for (const StatsField& f : field_table()) {
      if (!f.column) continue;
      const CellType type = f.type == FieldType::Integer  ? CellType::Integer
                            : f.type == FieldType::Number ? CellType::Number
                                                          : CellType::Text;
      out.push_back({f.column, type, f.meaning});
    }
    return out;
  }();
  return kColumns;
}

std::string csv_header() {
  std::string h;
  for (const Column& c : columns()) {
    if (!h.empty()) h += ',';
    h += c.name;
  }
  return h;
}

std::string Row::text(const std::string& column) const {
  auto it = cells.find(column);
  if (it == cells.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

double Row::number(const std::string& column) const {
  auto it = cells.find(column);
  if (it == cells.end() || !it->is_number()) return std::numeric_limits<double>::quiet_NaN();
  return it->get<double>();
}

// The status of a build (or result) that ran through, as the status table names it.
bool is_successful(const std::string& status) { return is_success(status); }

bool Row::successful() const { return is_successful(text("status")); }

bool Row::has(const std::string& column) const {
  auto it = cells.find(column);
  return it != cells.end() && !it->is_null();
}

const json& Row::object(const std::string& key) const {
  static const json kNone;
  auto it = objects.find(key);
  return it == objects.end() ? kNone : *it;
}

std::string Row::model_key() const {
  auto it = cells.find("hash_full");
  if (it != cells.end() && it->is_string() && !it->get<std::string>().empty()) {
    return it->get<std::string>();
  }
  if (!text("hash").empty()) return text("hash");
  return "build:" + text("build_name");
}

std::string Row::settings() const {
  if (!has("runs")) return "";  // a row of an older cache: the build's own numbers
  return settings_label([&](const char* field) { return cell_text(cells.value(field, json())); },
                        tool_in_result_label);
}

std::string Row::measurement_key() const {
  // A result (schema >= 4; it counts its runs) keys by its settings (fields.h); a row of an
  // older cache as before.
  if (!has("runs")) return model_key() + "|" + text("runtime") + "|" + text("device");
  return model_key() + "|" +
         settings_key([&](const char* field) { return cell_text(cells.value(field, json())); });
}

}  // namespace turnkey::report
