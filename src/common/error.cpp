#include "turnkey/common/error.h"

#include "turnkey/common/text.h"

namespace turnkey {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidInput: return "invalid input";
    case ErrorKind::Io: return "i/o";
    case ErrorKind::Script: return "script";
    case ErrorKind::Export: return "export";
    case ErrorKind::Runtime: return "runtime";
    case ErrorKind::Cache: return "cache";
    case ErrorKind::Timeout: return "timeout";
    case ErrorKind::Internal: return "internal";
    case ErrorKind::NumericMismatch: return "numeric mismatch";
  }
  return "internal";
}

std::string first_line(std::string_view text) {
  std::string line = one_line(text, std::string_view::npos);
  return line.empty() ? "(no message)" : line;
}

}  // namespace turnkey
