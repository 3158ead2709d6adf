#include "turnkey/common/error.h"

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
    case ErrorKind::OutOfMemory: return "out of memory";
  }
  return "internal";
}

std::string first_line(std::string_view text) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return "(no message)";
  text.remove_prefix(start);
  text = text.substr(0, text.find_first_of("\r\n"));
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return std::string(text);
}

}  // namespace turnkey
