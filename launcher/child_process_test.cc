// SpawnChild for real (label: process): the vfork-style child runs `in_child`,
// gets its own process group, its stdout/stderr, the given mask and
// environment, and reports what it cannot do.
#include "launcher/child_process.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace elastic {
namespace {

struct Result {
  int exit_code = -1;
  int signal = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  return text;
}

// Runs `spec` with pipes for stdout/stderr and waits for it through its pidfd.
Result RunChild(ChildSpec spec) {
  int out[2], err[2];
  EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(err, O_CLOEXEC), 0);
  spec.stdout_fd = out[1];
  spec.stderr_fd = err[1];
  sigemptyset(&spec.child_mask);
  ChildHandle child;
  std::string why;
  bool ok = SpawnChild(spec, &child, &why);
  close(out[1]);
  close(err[1]);
  Result r;
  if (!ok) {
    ADD_FAILURE() << why;
  } else {
    r.out = ReadAll(out[0]);
    r.err = ReadAll(err[0]);
    pollfd p{child.pidfd.get(), POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 20000), 1);
    EXPECT_TRUE(ReapChild(child.pid, &r.exit_code, &r.signal));
  }
  close(out[0]);
  close(err[0]);
  return r;
}

ChildSpec Shell(const std::string& script) {
  ChildSpec spec;
  spec.path = "/bin/sh";
  spec.argv = {"sh", "-c", script};
  spec.env = {"PATH=/usr/bin:/bin", "ELASTIC_TEST=yes"};
  return spec;
}

TEST(SpawnChild, RunsWithItsOwnGroupOutputAndExactEnvironment) {
  // $$ is the shell: the child itself, exec'd in place.
  Result r = RunChild(Shell("echo pid=$$ pgid=$(cut -d' ' -f5 /proc/$$/stat) env=$ELASTIC_TEST; "
                       "echo oops >&2; exit 3"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.signal, 0);
  std::string pid = r.out.substr(4, r.out.find(' ') - 4);
  EXPECT_NE(r.out.find("pgid=" + pid + " "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("env=yes"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "oops\n");
}

TEST(SpawnChild, InChildRunsBeforeExecInTheChildOnly) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  int first = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE && first < 0; ++cpu)
    if (CPU_ISSET(cpu, &before)) first = cpu;
  ChildSpec spec = Shell("grep Cpus_allowed_list /proc/self/status");
  spec.in_child = [first](const char** call) {
    *call = "sched_setaffinity";
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    return sched_setaffinity(0, sizeof one, &one) == 0 ? 0 : errno;
  };
  spec.in_child_what = "binding";
  Result r = RunChild(spec);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\t" + std::to_string(first) + "\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
  cpu_set_t after;  // the agent (this process) is untouched
  ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

TEST(SpawnChild, InChildErrorIsAWarningAndTheWorkerStillStarts) {
  ChildSpec spec = Shell("echo started");
  spec.in_child = [](const char** call) {
    *call = "set_mempolicy";
    return EPERM;
  };
  spec.in_child_what = "binding local rank 0 (cpus 7)";
  Result r = RunChild(spec);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "started\n");
  EXPECT_EQ(r.err, "elasticrun: warning: binding local rank 0 (cpus 7): set_mempolicy: Operation not permitted\n");
}

TEST(SpawnChild, ProgramThatCannotBeExecutedExits127WithItsName) {
  ChildSpec spec;
  spec.path = "/nonexistent/train";
  spec.argv = {"train"};
  Result r = RunChild(spec);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(r.err, "elasticrun: cannot execute '/nonexistent/train': No such file or directory\n");
}

TEST(SpawnChild, ChildGetsTheGivenMaskAndDefaultDispositions) {
  // The test blocks SIGUSR1 and ignores SIGTERM, as the agent does with the signals it reads.
  sigset_t block, saved;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ASSERT_EQ(sigprocmask(SIG_BLOCK, &block, &saved), 0);
  struct sigaction ignore {}, old_term {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGTERM, &ignore, &old_term);
  ChildSpec spec = Shell("grep -E '^Sig(Blk|Ign)' /proc/self/status");
  spec.default_signals = {SIGTERM};
  Result r = RunChild(spec);
  sigaction(SIGTERM, &old_term, nullptr);
  sigprocmask(SIG_SETMASK, &saved, nullptr);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("SigBlk:\t0000000000000000"), std::string::npos) << r.out;
  // SIGTERM (15) is bit 14 of SigIgn: not ignored in the child.
  size_t ign = r.out.find("SigIgn:\t");
  ASSERT_NE(ign, std::string::npos) << r.out;
  unsigned long long mask = std::stoull(r.out.substr(ign + 8, 16), nullptr, 16);
  EXPECT_EQ(mask & (1ULL << (SIGTERM - 1)), 0ULL) << r.out;
}

}  // namespace
}  // namespace elastic
