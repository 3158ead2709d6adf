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
  }
  return "internal";
}

}  // namespace turnkey
