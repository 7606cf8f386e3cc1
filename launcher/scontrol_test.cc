#include "launcher/scontrol.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace elastic {
namespace {

using std::chrono::milliseconds;

TEST(ScontrolTest, ResultsNameWhatHappened) {
  struct Case {
    HealthResult r;
    const char* want;
  } cases[] = {
      {{true, 0, 0, false, ""}, ""},
      {{false, 0, SIGKILL, true, ""}, "no answer within 10 s (killed)"},
      {{false, 127, 0, false, ""}, "'scontrol' not found on PATH"},
      {{false, kScontrolNoConfig, 0, false, ""},
       "SLURM_CONF names no file here (a container without Slurm's configuration?)"},
      {{false, 1, 0, false, ""}, "exit code 1"},
      {{false, 0, SIGSEGV, false, ""}, "signal SIGSEGV (11)"},
      {{false, 0, 0, false, "fork: out of memory"}, "cannot start: fork: out of memory"},
  };
  for (const Case& c : cases) EXPECT_EQ(DescribeScontrolResult(c.r, milliseconds(10000), "scontrol"), c.want);
}

// Real processes: a fake scontrol (a script) on the real event loop.
class ScontrolRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/scontrol_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { ASSERT_EQ(system(("rm -rf " + dir_).c_str()), 0); }

  std::string Script(const std::string& body) {
    std::string path = dir_ + "/scontrol";
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), 0755);
    return path;
  }
  struct Answer {
    bool ok = false;
    std::string output, why;
  };
  Answer Run(const std::string& scontrol, std::vector<std::string> env, milliseconds timeout = milliseconds(10000)) {
    ScontrolSpec spec;
    spec.scontrol = scontrol;
    spec.timeout = timeout;
    spec.log_path = dir_ + "/scontrol.log";
    spec.output_path = dir_ + "/scontrol.out";
    spec.env = std::move(env);
    sigemptyset(&spec.child_mask);
    Scontrol s(loop_, spec);
    Answer a;
    s.Run("--oneliner show node n2", [&](bool ok, std::string output, std::string why) {
      a = {ok, output, why};
      loop_.Stop();
    });
    loop_.Run();
    return a;
  }
  EventLoop loop_;
  std::string dir_;
};

TEST_F(ScontrolRunTest, ReadsItsAnswer) {
  Answer a = Run(Script("echo \"NodeName=n2 State=IDLE args=$*\""), {"PATH=/usr/bin:/bin"});
  EXPECT_TRUE(a.ok) << a.why;
  EXPECT_EQ(a.output, "NodeName=n2 State=IDLE args=--oneliner show node n2\n");
}

// A spec without a deadline (ScontrolSpec::timeout has no default: AgentSettings gives
// it) is not run: the answer says why.
TEST_F(ScontrolRunTest, NoDeadlineIsRefusedWithoutRunningIt) {
  std::string ran = dir_ + "/ran";
  Answer a = Run(Script("touch " + ran), {"PATH=/usr/bin:/bin"}, milliseconds(0));
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.why, "not run: its deadline is 0 ms (ScontrolSpec::timeout must be positive)");
  EXPECT_NE(access(ran.c_str(), F_OK), 0);
}

// In a container: the job's SLURM_CONF, not the node's files. scontrol would retry
// the missing file for 60 s; it is not run at all.
TEST_F(ScontrolRunTest, MissingConfigurationFailsAtOnceWithoutRunningIt) {
  std::string ran = dir_ + "/ran";
  Answer a = Run(Script("touch " + ran), {"PATH=/usr/bin:/bin", "SLURM_CONF=" + dir_ + "/none/slurm.conf"});
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.why, "SLURM_CONF names no file here (a container without Slurm's configuration?)");
  EXPECT_NE(access(ran.c_str(), F_OK), 0);
}

TEST_F(ScontrolRunTest, MissingScontrolIsNamed) {
  Answer a = Run(dir_ + "/no-scontrol", {"PATH=/usr/bin:/bin"});
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.why, "'" + dir_ + "/no-scontrol' not found on PATH");
}

TEST_F(ScontrolRunTest, SilentScontrolIsKilledAtItsDeadline) {
  Answer a = Run(Script("exec sleep 600"), {"PATH=/usr/bin:/bin"}, milliseconds(200));
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.why, "no answer within 0.2 s (killed)");
}

}  // namespace
}  // namespace elastic
