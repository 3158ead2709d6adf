// Turns what the user typed (files, globs, `.txt` lists, `script.py::hash1,hash2`) into a flat
// list of inputs, in the order given, without duplicates. Problems with one entry become an
// InputItem with an error so the run can go on with the others. Pure apart from reading files.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace turnkey {

struct InputItem {
  std::string given;               // as typed (or as written in a .txt list)
  std::filesystem::path path;      // resolved path (may not exist when error is set)
  std::vector<std::string> hashes; // `::h1,h2` filter; empty = all models
  std::string error;               // one-line reason this entry cannot run; "" when fine
};

// `.txt` list lines: one entry per line, relative to the list's folder; blank lines and `#`
// comments ignored; entries may be files, globs, regular expressions (at most 256 characters,
// matched against paths relative to the list's folder) or other lists. A list that includes
// itself (directly or not) yields an error item naming the cycle.
std::vector<InputItem> expand_inputs(const std::vector<std::string>& args);

// Splits "path::h1,h2" into the path and the hash list. "::" inside the path part is not
// supported (documented).
void split_hash_filter(const std::string& arg, std::string& path, std::vector<std::string>& hashes);

// Labels of a script: the `# labels: key::v1,v2 key2::v3` pragma on its first line ("#labels"
// also accepted). Empty when absent or unreadable.
using Labels = std::map<std::string, std::set<std::string>>;
Labels read_labels(const std::filesystem::path& script);
// `--labels key::value ...`: every given label must match (the script has that key with that
// value among its values). Throws Error(InvalidInput) on a filter without "::".
bool labels_match(const Labels& labels, const std::vector<std::string>& filters);
std::string labels_to_string(const Labels& labels);  // "key::v1,v2 key2::v3"

}  // namespace turnkey
