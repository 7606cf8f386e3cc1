// The host runner and its client on one event loop, with real processes
// (label process: also under ASan/UBSan): what an agent in a container image gets
// from the runner the SPANK plugin starts on the host (host_runner.h).
#include "launcher/host_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stddef.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string.h>

#include <fstream>
#include <memory>
#include <optional>
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

// A zombie is dead: where an earlier test made this process a child subreaper,
// the killed groups' orphans end as its unreaped children.
bool Alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || stat.size() < paren + 3 || stat[paren + 2] != 'Z';
}

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

// Slurm's OCI containers: the runner listens on an abstract name in the node's
// network namespace and the agent connects by name (ELASTIC_HOST_RUNNER_SOCKET).
std::string TestSocketName() {
  unsigned char r[8];
  EXPECT_EQ(getrandom(r, sizeof r, 0), static_cast<ssize_t>(sizeof r));
  std::string name = "@slurm-elastic-test-host-runner.";
  for (unsigned char c : r) name += "0123456789abcdef"[c >> 4], name += "0123456789abcdef"[c & 15];
  return name;
}

UniqueFd ListenOn(const std::string& name) {
  sockaddr_un addr;
  socklen_t len = 0;
  std::string err;
  EXPECT_TRUE(AbstractSocketAddress(name, &addr, &len, &err)) << err;
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  EXPECT_EQ(bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len), 0) << strerror(errno);
  EXPECT_EQ(listen(fd.get(), kHostRunnerBacklog), 0);
  return fd;
}

TEST(AbstractSocketAddressTest, OnlyAnAtAndAFittingName) {
  sockaddr_un addr;
  socklen_t len = 0;
  std::string err;
  ASSERT_TRUE(AbstractSocketAddress("@ab", &addr, &len, &err)) << err;
  EXPECT_EQ(addr.sun_path[0], '\0');
  EXPECT_EQ(std::string(addr.sun_path + 1, 2), "ab");
  EXPECT_EQ(len, offsetof(sockaddr_un, sun_path) + 3);
  EXPECT_TRUE(AbstractSocketAddress("@" + std::string(107, 'x'), &addr, &len, &err)) << err;
  for (const std::string& bad : {std::string(""), std::string("ab"), std::string("@"), std::string("/run/x.sock"),
                                "@" + std::string(108, 'x')}) {
    SCOPED_TRACE(bad);
    err.clear();
    EXPECT_FALSE(AbstractSocketAddress(bad, &addr, &len, &err));
    EXPECT_NE(err.find("is no abstract socket name ('@' and 1 to 107 bytes)"), std::string::npos) << err;
  }
}

TEST(HostRunnerByNameTest, TheAgentConnectsByNameAndItsChecksRunOnTheRunner) {
  EventLoop loop;
  std::string name = TestSocketName();
  std::unique_ptr<HostRunner> runner;
  HostRunnerListener listener(loop, ListenOn(name), getuid(), [&](UniqueFd agent) {
    runner = std::make_unique<HostRunner>(loop, std::move(agent), "/usr/bin:/bin");
    std::string err;
    EXPECT_TRUE(runner->Start(&err)) << err;
  });
  std::string err;
  ASSERT_TRUE(listener.Start(&err)) << err;
  ASSERT_EQ(setenv(kHostRunnerSocketEnv, name.c_str(), 1), 0);
  std::string warning;
  int fd = AdoptHostRunnerFd(&warning);
  ASSERT_GE(fd, 0) << warning;
  EXPECT_EQ(getenv(kHostRunnerSocketEnv), nullptr);  // no worker sees it
  EXPECT_EQ(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  HostRunnerClient client(loop, UniqueFd(fd));
  ASSERT_TRUE(client.Start(&err)) << err;
  for (int i = 0; i < 2000 && !runner; ++i) loop.RunOnce(Millis(10));
  ASSERT_TRUE(runner);
  EXPECT_TRUE(listener.accepted());
  HealthCheck::Spec spec;
  spec.command = "echo \"$PATH\" >&2; exit 5";
  spec.timeout = Millis(10000);
  char dir[] = "/tmp/host-runner-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  spec.log_path = std::string(dir) + "/check.log";
  spec.env = {"PATH=/image/bin"};
  sigemptyset(&spec.child_mask);
  spec.host = &client;
  HealthCheck check(loop, spec);
  std::optional<HealthResult> result;
  ASSERT_TRUE(check.Start([&](const HealthResult& r) { result = r; }, &err)) << err;
  EXPECT_EQ(check.pid(), -1);
  for (int i = 0; i < 2000 && !result; ++i) loop.RunOnce(Millis(10));
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->exit_code, 5);
  EXPECT_NE(ReadFile(spec.log_path).find("/usr/bin:/bin\n"), std::string::npos) << ReadFile(spec.log_path);
  unlink(spec.log_path.c_str());
  rmdir(dir);
}

// Another user on the node sees the name (/proc/net/unix) but gets nothing: the
// runner closes its connection and goes on listening for the job's user.
TEST(HostRunnerByNameTest, AnotherUsersConnectionIsRefusedAndTheJobsUserStillGetsIn) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to connect as another user";
  EventLoop loop;
  std::string name = TestSocketName();
  int agents = 0;
  HostRunnerListener listener(loop, ListenOn(name), 0, [&](UniqueFd) { ++agents; });
  std::string err;
  ASSERT_TRUE(listener.Start(&err)) << err;
  pid_t other = fork();
  ASSERT_GE(other, 0);
  if (other == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
    sockaddr_un addr;
    socklen_t len = 0;
    std::string e;
    if (!AbstractSocketAddress(name, &addr, &len, &e)) _exit(11);
    int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (connect(s, reinterpret_cast<const sockaddr*>(&addr), len) != 0) _exit(12);
    char b;
    _exit(recv(s, &b, 1, 0) == 0 ? 0 : 13);  // 0: closed by the runner, nothing sent
  }
  int status = -1;
  for (int i = 0; i < 2000 && waitpid(other, &status, WNOHANG) == 0; ++i) loop.RunOnce(Millis(10));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(listener.refused(), 1u);
  EXPECT_EQ(agents, 0);
  ASSERT_EQ(setenv(kHostRunnerSocketEnv, name.c_str(), 1), 0);
  std::string warning;
  UniqueFd mine(AdoptHostRunnerFd(&warning));
  ASSERT_TRUE(mine) << warning;
  for (int i = 0; i < 2000 && agents == 0; ++i) loop.RunOnce(Millis(10));
  EXPECT_EQ(agents, 1);
}

TEST(HostRunnerByNameTest, ANameNobodyListensOnIsAWarningAndLocalRuns) {
  std::string name = TestSocketName();
  ASSERT_EQ(setenv(kHostRunnerSocketEnv, name.c_str(), 1), 0);
  std::string warning;
  EXPECT_EQ(AdoptHostRunnerFd(&warning), -1);
  EXPECT_NE(warning.find("ELASTIC_HOST_RUNNER_SOCKET: cannot reach the host runner (Connection refused; a "
                         "container with a network namespace of its own cannot): scontrol and health checks "
                         "run here"), std::string::npos) << warning;
  ASSERT_EQ(setenv(kHostRunnerSocketEnv, "no-at-sign", 1), 0);
  EXPECT_EQ(AdoptHostRunnerFd(&warning), -1);
  EXPECT_NE(warning.find("'no-at-sign' is no abstract socket name"), std::string::npos) << warning;
  EXPECT_EQ(getenv(kHostRunnerSocketEnv), nullptr);
}

// `elasticrun host-runner --listen-fd=N --task-pidfd=M` (HostRunnerMain, in a
// child) serves the agent that connects, and ends when the task ends; so it does
// when no agent ever came (a container that did not start). Bad arguments: exit 2.
struct ListeningRunner {
  pid_t task = -1, runner = -1;
  std::string name = TestSocketName();
  void Start() {
    task = fork();
    ASSERT_GE(task, 0);
    if (task == 0) {
      pause();
      _exit(0);
    }
    int task_pidfd = static_cast<int>(syscall(SYS_pidfd_open, task, 0));
    ASSERT_GE(task_pidfd, 0);
    UniqueFd listener = ListenOn(name);
    int listen_fd = listener.get();
    runner = fork();
    ASSERT_GE(runner, 0);
    if (runner == 0) {
      _exit(HostRunnerMain({"--listen-fd=" + std::to_string(listen_fd), "--task-pidfd=" + std::to_string(task_pidfd)}));
    }
    close(task_pidfd);
  }
  // The task ends; the runner's exit status.
  int EndTheTask() {
    kill(task, SIGKILL);
    waitpid(task, nullptr, 0);
    int status = -1;
    EXPECT_EQ(waitpid(runner, &status, 0), runner);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

TEST(HostRunnerByNameTest, TheListeningRunnerServesItsAgentAndEndsWithTheTask) {
  ListeningRunner r;
  ASSERT_NO_FATAL_FAILURE(r.Start());
  ASSERT_EQ(setenv(kHostRunnerSocketEnv, r.name.c_str(), 1), 0);
  std::string warning, err;
  int fd = AdoptHostRunnerFd(&warning);
  ASSERT_GE(fd, 0) << warning;
  EventLoop loop;
  HostRunnerClient client(loop, UniqueFd(fd));
  ASSERT_TRUE(client.Start(&err)) << err;
  UniqueFd out(open("/dev/null", O_WRONLY | O_CLOEXEC));
  std::optional<HostRunResult> result;
  ASSERT_NE(client.Run("exit 6", {}, Millis(10000), out.get(), out.get(),
                       [&](const HostRunResult& res) { result = res; }, &err), 0u) << err;
  for (int i = 0; i < 2000 && !result; ++i) loop.RunOnce(Millis(10));
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->exit_code, 6) << result->error;
  EXPECT_EQ(r.EndTheTask(), 0);
  for (int i = 0; i < 2000 && client.alive(); ++i) loop.RunOnce(Millis(10));
  EXPECT_FALSE(client.alive());  // the runner's end closed with it
}

TEST(HostRunnerByNameTest, WithoutAnAgentTheRunnerEndsWithTheTaskAndBadArgumentsAreRefused) {
  ListeningRunner r;
  ASSERT_NO_FATAL_FAILURE(r.Start());
  EXPECT_EQ(r.EndTheTask(), 0);
  UniqueFd listener = ListenOn(TestSocketName());
  std::string l = "--listen-fd=" + std::to_string(listener.get());
  EXPECT_EQ(HostRunnerMain({l}), 2);  // no task pidfd
  EXPECT_EQ(HostRunnerMain({"--fd=0", l, "--task-pidfd=1"}), 2);
  EXPECT_EQ(HostRunnerMain({"--task-pidfd=x"}), 2);
  EXPECT_EQ(HostRunnerMain({"--bogus"}), 2);
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
