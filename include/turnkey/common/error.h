// The one error type of the library: a kind plus a one-line message that gains context at layer
// edges ("exporting model X of script Y: ..."). Thread-safe to copy; owns its strings.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace turnkey {

// NumericMismatch: a runtime ran, but its outputs are outside the tolerance of the PyTorch
// outputs saved at export; the measurement is kept but is not a valid result.
enum class ErrorKind {
  InvalidInput,
  Io,
  Script,
  Export,
  Runtime,
  Cache,
  Timeout,
  Internal,
  NumericMismatch,
  OutOfMemory  // a library's allocation failed, in its own words (status out_of_memory)
};

const char* error_kind_name(ErrorKind kind);

// The first non-blank line of a (library's) message, trimmed: what a one-line reason shows.
// "(no message)" when there is none.
std::string first_line(std::string_view text);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  // A copy of this error with "context: " in front of the message.
  Error with_context(const std::string& context) const {
    return Error(kind_, context + ": " + what());
  }

 private:
  ErrorKind kind_;
};

}  // namespace turnkey
