// turnkey: a thin CLI over the library. main() is the only catch-all.
#include <exception>
#include <iostream>

#include "turnkey/cli/cli.h"
#include "turnkey/common/env.h"
#include "turnkey/console/terminal.h"

int main(int argc, char** argv) {
  turnkey::restore_library_path();
  turnkey::guard_terminal();
  try {
    return turnkey::cli_main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "turnkey: internal error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << "turnkey: internal error\n";
    return 1;
  }
}
