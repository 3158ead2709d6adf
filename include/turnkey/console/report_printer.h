// The terminal layout of results, as the reference tool printed it: a block per script, a
// sub-block per model (grouped by module when one module saw several input signatures), fields
// padded to one column, then `Status:` with Mean Latency / Throughput lines and one added line
// of further statistics. Pure formatting; no I/O other than the given stream.
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace turnkey {

using Field = std::pair<std::string, std::string>;

struct ModelBlock {
  int depth = 0;
  std::string name;        // "pytorch_model"
  std::string title;       // "pytorch_model (executed 1x)"
  std::string group_key;   // equal for entries of one module object; "" = never grouped
  int signature_index = 0;
  long long executed = 0;
  std::vector<Field> fields;      // per module: Model Type, Class, Location, Parameters
  std::vector<Field> sig_fields;  // per input signature: Input Shape, Hash, Build dir
  std::string status;                      // "" = no Status line
  std::vector<std::string> status_detail;  // lines under Status (already "Label:   value")
};

struct ScriptFooter {
  std::string status;  // e.g. "Script failed: ZeroDivisionError: division by zero"
  std::string detail;
};

void print_script_block(std::ostream& out, const std::string& script_name,
                        const std::vector<ModelBlock>& blocks, const ScriptFooter& footer = {});

// At least 4 significant digits in fixed notation: 0.001318, 12.35, 1234.
std::string format_latency(double ms);

}  // namespace turnkey
