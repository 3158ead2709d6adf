// The protocol message handler of the Python side (src/discovery/python_side.cpp): the bytes are
// everything the event pipe carries during one script — discovery, then the reply to each command
// the core sends (export, bench_prepare, bench_run, bench_profile, bench_outputs, reference,
// trace, stage). A user's script can write any bytes to that pipe; the core must take them as a
// failure of that input (turnkey::Error) and nothing else. The session runs in attach mode (no
// process is started): the event "pipe" is a memory file of the bytes (read as the pipe is, until
// its end), commands go to /dev/null, opened once.
#include <fcntl.h>
#include <unistd.h>

#include "fuzz_support.h"
#include "turnkey/common/error.h"
#include "turnkey/discovery/protocol_schema.h"
#include "turnkey/discovery/python_side.h"

namespace fs = std::filesystem;
using namespace turnkey;
using nlohmann::json;

namespace {

void commands(ScriptSession& s, int id) {
  const fs::path io = fuzz::scratch_dir() / "io";
  try {
    s.export_model(id, fuzz::scratch_dir() / "m.onnx", 17, io, {"torchscript", "dynamo"});
  } catch (const Error&) {
  }
  const std::pair<json, const char*> kCommands[] = {
      {{{"type", "bench_prepare"}, {"id", id}, {"mode", "eager"}}, "bench_ready"},
      {{{"type", "bench_run"}, {"n", 3}, {"empty", false}}, "bench_samples"},
      {{{"type", "bench_profile"}, {"n", 2}, {"path", (io / "p.json").string()}},
       "bench_profiled"},
      {{{"type", "bench_outputs"}, {"io_dir", io.string()}}, "bench_outputs"},
      {{{"type", "reference"}, {"id", id}, {"io_dir", io.string()}}, "reference_saved"},
      {{{"type", "trace"}, {"id", id}, {"path", (io / "m.pt").string()}, {"io_dir", io.string()}},
       "traced"},
      {{{"type", "stage"}, {"stage", "s"}, {"input", "a.onnx"}, {"output", "b.onnx"}},
       "stage_done"},
  };
  for (const auto& [command, reply_type] : kCommands) {
    try {
      const json reply = s.request(command, reply_type, ErrorKind::Runtime);
      // What request() returns has passed the schema: every field it keeps has its row's type.
      if (!protocol::conforms(reply)) __builtin_trap();
    } catch (const Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int dev_null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  ScriptOptions o;
  o.attach_event_fd = fuzz::memory_file(fuzz::as_view(data, size));
  o.attach_command_fd = ::dup(dev_null);
  if (o.attach_event_fd < 0 || o.attach_command_fd < 0) __builtin_trap();
  {
    ScriptSession s(o);
    const DiscoveryResult r = s.discover();
    if (r.ready) commands(s, r.models.empty() ? 0 : r.models.front().id);
  }  // the destructor closes both descriptors
  return 0;
}
