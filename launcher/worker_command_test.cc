// What the workers run, found as srun finds it, and a missing program refused
// before the rendezvous (exit 2) rather than by every worker (exit 1).
#include "launcher/worker_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace elastic {
namespace {

// Runs the test in a fresh directory (the working directory matters here).
class WorkerCommandCwdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    old_ = std::filesystem::current_path();
    // One directory per test and process: ctest runs the tests of this
    // fixture at once, and one's remove_all must not empty another's.
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("worker_command_cwd." + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            "." + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::filesystem::current_path(dir_);
  }
  void TearDown() override {
    std::filesystem::current_path(old_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path old_, dir_;
};

TEST_F(WorkerCommandCwdTest, AMissingScriptIsAnErrorNamingItAndTheDirectory) {
  LaunchConfig c;
  c.spec.program = "nosuch.py";
  c.spec.python = "/bin/sh";
  std::string path, err;
  std::vector<std::string> argv;
  EXPECT_FALSE(BuildWorkerCommand(c, {{"PATH", "/bin"}}, &path, &argv, &err));
  EXPECT_NE(err.find("cannot run 'nosuch.py': No such file or directory (in " + dir_.string() + ")"),
            std::string::npos) << err;
  c.spec.module = true;  // -m: a module name, not a file
  EXPECT_TRUE(BuildWorkerCommand(c, {{"PATH", "/bin"}}, &path, &argv, &err)) << err;
}

// slurmstepd runs `srun train.sh` from the working directory when PATH has no
// train.sh; elasticrun does the same under srun, and only there.
TEST_F(WorkerCommandCwdTest, UnderSrunAProgramInTheWorkingDirectoryRuns) {
  { std::ofstream("train.sh") << "#!/bin/sh\n"; }
  ASSERT_EQ(chmod("train.sh", 0755), 0);
  LaunchConfig c;
  c.spec.program = "train.sh";
  std::string path, err;
  std::vector<std::string> argv;
  EXPECT_FALSE(BuildWorkerCommand(c, {{"PATH", "/bin"}}, &path, &argv, &err));
  EXPECT_NE(err.find("not an executable file in PATH"), std::string::npos) << err;
  c.agent.spank_wrapped = true;
  ASSERT_TRUE(BuildWorkerCommand(c, {{"PATH", "/bin"}}, &path, &argv, &err)) << err;
  EXPECT_EQ(path, "./train.sh");
  c.spec.program = "nosuch.sh";
  EXPECT_FALSE(BuildWorkerCommand(c, {{"PATH", "/bin"}}, &path, &argv, &err));
  EXPECT_NE(err.find("'nosuch.sh': not an executable file in PATH or the working directory"),
            std::string::npos) << err;
}

// A path that cannot run says why: missing (in a container: from its image), a
// directory, or without the execute bit.
TEST_F(WorkerCommandCwdTest, APathThatCannotRunSaysWhy) {
  { std::ofstream("plain.sh") << "#!/bin/sh\n"; }
  ASSERT_EQ(chmod("plain.sh", 0644), 0);
  ASSERT_EQ(mkdir("adir", 0755), 0);
  struct Row {
    std::string program;
    std::string want;
  };
  const Row rows[] = {
      {"/usr/bin/python3.99", "cannot execute '/usr/bin/python3.99': not an executable file: No such file or "
                              "directory (on this node; in a container: in its image)"},
      {"./adir", "cannot execute './adir': not an executable file: not a regular file"},
      {"./plain.sh", "cannot execute './plain.sh': not an executable file: not executable (mode 0644)"},
  };
  for (const Row& row : rows) {
    LaunchConfig c;
    c.spec.program = row.program;
    c.spec.no_python = true;
    std::string path, err;
    std::vector<std::string> argv;
    EXPECT_FALSE(BuildWorkerCommand(c, {{"PATH", "/bin"}}, &path, &argv, &err)) << row.program;
    EXPECT_EQ(err, row.want);
  }
  LaunchConfig c;
  c.spec.program = "train.py";
  c.spec.python = "/usr/bin/python3.99";
  std::string path, err;
  std::vector<std::string> argv;
  EXPECT_FALSE(BuildWorkerCommand(c, {{"PATH", "/bin"}}, &path, &argv, &err));
  EXPECT_EQ(err, "--python: '/usr/bin/python3.99' is not an executable file: No such file or directory (on this "
                 "node; in a container: in its image) (the interpreter must have torch)");
}

}  // namespace
}  // namespace elastic
