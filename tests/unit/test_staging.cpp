// The staging folder of a sandboxed input (include/turnkey/discovery/staging.h): what the core
// takes from it and what it refuses, as a hostile script would leave it.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "support/temp_dir.h"
#include "turnkey/discovery/staging.h"

namespace turnkey {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

class StagingTest : public ::testing::Test {
 protected:
  test::TempDir dir{"tk-unit-staging"};
  fs::path cache() const { return dir.path() / "cache"; }
  fs::path build() const { return cache() / "b_12345678"; }
  void SetUp() override { fs::create_directories(build() / "io"); }

  // The reason take() gives for the staged file `make` leaves at `staged` ("" when taken).
  std::string refusal(Outbox& out, const fs::path& staged) {
    try {
      out.take(staged.string(), ErrorKind::Export);
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  }
};

TEST_F(StagingTest, AFileIsMovedByRenameWithoutACopy) {
  Staging staging(cache());
  Outbox out(&staging);
  const fs::path staged = out.file(build() / "m.onnx");
  EXPECT_EQ(staged.parent_path().parent_path(), staging.root());
  { std::ofstream(staged) << "model"; }
  // 100 MB (sparse): taken by rename, so the build holds the very inode that was staged.
  ASSERT_EQ(truncate(staged.c_str(), 100 << 20), 0);
  struct stat before {
  }, after{};
  ASSERT_EQ(stat(staged.c_str(), &before), 0);
  EXPECT_EQ(out.take(staged.string(), ErrorKind::Export), build() / "m.onnx");
  ASSERT_EQ(stat((build() / "m.onnx").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_size, 100 << 20);
  EXPECT_FALSE(fs::exists(staged));
  const fs::path root = staging.root();
  staging.remove();
  EXPECT_FALSE(fs::exists(root));
  EXPECT_FALSE(fs::exists(cache() / ".staging"));
}

TEST_F(StagingTest, LinksFifosHardLinksAndOpenFilesAreRefusedAndNothingOutsideIsTouched) {
  const fs::path victim = cache() / "other_00000000" / "turnkey_stats.yaml";
  fs::create_directories(victim.parent_path());
  std::ofstream(victim) << "theirs";
  Staging staging(cache());
  Outbox out(&staging);
  const fs::path io = out.folder(build() / "io");

  fs::create_symlink(victim, io / "input_0.pb");
  EXPECT_EQ(refusal(out, io / "input_0.pb"),
            "input_0.pb from the sandbox refused: a symbolic link");

  ASSERT_EQ(mkfifo((io / "input_1.pb").c_str(), 0600), 0);
  EXPECT_EQ(refusal(out, io / "input_1.pb"),
            "input_1.pb from the sandbox refused: not a regular file");

  std::ofstream(io / "input_2.pb") << "x";
  fs::create_hard_link(io / "input_2.pb", io / "spare");
  EXPECT_EQ(refusal(out, io / "input_2.pb"),
            "input_2.pb from the sandbox refused: it has other hard links");

  std::ofstream(io / "output_0.pb") << "x";
  const int held = open((io / "output_0.pb").c_str(), O_WRONLY);
  ASSERT_GE(held, 0);
  EXPECT_EQ(refusal(out, io / "output_0.pb"),
            "output_0.pb from the sandbox refused: still open in the sandbox");
  close(held);

  EXPECT_EQ(refusal(out, io / "output_1.pb"), "output_1.pb from the sandbox refused: missing");
  EXPECT_EQ(read_all(victim), "theirs");
  EXPECT_FALSE(fs::exists(build() / "io" / "input_0.pb"));
  EXPECT_FALSE(fs::exists(build() / "io" / "input_2.pb"));
  // Removing the staging folder removes the links in it, never what they point at.
  staging.remove();
  EXPECT_EQ(read_all(victim), "theirs");
}

TEST_F(StagingTest, OnlyTheNamesAskedForAreTakenEachOnce) {
  Staging staging(cache());
  Outbox out(&staging);
  const fs::path io = out.folder(build() / "io");
  const fs::path model = out.file(build() / "m.onnx");
  for (const char* name : {"input_0.pb", "evil.pb", "output_0.pb"}) std::ofstream(io / name) << "x";
  std::ofstream(model) << "m";
  const std::string not_asked = "the sandboxed Python side named a file turnkey did not ask for";
  for (const fs::path& p : {io / "evil.pb", io / ".." / "input_0.pb", build() / "io" / "input_0.pb",
                            fs::path("/etc/passwd"), model.parent_path() / "other.onnx"}) {
    EXPECT_EQ(refusal(out, p).rfind(not_asked, 0), 0u) << p;
  }
  EXPECT_EQ(refusal(out, io / "input_0.pb"), "");
  EXPECT_EQ(refusal(out, io / "input_0.pb"), "the sandboxed Python side named input_0.pb twice");
  EXPECT_EQ(refusal(out, model), "");
  EXPECT_EQ(read_all(build() / "m.onnx"), "m");
  EXPECT_FALSE(fs::exists(build() / "io" / "evil.pb"));
}

TEST_F(StagingTest, AStagingFolderReplacedByALinkIsNotFollowed) {
  const fs::path elsewhere = dir.path() / "elsewhere";
  fs::create_directories(elsewhere);
  std::ofstream(elsewhere / "m.onnx") << "not the sandbox's to give";
  Staging staging(cache());
  // Names the sandbox made first in the staging folder are skipped, links included.
  fs::create_directory_symlink(elsewhere, staging.root() / "1");
  Outbox out(&staging);
  const fs::path staged = out.file(build() / "m.onnx");
  EXPECT_EQ(staged.parent_path(), staging.root() / "2");
  // Then the folder made for the command is swapped for a link.
  fs::remove(staged.parent_path());
  fs::create_directory_symlink(elsewhere, staged.parent_path());
  EXPECT_EQ(refusal(out, staged),
            "m.onnx from the sandbox refused: its staging folder was replaced by a file or a "
            "link");
  EXPECT_FALSE(fs::exists(build() / "m.onnx"));
  EXPECT_TRUE(fs::exists(elsewhere / "m.onnx"));
}

TEST_F(StagingTest, FilesBesideAModelAreTakenOnlyByPlainName) {
  Staging staging(cache());
  Outbox out(&staging);
  const fs::path staged = out.file(build() / "m.onnx");
  std::ofstream(staged) << "m";
  std::ofstream(staged.parent_path() / "weights.bin") << "w";
  const fs::path model = out.take(staged.string(), ErrorKind::Export);
  EXPECT_EQ(out.left_beside(model), std::set<std::string>{"weights.bin"});
  EXPECT_EQ(out.take_beside(model, "weights.bin", ErrorKind::Export), build() / "weights.bin");
  EXPECT_EQ(read_all(build() / "weights.bin"), "w");
  EXPECT_THROW(out.take_beside(model, "../../x", ErrorKind::Export), Error);
}

// A turnkey killed with SIGKILL leaves its staging folder; the next one on this host removes it,
// and leaves alone what live processes, other hosts (a cache shared by Slurm nodes) and other pid
// namespaces (a container with the host's name) made.
TEST_F(StagingTest, FoldersOfThisHostsEndedProcessesAreSweptOthersKept) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);  // its pid now names no process
  char host_name[256] = {};
  gethostname(host_name, sizeof(host_name) - 1);
  const std::string ns = fs::read_symlink("/proc/self/ns/pid").string();  // "pid:[4026531836]"
  const std::string host =
      fmt::format("{}-{}", host_name, ns.substr(5, ns.size() - 6));  // this host and namespace
  const fs::path parent = cache() / ".staging";
  const fs::path dead = parent / fmt::format("{}-{}-abc123", host, child);
  const fs::path dead_held = parent / fmt::format("{}-{}-abc123.held", host, child);
  const fs::path live = parent / fmt::format("{}-{}-def456", host, getppid());
  const fs::path other_host = parent / fmt::format("another-node-{}-{}-ghi789", 4026531836, child);
  const fs::path other_namespace = parent / fmt::format("{}-1-{}-jkl012", host_name, child);
  for (const fs::path& p : {dead, dead_held, live, other_host, other_namespace}) {
    fs::create_directories(p / "x");
  }
  const fs::path outside = cache() / "outside.txt";
  std::ofstream(outside) << "keep";
  fs::create_symlink(outside, dead / "link");  // removed as a link, never followed

  Staging staging(cache());
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(dead_held));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other_host));
  EXPECT_TRUE(fs::exists(other_namespace));  // a container's, with the host's name
  EXPECT_TRUE(fs::exists(outside));
  EXPECT_EQ(staging.root().filename().string().rfind(fmt::format("{}-{}-", host, getpid()), 0), 0u);
}

TEST(Outbox, WithoutAStagingFolderThePathsAreTheBuildsOwn) {
  Outbox out(nullptr);
  EXPECT_FALSE(out.staged());
  EXPECT_EQ(out.file("/c/b/m.onnx"), fs::path("/c/b/m.onnx"));
  EXPECT_EQ(out.folder("/c/b/io"), fs::path("/c/b/io"));
  EXPECT_EQ(out.take("/c/b/io/input_0.pb", ErrorKind::Export), fs::path("/c/b/io/input_0.pb"));
  EXPECT_EQ(out.take("/c/b/m.onnx", ErrorKind::Export), fs::path("/c/b/m.onnx"));
}

// The Python side runs the user's script, which may forge its replies: without a sandbox too, a
// reply names only what the core asked for, each once (docs/reliability.md).
TEST(Outbox, WithoutAStagingFolderAReplyNamesOnlyWhatWasAskedFor) {
  Outbox out(nullptr);
  out.file("/c/b/m.onnx");
  out.folder("/c/b/io/");
  auto refusal = [&](const std::string& replied) {
    try {
      out.take(replied, ErrorKind::Export);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("taken");
  };
  EXPECT_EQ(out.take("/c/b/io/output_3.pb", ErrorKind::Export), fs::path("/c/b/io/output_3.pb"));
  EXPECT_EQ(refusal("/etc/passwd"),
            "the Python side named a file turnkey did not ask for: '/etc/passwd'");
  EXPECT_NE(refusal("/c/b/io/../../../etc/passwd").find("did not ask for"), std::string::npos);
  EXPECT_NE(refusal("/c/b/io/notes.txt").find("did not ask for"), std::string::npos);
  EXPECT_NE(refusal("/c/b/other.onnx").find("did not ask for"), std::string::npos);
  EXPECT_EQ(refusal("/c/b/io/output_3.pb"), "the Python side named output_3.pb twice");
  // An exported model's external data lies beside it, by plain name.
  EXPECT_EQ(out.take_beside("/c/b/m.onnx", "w.bin", ErrorKind::Export), fs::path("/c/b/w.bin"));
  EXPECT_THROW(out.take_beside("/c/b/m.onnx", "../../etc/passwd", ErrorKind::Export), Error);
}

}  // namespace
}  // namespace turnkey
