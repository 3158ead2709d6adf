#include "turnkey/console/terminal.h"

#include <fmt/format.h>

#include <iostream>
#include <mutex>
#include <sstream>
#include <streambuf>

namespace turnkey {

namespace {

bool is_c0_to_escape(unsigned char c) { return (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f; }

// Escapes as it forwards to the stream's own buffer. A UTF-8 lead byte 0xC2 is held until the
// next byte says whether the pair is a C1 control.
class TerminalFilter : public std::streambuf {
 public:
  explicit TerminalFilter(std::streambuf* raw) : raw_(raw) {}

  // Writes `bytes` unfiltered, after whatever the filter holds.
  void write_raw(std::string_view bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    release_held();
    raw_->sputn(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    std::lock_guard<std::mutex> lock(mutex_);
    put(static_cast<unsigned char>(traits_type::to_char_type(ch)));
    return ch;
  }

  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::streamsize i = 0; i < n; ++i) put(static_cast<unsigned char>(s[i]));
    return n;
  }

  int sync() override {
    std::lock_guard<std::mutex> lock(mutex_);
    release_held();
    return raw_->pubsync();
  }

 private:
  void put(unsigned char c) {
    if (held_) {
      held_ = false;
      if (c >= 0x80 && c <= 0x9f) {
        write(fmt::format("\\u00{:02x}", c));
        return;
      }
      raw_->sputc(static_cast<char>(0xc2));
    }
    if (c == 0xc2) {
      held_ = true;
    } else if (is_c0_to_escape(c)) {
      write(fmt::format("\\x{:02x}", c));
    } else {
      raw_->sputc(static_cast<char>(c));
    }
  }

  void release_held() {
    if (held_) raw_->sputc(static_cast<char>(0xc2));
    held_ = false;
  }

  void write(const std::string& s) {
    raw_->sputn(s.data(), static_cast<std::streamsize>(s.size()));
  }

  std::mutex mutex_;  // threads of a corpus run may print at once
  std::streambuf* raw_;
  bool held_ = false;
};

}  // namespace

void guard_terminal() {
  for (std::ostream* out : {&std::cout, &std::cerr}) {
    if (dynamic_cast<TerminalFilter*>(out->rdbuf()) != nullptr) continue;
    // Lives as long as the streams do: they write through it until the process ends.
    out->rdbuf(new TerminalFilter(out->rdbuf()));
  }
}

std::string terminal_safe(std::string_view text) {
  std::stringbuf sink;
  {
    TerminalFilter filter(&sink);
    std::ostream out(&filter);
    out << text << std::flush;
  }
  return sink.str();
}

void write_terminal_control(std::ostream& out, std::string_view sequence) {
  out.flush();
  if (auto* filter = dynamic_cast<TerminalFilter*>(out.rdbuf())) {
    filter->write_raw(sequence);
  } else {
    out << sequence;
  }
}

}  // namespace turnkey
