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

// Every regular file under `dir` whose content holds `needle`.
std::vector<fs::path> files_holding(const fs::path& dir, const std::string& needle) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec) && slurp(it->path()).find(needle) != std::string::npos) {
      found.push_back(it->path());
    }
  }
  return found;
}

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

}  // namespace
}  // namespace turnkey::test
