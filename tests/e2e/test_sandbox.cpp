// --sandbox (docs/sandbox.md): a hostile script tries to write to the home folder, /var/tmp and
// /etc, to connect to a loopback listener this test starts, and to read a secret from the home
// folder. Sandboxed, none of it gets out, its model and a good script's are still benchmarked;
// without --sandbox the same script behaves as it always did.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <random>

#include "e2e_util.h"
#include "support/temp_dir.h"

namespace turnkey::test {
namespace {

namespace fs = std::filesystem;

const char* kHostileScript = R"(import os, socket, sys
import torch

tag = os.environ["TK_SANDBOX_TAG"]
targets = [os.path.join(os.path.expanduser("~"), "written_" + tag), "/var/tmp/written_" + tag]
if os.environ.get("TK_TRY_ETC") == "1":
    targets.append("/etc/written_" + tag)
for path in targets:
    try:
        with open(path, "w") as f:
            f.write("x")
        print("WROTE", path)
    except OSError as e:
        print("DENIED", path, type(e).__name__)
try:
    with open(os.path.join(os.path.expanduser("~"), "secret.txt")) as f:
        print("SECRET", f.read())
except OSError as e:
    print("NO SECRET", type(e).__name__)
try:
    socket.create_connection(("127.0.0.1", int(os.environ["TK_SANDBOX_PORT"])), timeout=2).close()
    print("CONNECTED")
except OSError as e:
    print("NO NETWORK", type(e).__name__)

model = torch.nn.Linear(4, 2)
model(torch.ones(1, 4))
)";

const char* kGoodScript = R"(import torch
model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())
model(torch.ones(2, 3))
)";

// A loopback TCP listener; connected() says whether anyone connected (non-blocking accept).
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd_, 8) != 0) {
      throw std::runtime_error("listener");
    }
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~Listener() { close(fd_); }
  int port() const { return port_; }
  bool connected() const {
    const int c = accept(fd_, nullptr, nullptr);
    if (c >= 0) close(c);
    return c >= 0;
  }

 private:
  int fd_ = -1, port_ = 0;
};

class Sandbox : public ::testing::Test {
 protected:
  TempDir dir{"tk-e2e-sandbox"};
  std::string tag = std::to_string(std::random_device{}());
  std::string secret = "s3cr3t-" + tag;
  fs::path home() const { return dir.path() / "home"; }
  fs::path cache() const { return dir.path() / "cache"; }

  void SetUp() override {
    fs::create_directories(home());
    fs::create_directories(dir.path() / "scripts");
    std::ofstream(home() / "secret.txt") << secret;
    std::ofstream(dir.path() / "scripts" / "hostile.py") << kHostileScript;
    std::ofstream(dir.path() / "scripts" / "good.py") << kGoodScript;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove(fs::path("/var/tmp/written_" + tag), ec);
    fs::remove(fs::path("/etc/written_" + tag), ec);
  }

  RunResult run(std::vector<std::string> extra, const Listener& listener, bool try_etc) {
    std::vector<std::string> args = {(dir.path() / "scripts" / "hostile.py").string(),
                                     (dir.path() / "scripts" / "good.py").string(),
                                     "--iterations", "5"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_turnkey(args, cache(),
                       {{"HOME", home().string()},
                        {"TK_SANDBOX_TAG", tag},
                        {"TK_SANDBOX_PORT", std::to_string(listener.port())},
                        {"TK_TRY_ETC", try_etc ? "1" : ""}},
                       dir.path());
  }
};

TEST_F(Sandbox, NothingGetsOutAndBothScriptsAreBenchmarked) {
  Listener listener;
  RunResult r = run({"--sandbox"}, listener, true);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_FALSE(fs::exists(home() / ("written_" + tag)));
  EXPECT_FALSE(fs::exists("/var/tmp/written_" + tag));
  EXPECT_FALSE(fs::exists("/etc/written_" + tag));
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  // Denied operations reach the script as ordinary OSErrors.
  EXPECT_NE(r.out.find("DENIED /var/tmp/written_" + tag + " OSError"), std::string::npos) << r.out;
  EXPECT_FALSE(listener.connected());
  EXPECT_NE(r.out.find("NO NETWORK"), std::string::npos) << r.out;
  EXPECT_EQ(r.all().find(secret), std::string::npos);
  EXPECT_TRUE(files_holding(cache(), secret).empty());
  size_t benchmarked = 0;
  for (size_t at = r.out.find("Successfully benchmarked"); at != std::string::npos;
       at = r.out.find("Successfully benchmarked", at + 1)) {
    ++benchmarked;
  }
  EXPECT_EQ(benchmarked, 2u) << r.out;
  EXPECT_NE(r.out.find("Sandboxed: scripts ran with no network"), std::string::npos) << r.out;
}

TEST_F(Sandbox, WithoutItTheSameScriptBehavesAsBefore) {
  Listener listener;
  RunResult r = run({}, listener, false);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(fs::exists(home() / ("written_" + tag)));
  EXPECT_TRUE(fs::exists("/var/tmp/written_" + tag));
  EXPECT_TRUE(listener.connected());
  EXPECT_NE(r.out.find("SECRET " + secret), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Sandboxed:"), std::string::npos) << r.out;
}

// It composes with isolated, parallel runs (the workers start the sandboxed Python side) and the
// environment variable; an allowed path is writable, a missing one is refused in one line.
TEST_F(Sandbox, ComposesWithIsolationAndAllowsTheNamedPaths) {
  Listener listener;
  const fs::path allowed = dir.path() / "allowed";
  fs::create_directories(allowed);
  std::ofstream(dir.path() / "scripts" / "writer.py")
      << "import os, torch\nopen(" << '"' << (allowed / "out.txt").string() << '"'
      << ", 'w').write('ok')\ntorch.nn.Linear(2, 2)(torch.ones(1, 2))\n";
  RunResult r = run_turnkey({(dir.path() / "scripts" / "hostile.py").string(),
                             (dir.path() / "scripts" / "writer.py").string(), "-j", "2",
                             "--iterations", "5", "--sandbox-allow", allowed.string()},
                            cache(),
                            {{"HOME", home().string()}, {"TURNKEY_SANDBOX", "True"},
                             {"TK_SANDBOX_TAG", tag},
                             {"TK_SANDBOX_PORT", std::to_string(listener.port())}},
                            dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(fs::exists(allowed / "out.txt"));
  EXPECT_EQ(count_occurrences(r.out, "Successfully benchmarked"), 2) << r.out;
  EXPECT_FALSE(fs::exists(cache() / ".staging")) << "each worker removes its staging folder";
  EXPECT_FALSE(fs::exists(home() / ("written_" + tag)));
  EXPECT_FALSE(fs::exists("/var/tmp/written_" + tag));
  EXPECT_FALSE(listener.connected());
  EXPECT_NE(r.out.find("Sandboxed:"), std::string::npos) << r.out;

  RunResult bad = run_turnkey({(dir.path() / "scripts" / "good.py").string(), "--sandbox",
                               "--sandbox-allow", (dir.path() / "nowhere").string()},
                              cache());
  EXPECT_EQ(bad.exit_code, 2) << bad.all();
  EXPECT_NE(bad.err.find("--sandbox-allow " + (dir.path() / "nowhere").string() +
                         ": no such file or folder"),
            std::string::npos)
      << bad.err;
}

// The export's intermediate tensor (outputs with no signal, docs/measurement.md) comes through
// the staging folder like the inputs and outputs.
TEST_F(Sandbox, IntermediateTensorsComeThroughTheStagingFolder) {
  RunResult r =
      run_turnkey({(fs::path(TURNKEY_SOURCE_DIR) / "tests/data/scripts/zero_head.py").string(),
                   "--sandbox", "--iterations", "5"},
                  cache(), {{"HOME", home().string()}}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("Correctness:    within tolerance on intermediate tensors"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(cache() / ".staging"));
}

// torch.profiler's trace (benchmark --profile on torch-eager) is written by the Python side: it,
// too, comes through the staging folder.
TEST_F(Sandbox, TheTorchProfilersTraceComesThroughTheStagingFolder) {
  RunResult r = run_turnkey({(dir.path() / "scripts" / "good.py").string(), "--sandbox",
                             "--runtime", "torch-eager", "--profile", "--iterations", "5"},
                            cache(), {{"HOME", home().string()}}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.all();
  int traces = 0;
  for (const auto& e : fs::recursive_directory_iterator(cache())) {
    const std::string name = e.path().filename().string();
    if (name.rfind("profile_torch-eager_", 0) == 0 && fs::file_size(e.path()) > 0) ++traces;
  }
  EXPECT_EQ(traces, 1) << r.out;
  EXPECT_FALSE(fs::exists(cache() / ".staging"));
}

// A worker killed on its timeout never removes its staging folder itself: its supervisor does,
// once everything it ran is gone.
TEST_F(Sandbox, AWorkerKilledOnItsTimeoutLeavesNoStagingFolder) {
  std::ofstream(dir.path() / "scripts" / "sleeper.py") << "import time\ntime.sleep(600)\n";
  RunResult r = run_turnkey({(dir.path() / "scripts" / "sleeper.py").string(), "--sandbox",
                             "--process-isolation", "--timeout", "4"},
                            cache(), {{"HOME", home().string()}}, dir.path());
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_NE(r.all().find("timeout"), std::string::npos) << r.all();
  EXPECT_FALSE(fs::exists(cache() / ".staging")) << r.all();
}

// A script that attacks the cache it runs against: it writes, creates, renames and deletes in
// another build's folder and the cache root, reaches for host paths through /proc/*/root, and
// makes the Python side's own files for five of its six models bad in five ways (a link to the
// other build's ONNX, a hard link, a FIFO, a file it keeps open, a path it was not asked for).
const char* kCacheAttacker = R"(import glob, os, shutil, torch
import turnkeyml.discovery.export as export

victim = os.environ["TK_VICTIM"]
cache = os.path.dirname(victim)
victim_onnx = glob.glob(os.path.join(victim, "onnx", "*.onnx"))[0]
victim_stats = os.path.join(victim, "turnkey_stats.yaml")
attempts = [
    ("overwrite stats", lambda: open(victim_stats, "w").write("x")),
    ("overwrite onnx", lambda: open(victim_onnx, "wb").write(b"x")),
    ("create in root", lambda: open(os.path.join(cache, "planted"), "w").write("x")),
    ("rename build", lambda: os.rename(victim, victim + "_moved")),
    ("delete build", lambda: shutil.rmtree(victim)),
]
for pid in os.listdir("/proc"):
    if pid.isdigit():
        attempts.append(("through /proc/%s/root" % pid, lambda pid=pid: open(
            "/proc/%s/root%s" % (pid, victim_stats), "w").write("x")))
for name, attempt in attempts:
    try:
        attempt()
        print("DID", name)
    except OSError as e:
        print("DENIED", name)

calls = {"n": 0}
kept = []
save = export._write_atomic
def hostile_write(path, data):
    if os.path.basename(path) != "output_0.pb":
        return save(path, data)
    calls["n"] += 1
    n = calls["n"]
    if n == 1:
        os.symlink(victim_onnx, path)
    elif n == 2:
        save(path, data)
        os.link(path, path + ".again")
    elif n == 3:
        os.mkfifo(path)
    elif n == 4:
        save(path, data)
        kept.append(open(path, "ab"))
    else:
        save(path, data)
export._write_atomic = hostile_write
run = export.export
def hostile_export(entry, path, opset, io_dir, reply, *args, **kwargs):
    run(entry, path, opset, io_dir, reply, *args, **kwargs)
    if calls["n"] == 5:
        reply["outputs"] = [victim_stats]
    return reply
export.export = hostile_export

for width in range(3, 9):
    torch.nn.Linear(width, 2)(torch.ones(1, width))
)";

// Every file under `dir` with its content.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != ".lock") {
      files[e.path().lexically_relative(dir).string()] = slurp(e.path());
    }
  }
  return files;
}

TEST_F(Sandbox, AScriptCannotTouchOtherBuildsAndBadStagedFilesFailOnlyItsOwnBuilds) {
  std::ofstream(dir.path() / "scripts" / "victim.py")
      << "import torch\ntorch.nn.Linear(5, 5)(torch.ones(1, 5))\n";
  std::ofstream(dir.path() / "scripts" / "attacker.py") << kCacheAttacker;
  RunResult first =
      run_turnkey({(dir.path() / "scripts" / "victim.py").string(), "--iterations", "5"}, cache());
  ASSERT_EQ(first.exit_code, 0) << first.all();
  fs::path victim;
  for (const auto& e : fs::directory_iterator(cache())) {
    if (e.path().filename().string().rfind("victim_", 0) == 0) victim = e.path();
  }
  ASSERT_FALSE(victim.empty());
  const auto before = snapshot(victim);
  ASSERT_TRUE(before.count("turnkey_stats.yaml"));

  RunResult r =
      run_turnkey({(dir.path() / "scripts" / "attacker.py").string(),
                   (dir.path() / "scripts" / "good.py").string(), "--sandbox", "--iterations", "5"},
                  cache(), {{"HOME", home().string()}, {"TK_VICTIM", victim.string()}}, dir.path());
  EXPECT_EQ(r.exit_code, 1) << r.all();  // the attacker's bad builds failed
  EXPECT_EQ(r.out.find("DID "), std::string::npos) << r.out;
  for (const char* attempt :
       {"overwrite stats", "overwrite onnx", "create in root", "rename build", "delete build"}) {
    EXPECT_NE(r.out.find(std::string("DENIED ") + attempt), std::string::npos) << attempt;
  }
  EXPECT_NE(r.out.find("DENIED through /proc/"), std::string::npos) << r.out;
  EXPECT_EQ(snapshot(victim), before);
  EXPECT_FALSE(fs::exists(cache() / "planted"));
  EXPECT_FALSE(fs::exists(cache() / ".staging")) << "staging folders are removed";
  // Each bad file fails its own build, in one line; the sixth model and good.py's are benchmarked.
  for (const std::string& reason : std::vector<std::string>{
           "output_0.pb from the sandbox refused: a symbolic link",
           "output_0.pb from the sandbox refused: it has other hard links",
           "output_0.pb from the sandbox refused: not a regular file",
           "output_0.pb from the sandbox refused: still open in the sandbox",
           "the sandboxed Python side named a file turnkey did not ask for: '" +
               (victim / "turnkey_stats.yaml").string() + "'"}) {
    EXPECT_NE(r.out.find(reason), std::string::npos) << reason << "\n" << r.out;
  }
  EXPECT_EQ(count_occurrences(r.out, "Successfully benchmarked"), 2) << r.out;
}

}  // namespace
}  // namespace turnkey::test
