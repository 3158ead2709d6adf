// The filter in front of std::cout and std::cerr (console/terminal.h): what acts on a terminal is
// written as an escape, what a user reads passes unchanged.
#include <gtest/gtest.h>

#include <sstream>

#include "turnkey/console/terminal.h"

namespace turnkey {
namespace {

TEST(TerminalSafe, ControlsBecomeEscapesAndTextPasses) {
  EXPECT_EQ(terminal_safe("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(terminal_safe("line\rover\x07\x7f"), "line\\x0dover\\x07\\x7f");
  EXPECT_EQ(terminal_safe("tab\tand\nnewline"), "tab\tand\nnewline");
  EXPECT_EQ(terminal_safe(std::string("\xc2\x9b") + "31m"), "\\u009b31m");  // C1 CSI
  EXPECT_EQ(terminal_safe("caf\xc3\xa9 \xc2\xa9 \xe2\x80\x94"),
            "caf\xc3\xa9 \xc2\xa9 \xe2\x80\x94");
  EXPECT_EQ(terminal_safe("cut \xc2"), "cut \xc2");  // a lead byte at the end
  EXPECT_EQ(terminal_safe(std::string("nul\0!", 5)), "nul\\x00!");
}

TEST(TerminalSafe, AControlSequenceTurnkeyMeansPassesThroughWriteTerminalControl) {
  std::ostringstream plain;
  write_terminal_control(plain, "\r\x1b[K");
  EXPECT_EQ(plain.str(), "\r\x1b[K");
}

}  // namespace
}  // namespace turnkey
