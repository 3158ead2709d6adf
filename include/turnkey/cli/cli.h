// The command line: both grammars of the reference tool (`turnkey -i INPUT... TOOL ...` and the
// classic `turnkey [benchmark] INPUT... [options]`) mapped onto one engine, plus the management
// tools. Returns the exit code: 0 all fine, 1 some inputs failed, 2 usage error.
#pragma once

namespace turnkey {

int cli_main(int argc, char** argv);

}  // namespace turnkey
