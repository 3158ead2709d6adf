// Input lists (src/inputs/inputs.cpp): a .txt list whose lines are files, globs, regular
// expressions, other lists and `path::hash` filters, read in a folder that holds a few scripts,
// models and another list; and the `# labels:` pragma of a script's first line.
#include "fuzz_support.h"
#include "turnkey/common/error.h"
#include "turnkey/inputs/inputs.h"

namespace fs = std::filesystem;
using namespace turnkey;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool once = [] {
    fuzz::write_scratch("lists/a.py", "# labels: author::x,y task::z\n");
    fuzz::write_scratch("lists/b.onnx", "");
    fuzz::write_scratch("lists/sub/c.py", "");
    fuzz::write_scratch("lists/sub/inner.txt", "../a.py\nc.py::abcd1234\n");
    fuzz::write_scratch("lists/other.txt", "sub/inner.txt\nlist.txt\n");
    return true;
  }();
  (void)once;
  const std::string_view bytes = fuzz::as_view(data, size);
  // A list may name any file of the machine (`/*/*` globs the root, and every .txt it matches is
  // read as a list, as the user asked): the fuzzer stays in its folder, where a run is bounded.
  bool leaves_folder = bytes.find("..") != std::string_view::npos;
  for (size_t at = 0; at < bytes.size() && !leaves_folder; ++at) {
    if (at > 0 && bytes[at - 1] != '\n') continue;
    const size_t first = bytes.find_first_not_of(" \t\r", at);
    leaves_folder = first != std::string_view::npos && bytes[first] == '/';
  }
  if (!leaves_folder) {
    const fs::path list = fuzz::write_scratch("lists/list.txt", bytes);
    expand_inputs({list.string()});
  }
  const fs::path script = fuzz::write_scratch("lists/labelled.py", bytes);
  const Labels labels = read_labels(script);
  labels_to_string(labels);
  try {
    labels_match(labels, {"author::x", "task::z"});
  } catch (const Error&) {
  }
  return 0;
}
