// What turnkey prints reaches a terminal, and much of it comes from outside: a corpus script
// names its own model class and writes its own errors, a folder's file names are anyone's. A
// control character in them (ESC starts a sequence that can clear the screen, recolour it or
// rewrite earlier lines; CR overwrites a line) would act on the user's terminal. guard_terminal()
// puts a filter in front of std::cout and std::cerr that writes every control character as a
// visible escape (`\x1b`, `\u009b`); tab and newline pass. Not thread-safe: call it once, first.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

namespace turnkey {

// Installs the filter on std::cout and std::cerr (a second call does nothing).
void guard_terminal();

// `text` as the filter writes it: C0 controls but tab and newline, DEL, and the C1 controls
// (U+0080-U+009F) as escapes; everything else as is.
std::string terminal_safe(std::string_view text);

// Writes a control sequence turnkey itself means (the build monitor's "erase this line") past the
// filter of `out`, or plainly where `out` has none.
void write_terminal_control(std::ostream& out, std::string_view sequence);

}  // namespace turnkey
