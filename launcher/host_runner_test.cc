// The host runner and its client on one event loop, with real processes
// (label process: also under ASan/UBSan): what an agent in a container image gets
// from the runner the SPANK plugin starts on the host (host_runner.h).
#include "launcher/host_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "launcher/health_check.h"

namespace elastic {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Alive(pid_t pid) { return kill(pid, 0) == 0; }

class HostRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    runner_ = std::make_unique<HostRunner>(loop_, UniqueFd(sv[0]), "/usr/bin:/bin");
    client_ = std::make_unique<HostRunnerClient>(loop_, UniqueFd(sv[1]));
    std::string err;
    ASSERT_TRUE(runner_->Start(&err)) << err;
    ASSERT_TRUE(client_->Start(&err)) << err;
    char dir[] = "/tmp/host-runner-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    client_.reset();
    runner_.reset();
    std::string cmd = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(system(cmd.c_str()), 0);
  }
  // Turns the loop until `done` holds; false after 20 s (a deadline, not a timing).
  template <typename Pred>
  bool RunUntil(Pred done) {
    for (int i = 0; i < 2000 && !done(); ++i) loop_.RunOnce(Millis(10));
    return done();
  }
  HealthCheck::Spec Spec(const std::string& command, Millis timeout = Millis(10000)) {
    HealthCheck::Spec spec;
    spec.command = command;
    spec.timeout = timeout;
    spec.log_path = dir_ + "/check.log";
    spec.env = {"PATH=/image/bin", "LD_PRELOAD=/image/lib/x.so", "LD_LIBRARY_PATH=/image/lib", "SLURM_CONF=/etc/x.conf"};
    sigemptyset(&spec.child_mask);
    spec.host = client_.get();
    return spec;
  }

  EventLoop loop_;
  std::unique_ptr<HostRunner> runner_;
  std::unique_ptr<HostRunnerClient> client_;
  std::string dir_;
};

TEST_F(HostRunnerTest, ACheckRunsOnTheRunnerWithTheHostsPathAndTheAgentsFiles) {
  HealthCheck::Spec spec = Spec("echo out; echo err >&2; echo \"$PATH|${LD_PRELOAD-unset}|${LD_LIBRARY_PATH-unset}|$SLURM_CONF\"; exit 3");
  spec.stdout_path = dir_ + "/check.out";
  HealthCheck check(loop_, spec);
  std::optional<HealthResult> result;
  std::string err;
  ASSERT_TRUE(check.Start([&](const HealthResult& r) { result = r; }, &err)) << err;
  EXPECT_EQ(check.pid(), -1);  // no process of the agent's: nothing for it to reap
  EXPECT_EQ(runner_->running(), 0u);  // the request is on its way, not run from Start
  ASSERT_TRUE(RunUntil([&] { return result.has_value(); }));
  EXPECT_FALSE(result->passed);
  EXPECT_EQ(result->exit_code, 3);
  EXPECT_EQ(ReadFile(dir_ + "/check.out"), "out\n/usr/bin:/bin|unset|unset|/etc/x.conf\n");
  std::string log = ReadFile(dir_ + "/check.log");
  EXPECT_NE(log.find("=== health check: echo out"), std::string::npos) << log;
  EXPECT_NE(log.find("err\n"), std::string::npos) << log;
  EXPECT_EQ(runner_->running(), 0u);
}

TEST_F(HostRunnerTest, APassingCheckPasses) {
  HealthCheck check(loop_, Spec("true"));
  std::optional<HealthResult> result;
  std::string err;
  ASSERT_TRUE(check.Start([&](const HealthResult& r) { result = r; }, &err)) << err;
  ASSERT_TRUE(RunUntil([&] { return result.has_value(); }));
  EXPECT_TRUE(result->passed) << DescribeHealthResult(*result, Millis(10000));
}

TEST_F(HostRunnerTest, PastItsTimeoutTheGroupIsKilledAndTheResultSaysSo) {
  std::string pidfile = dir_ + "/pid";
  HealthCheck check(loop_, Spec("sleep 60 & echo $! > " + pidfile + "; wait", Millis(300)));
  std::optional<HealthResult> result;
  std::string err;
  ASSERT_TRUE(check.Start([&](const HealthResult& r) { result = r; }, &err)) << err;
  ASSERT_TRUE(RunUntil([&] { return result.has_value(); }));
  EXPECT_TRUE(result->timed_out);
  EXPECT_FALSE(result->passed);
  EXPECT_EQ(result->signal, SIGKILL);
  pid_t sleeper = std::stoi(ReadFile(pidfile));
  EXPECT_TRUE(RunUntil([&] { return !Alive(sleeper); })) << "the check's group outlived its timeout";
}

TEST_F(HostRunnerTest, DestroyingARunningCheckKillsItOnTheHost) {
  std::string pidfile = dir_ + "/pid";
  bool called = false;
  {
    HealthCheck check(loop_, Spec("echo $$ > " + pidfile + "; exec sleep 60"));
    std::string err;
    ASSERT_TRUE(check.Start([&](const HealthResult&) { called = true; }, &err)) << err;
    ASSERT_TRUE(RunUntil([&] { return ReadFile(pidfile).find('\n') != std::string::npos; }));
  }
  pid_t pid = std::stoi(ReadFile(pidfile));
  EXPECT_TRUE(RunUntil([&] { return !Alive(pid) && runner_->running() == 0; }));
  EXPECT_FALSE(called);
}

TEST_F(HostRunnerTest, WhenTheRunnerEndsRunsFailAndLaterChecksRunHere) {
  HealthCheck check(loop_, Spec("exec sleep 60"));
  std::optional<HealthResult> result;
  std::string err;
  ASSERT_TRUE(check.Start([&](const HealthResult& r) { result = r; }, &err)) << err;
  ASSERT_TRUE(RunUntil([&] { return runner_->running() == 1; }));
  runner_.reset();  // its end closes; its runs die with it
  ASSERT_TRUE(RunUntil([&] { return result.has_value(); }));
  EXPECT_FALSE(result->passed);
  EXPECT_EQ(result->error, "the host runner ended before the program did");
  EXPECT_FALSE(client_->alive());
  // The next check runs in the agent's own process.
  HealthCheck local(loop_, Spec("exit 4"));
  std::optional<HealthResult> second;
  ASSERT_TRUE(local.Start([&](const HealthResult& r) { second = r; }, &err)) << err;
  EXPECT_GT(local.pid(), 0);
  ASSERT_TRUE(RunUntil([&] { return second.has_value(); }));
  EXPECT_EQ(second->exit_code, 4);
}

// A peer that sends what no agent sends: dropped with a warning, and the runner
// goes on serving.
class HostRunnerRawTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    runner_ = std::make_unique<HostRunner>(loop_, UniqueFd(sv[0]), "");
    peer_.Reset(sv[1]);
    std::string err;
    ASSERT_TRUE(runner_->Start(&err)) << err;
  }
  std::string Receive() {
    for (int i = 0; i < 2000; ++i) {
      loop_.RunOnce(Millis(10));
      char buf[4096];
      ssize_t n = recv(peer_.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) return std::string(buf, static_cast<size_t>(n));
    }
    return "";
  }
  EventLoop loop_;
  std::unique_ptr<HostRunner> runner_;
  UniqueFd peer_;
};

TEST_F(HostRunnerRawTest, GarbageIsDroppedARunWithoutItsDescriptorsIsRefusedAndServingGoesOn) {
  using namespace std::string_literals;
  ASSERT_GT(send(peer_.get(), "garbage", 7, 0), 0);
  std::string run = "run\0id\0" "9\0command\0true\0timeout_ms\0" "1000\0"s;
  ASSERT_GT(send(peer_.get(), run.data(), run.size(), 0), 0);  // no SCM_RIGHTS
  std::string reply = Receive();
  HostReply parsed;
  std::string err;
  ASSERT_TRUE(ParseHostReply(reply, &parsed, &err)) << err;
  EXPECT_EQ(parsed.kind, HostReplyKind::kError);
  EXPECT_EQ(parsed.id, 9u);
  EXPECT_NE(parsed.reason.find("0 descriptor(s) came with the run"), std::string::npos) << parsed.reason;
  EXPECT_FALSE(runner_->finished());
  // An empty datagram is not the end of the peer.
  ASSERT_EQ(send(peer_.get(), "", 0, 0), 0);
  loop_.RunOnce(Millis(10));
  EXPECT_FALSE(runner_->finished());
  peer_.Reset();
  for (int i = 0; i < 2000 && !runner_->finished(); ++i) loop_.RunOnce(Millis(10));
  EXPECT_TRUE(runner_->finished());
}

// The agent gone (its process ended: its end of the socket closed) while a run
// goes on: the runner kills it and ends.
TEST_F(HostRunnerRawTest, TheAgentsEndClosingKillsEveryRunAndEndsTheRunner) {
  using namespace std::string_literals;
  char dir[] = "/tmp/host-runner-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string pidfile = std::string(dir) + "/pid";
  std::string run = "run\0id\0" "1\0command\0echo $$ > "s + pidfile + "; exec sleep 60\0timeout_ms\0" "60000\0"s;
  UniqueFd out(open("/dev/null", O_WRONLY | O_CLOEXEC));
  int fds[2] = {out.get(), out.get()};
  iovec iov{run.data(), run.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(c), fds, sizeof fds);
  ASSERT_GT(sendmsg(peer_.get(), &msg, 0), 0);
  for (int i = 0; i < 2000 && ReadFile(pidfile).find('\n') == std::string::npos; ++i) loop_.RunOnce(Millis(10));
  ASSERT_EQ(runner_->running(), 1u);
  pid_t pid = std::stoi(ReadFile(pidfile));
  peer_.Reset();  // the agent is gone
  for (int i = 0; i < 2000 && !runner_->finished(); ++i) loop_.RunOnce(Millis(10));
  EXPECT_TRUE(runner_->finished());
  EXPECT_FALSE(Alive(pid));
  EXPECT_EQ(runner_->running(), 0u);
  unlink(pidfile.c_str());
  rmdir(dir);
}

TEST(HostRunEnvTest, TheImagesPathAndLoaderVariablesGiveWayToTheHosts) {
  EXPECT_EQ(HostRunEnv({"PATH=/x", "A=1", "LD_PRELOAD=/p", "LD_LIBRARY_PATH=/l", "PATHX=2"}, "/usr/bin"),
            (std::vector<std::string>{"A=1", "PATHX=2", "PATH=/usr/bin"}));
  std::vector<std::string> none = HostRunEnv({}, "");
  ASSERT_EQ(none.size(), 1u);
  EXPECT_TRUE(none[0].starts_with("PATH=/usr/local/sbin:"));
}

}  // namespace
}  // namespace elastic
