#include "turnkey/console/report_printer.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

namespace turnkey {

namespace {

constexpr int kLabelWidth = 16;

std::string indent(int level) { return std::string(static_cast<size_t>(8 * level), ' '); }

void print_field(std::ostream& out, int level, const Field& f) {
  if (f.second.empty()) return;  // an empty field says nothing ("Build dir:" before a dir exists)
  std::string label = f.first + ":";
  if (label.size() < kLabelWidth) label.resize(kLabelWidth, ' ');
  else label += ' ';
  out << indent(level) << label << f.second << "\n";
}

void print_status(std::ostream& out, int level, const ModelBlock& b) {
  if (b.status.empty()) return;
  print_field(out, level, {"Status", b.status});
  for (const std::string& line : b.status_detail) {
    out << indent(level) << std::string(kLabelWidth, ' ') << line << "\n";
  }
}

}  // namespace

std::string format_latency(double ms) {
  if (!(ms > 0) || !std::isfinite(ms)) return fmt::format("{:.4f}", ms);
  int decimals = 3 - static_cast<int>(std::floor(std::log10(ms)));
  if (decimals < 0) decimals = 0;
  if (decimals > 12) decimals = 12;
  return fmt::format("{:.{}f}", ms, decimals);
}

void print_script_block(std::ostream& out, const std::string& script_name,
                        const std::vector<ModelBlock>& blocks, const ScriptFooter& footer) {
  out << script_name << ":\n";
  // Group entries of one module object (several input signatures) at the first one's place.
  std::vector<std::vector<const ModelBlock*>> groups;
  std::map<std::string, size_t> group_of;
  for (const ModelBlock& b : blocks) {
    if (!b.group_key.empty()) {
      auto it = group_of.find(b.group_key);
      if (it != group_of.end()) {
        groups[it->second].push_back(&b);
        continue;
      }
      group_of[b.group_key] = groups.size();
    }
    groups.push_back({&b});
  }
  for (const auto& group : groups) {
    const ModelBlock& first = *group.front();
    const int level = 1 + 2 * first.depth;
    if (group.size() == 1) {
      out << indent(level) << first.title << "\n";
      for (const Field& f : first.fields) print_field(out, level + 1, f);
      for (const Field& f : first.sig_fields) print_field(out, level + 1, f);
      print_status(out, level + 1, first);
    } else {
      out << indent(level) << first.name << "\n";
      for (const Field& f : first.fields) print_field(out, level + 1, f);
      int k = 1;
      for (const ModelBlock* b : group) {
        out << "\n"
            << indent(level + 1)
            << fmt::format("With input shape {} (executed {}x)\n", k++, b->executed);
        for (const Field& f : b->sig_fields) print_field(out, level + 1, f);
        print_status(out, level + 1, *b);
      }
    }
    out << "\n";
  }
  if (!footer.status.empty()) {
    print_field(out, 1, {"Status", footer.status});
    if (!footer.detail.empty()) {
      out << indent(1) << std::string(kLabelWidth, ' ') << footer.detail << "\n";
    }
    out << "\n";
  }
  out.flush();
}

}  // namespace turnkey
