#include "turnkey/inputs/inputs.h"

#include <glob.h>

#include <algorithm>
#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <re2/re2.h>

#include "turnkey/common/error.h"
#include "turnkey/common/text.h"

namespace turnkey {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxRegexBytes = 256;

bool has_glob_chars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

bool has_regex_chars(const std::string& s) {
  return s.find_first_of("^$+(){}|\\") != std::string::npos || s.find(".*") != std::string::npos;
}

std::vector<std::string> glob_paths(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

class Expander {
 public:
  std::vector<InputItem> items;

  void add(const std::string& given, const fs::path& base, std::vector<fs::path>& list_stack) {
    std::string path_part;
    std::vector<std::string> hashes;
    split_hash_filter(given, path_part, hashes);
    if (path_part.empty()) {
      error(given, given, "empty input name");
      return;
    }
    fs::path p = fs::path(path_part).is_absolute() ? fs::path(path_part) : base / path_part;

    std::error_code ec;
    if (fs::exists(p, ec)) {
      if (fs::is_directory(p, ec)) {
        error(given, p, "is a directory (give files, globs such as dir/*.py, or a .txt list)");
      } else if (p.extension() == ".txt") {
        add_list(given, p, list_stack);
      } else {
        push(given, p, hashes);
      }
      return;
    }
    if (has_glob_chars(path_part)) {
      if (!hashes.empty()) {
        error(given, p, "a hash filter (::hash) needs one script path, not a glob");
        return;
      }
      std::vector<std::string> matches = glob_paths(p.string());
      if (matches.empty() && !list_stack.empty() && has_regex_chars(path_part)) {
        add_regex(given, path_part, base, list_stack);
        return;
      }
      if (matches.empty()) {
        error(given, p, "glob matched no files");
        return;
      }
      for (const std::string& m : matches) {
        if (fs::is_directory(m, ec)) continue;
        if (fs::path(m).extension() == ".txt") {
          add_list(m, m, list_stack);
        } else {
          push(m, m, {});
        }
      }
      return;
    }
    if (!list_stack.empty() && has_regex_chars(path_part)) {
      add_regex(given, path_part, base, list_stack);
      return;
    }
    error(given, p, "not found");
  }

 private:
  std::set<std::string> seen_;

  void push(const std::string& given, const fs::path& p, std::vector<std::string> hashes) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(p, ec);
    std::string key = (ec ? p : canonical).string();
    for (const auto& h : hashes) key += "::" + h;
    if (!seen_.insert(key).second) return;
    items.push_back({given, p.lexically_normal(), std::move(hashes), ""});
  }

  void error(const std::string& given, const fs::path& p, const std::string& reason) {
    items.push_back({given, p, {}, reason});
  }

  void add_list(const std::string& given, const fs::path& list, std::vector<fs::path>& stack) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(list, ec);
    if (std::find(stack.begin(), stack.end(), canonical) != stack.end()) {
      std::string cycle;
      for (const fs::path& s : stack) cycle += s.filename().string() + " -> ";
      error(given, list, "input list cycle: " + cycle + canonical.filename().string());
      return;
    }
    std::ifstream in(list);
    if (!in) {
      error(given, list, "cannot read input list");
      return;
    }
    stack.push_back(canonical);
    std::string line;
    bool lists_any = false;
    while (std::getline(in, line)) {
      line = trim(line);
      if (line.empty() || line[0] == '#') continue;
      lists_any = true;
      add(line, list.parent_path(), stack);
    }
    stack.pop_back();
    if (!lists_any) error(given, list, "input list names no inputs (only blank lines or # comments)");
  }

  void add_regex(const std::string& given, const std::string& pattern, const fs::path& base,
                 std::vector<fs::path>& stack) {
    // RE2 (linear time, no recursion on the input): std::regex backtracked exponentially on
    // patterns such as (a|aa)*b and compiled by recursion, a frame per term, overflowing the
    // stack on a long line (docs/reliability.md). No path pattern needs more than this.
    if (pattern.size() > kMaxRegexBytes) {
      error(given, base / pattern.substr(0, 64),
            fmt::format("not found, and longer than the {} characters of a regular expression",
                        kMaxRegexBytes));
      return;
    }
    RE2::Options options;
    options.set_log_errors(false);
    const RE2 re(pattern, options);
    if (!re.ok()) {
      error(given, base / pattern, "not found, and not a valid regular expression");
      return;
    }
    std::vector<std::string> matches;
    std::error_code ec;
    fs::path root = base.empty() ? fs::path(".") : base;
    for (auto it = fs::recursive_directory_iterator(
             root, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      std::string rel = it->path().lexically_relative(root).generic_string();
      if (RE2::FullMatch(rel, re)) matches.push_back(it->path().string());
      if (matches.size() > 100000) break;
    }
    if (matches.empty()) {
      error(given, base / pattern, "regular expression matched no files");
      return;
    }
    std::sort(matches.begin(), matches.end());
    for (const std::string& m : matches) {
      if (fs::path(m).extension() == ".txt") add_list(m, m, stack);
      else push(m, m, {});
    }
  }
};

}  // namespace

void split_hash_filter(const std::string& arg, std::string& path, std::vector<std::string>& hashes) {
  hashes.clear();
  size_t pos = arg.rfind("::");
  if (pos == std::string::npos) {
    path = arg;
    return;
  }
  path = arg.substr(0, pos);
  std::string rest = arg.substr(pos + 2);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    std::string h = trim(rest.substr(start, comma == std::string::npos ? std::string::npos
                                                                         : comma - start));
    if (!h.empty()) {
      std::transform(h.begin(), h.end(), h.begin(), ::tolower);
      hashes.push_back(h);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

std::vector<InputItem> expand_inputs(const std::vector<std::string>& args) {
  Expander expander;
  std::vector<fs::path> stack;
  for (const std::string& arg : args) expander.add(arg, fs::path(), stack);
  return expander.items;
}

Labels read_labels(const fs::path& script) {
  Labels labels;
  std::ifstream in(script);
  std::string line;
  if (!in || !std::getline(in, line)) return labels;
  line = trim(line);
  if (line.empty() || line[0] != '#') return labels;
  line = trim(line.substr(1));
  if (line.rfind("labels", 0) != 0) return labels;
  line = trim(line.substr(6));
  if (!line.empty() && line[0] == ':') line = trim(line.substr(1));
  size_t pos = 0;
  while (pos < line.size()) {
    size_t end = line.find_first_of(" \t", pos);
    std::string token = line.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? line.size() : end + 1;
    size_t sep = token.find("::");
    if (sep == std::string::npos) continue;
    std::string key = token.substr(0, sep);
    std::string values = token.substr(sep + 2);
    auto& set = labels[key];
    size_t vstart = 0;
    while (vstart <= values.size()) {
      size_t comma = values.find(',', vstart);
      std::string v = values.substr(vstart, comma == std::string::npos ? std::string::npos
                                                                        : comma - vstart);
      if (!v.empty()) set.insert(v);
      if (comma == std::string::npos) break;
      vstart = comma + 1;
    }
  }
  return labels;
}

bool labels_match(const Labels& labels, const std::vector<std::string>& filters) {
  for (const std::string& f : filters) {
    size_t sep = f.find("::");
    if (sep == std::string::npos || sep == 0 || sep + 2 >= f.size()) {
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("--labels '{}': expected key::value (e.g. test_group::a)", f));
    }
    auto it = labels.find(f.substr(0, sep));
    if (it == labels.end()) return false;
    // "key::v1,v2" in a filter matches when the script has any of the listed values.
    bool any = false;
    std::string values = f.substr(sep + 2);
    size_t start = 0;
    while (start <= values.size()) {
      size_t comma = values.find(',', start);
      std::string v =
          values.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (it->second.count(v)) any = true;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (!any) return false;
  }
  return true;
}

std::string labels_to_string(const Labels& labels) {
  std::string out;
  for (const auto& [key, values] : labels) {
    if (!out.empty()) out += ' ';
    out += key + "::";
    bool first = true;
    for (const auto& v : values) {
      if (!first) out += ',';
      out += v;
      first = false;
    }
  }
  return out;
}

}  // namespace turnkey
