// .npz and .npy input data (src/common/npz.cpp): the same bytes as an archive and as one array.
// Only turnkey::Error may leave the parser (one line for the user); anything else is a finding.
#include "fuzz_support.h"
#include "turnkey/common/error.h"
#include "turnkey/common/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = turnkey::fuzz::as_view(data, size);
  try {
    turnkey::parse_npz(bytes);
  } catch (const turnkey::Error&) {
  }
  try {
    turnkey::parse_npy(bytes, "x");
  } catch (const turnkey::Error&) {
  }
  return 0;
}
