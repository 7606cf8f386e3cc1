// Descendants of a process: the /proc/PID/stat parser and the tree walk on fake
// tables, then KillDescendants and LeftoverKiller on a real setsid() grandchild
// (label: process).
#include "launcher/descendants.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>

#include "launcher/child_process.h"

namespace elastic {
namespace {

TEST(ProcStat, ParsesStatePpidAndPgrpPastACommWithSpacesAndParens) {
  ProcEntry e;
  ASSERT_TRUE(ParseProcStat("4242 (a (b) c) S 17 4200 4200 0 -1 4194560 100", &e));
  EXPECT_EQ(e.pid, 4242);
  EXPECT_EQ(e.state, 'S');
  EXPECT_EQ(e.ppid, 17);
  EXPECT_EQ(e.pgid, 4200);
}

TEST(ProcStat, RejectsTruncatedText) {
  ProcEntry e;
  EXPECT_FALSE(ParseProcStat("4242 (sleep", &e));
  EXPECT_FALSE(ParseProcStat("4242 (sleep) S", &e));
}

TEST(LiveDescendants, WalksThroughZombiesAndSkipsOtherTrees) {
  ProcTable t = {{10, 1, 10, 'S'}, {11, 10, 11, 'S'}, {12, 11, 12, 'Z'}, {13, 12, 13, 'R'},
                 {14, 10, 14, 'X'}, {20, 1, 20, 'S'}, {21, 20, 21, 'S'}};
  std::vector<pid_t> got = LiveDescendants(t, 10);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<pid_t>{11, 13}));
  EXPECT_TRUE(LiveDescendants(t, 13).empty());
}

// Starts `sh -c script` with stdout on a pipe, waits for it and returns what it wrote.
std::string RunShell(const std::string& script) {
  int out[2];
  EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
  ChildSpec spec;
  spec.path = "/bin/sh";
  spec.argv = {"sh", "-c", script};
  spec.stdout_fd = out[1];
  sigemptyset(&spec.child_mask);
  ChildHandle child;
  std::string err;
  EXPECT_TRUE(SpawnChild(spec, &child, &err)) << err;
  close(out[1]);
  std::string text;
  char buf[256];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  waitpid(child.pid, nullptr, 0);
  return text;
}

// Issue 19 item 20: the agent used to SIGKILL every earlier attempt's group id at exit.
TEST(OwnGroups, OnlyGroupsThatStillHoldOneOfOurProcessesAreOurs) {
  // Agent 10. Group 11: its leader exited, a child lives on (reparented to us). Group 12:
  // empty, its id reused by an unrelated process of another tree. Group 13: empty, gone.
  // Group 14: its leader is a zombie of ours, nothing else. Group 15: alive.
  ProcTable t = {{10, 1, 10, 'S'},  {30, 10, 11, 'S'}, {12, 1, 12, 'S'}, {40, 12, 12, 'S'},
                 {14, 10, 14, 'Z'}, {15, 10, 15, 'R'}, {16, 15, 15, 'S'}};
  struct Row {
    const char* name;
    std::vector<pid_t> pgids;
    std::vector<pid_t> want;
  };
  const Row rows[] = {
      {"a leader gone, its child lives on: ours", {11}, {11}},
      {"an id reused by another tree: not ours", {12}, {}},
      {"an empty group: forgotten", {13}, {}},
      {"only a zombie leader left: nothing to kill", {14}, {}},
      {"a live group: ours", {15}, {15}},
      {"all at once, order kept, duplicates dropped", {15, 12, 11, 15, 13}, {15, 11}},
      {"never init or everyone", {0, 1, -1}, {}},
  };
  for (const Row& r : rows) EXPECT_EQ(OwnGroups(t, 10, r.pgids), r.want) << r.name;
}

TEST(KillDescendants, KillsASetsidGrandchildReparentedToTheSubreaper) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  // The grandchild leaves the group and the session, and its parent exits at once.
  std::string pid_text = RunShell("setsid sleep 1000 >/dev/null 2>&1 & echo $!");
  pid_t grandchild = std::stoi(pid_text);
  std::vector<pid_t> before = LiveDescendants(ReadProcTable(), getpid());
  ASSERT_NE(std::find(before.begin(), before.end(), grandchild), before.end())
      << "the orphan was not reparented to the subreaper";
  std::string err;
  ASSERT_TRUE(KillDescendants(getpid(), MonoClock::now() + std::chrono::seconds(60), &err)) << err;
  EXPECT_TRUE(LiveDescendants(ReadProcTable(), getpid()).empty());
  EXPECT_EQ(ReapExited({}), 1);  // the killed grandchild, now our child
  EXPECT_NE(kill(grandchild, 0), 0);
}

TEST(Leftovers, SparesTheGivenProcessesAndTheirDescendants) {
  // 10 the agent; 11 a worker's escaped child; 12 the zygote, 13 its fork helper.
  ProcTable t = {{10, 1, 10, 'S'}, {11, 10, 11, 'S'}, {12, 10, 12, 'S'}, {13, 12, 12, 'S'}, {14, 10, 14, 'Z'}};
  std::vector<pid_t> all = Leftovers(t, 10, {});
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<pid_t>{11, 12, 13}));
  EXPECT_EQ(Leftovers(t, 10, {12}), (std::vector<pid_t>{11}));
}

TEST(NextKillStep, KillsUntilNoneAreLeftOrTheDeadline) {
  auto t0 = MonoClock::time_point{} + std::chrono::seconds(100);
  struct Row {
    size_t left;
    MonoClock::duration now;  // after t0; the deadline is t0 + 1 s
    KillStep want;
  };
  const Row rows[] = {
      {0, std::chrono::seconds(0), KillStep::kDone},   {0, std::chrono::seconds(5), KillStep::kDone},
      {3, std::chrono::seconds(0), KillStep::kKill},   {1, std::chrono::milliseconds(999), KillStep::kKill},
      {1, std::chrono::seconds(1), KillStep::kGiveUp}, {2, std::chrono::seconds(9), KillStep::kGiveUp},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(NextKillStep(r.left, t0 + r.now, t0 + std::chrono::seconds(1)), r.want)
        << r.left << " left at +" << std::chrono::duration_cast<Millis>(r.now).count() << " ms";
  }
}

// Issue 21: on the loop nothing waits for the deaths: Start returns at once and the
// end is told from a loop event (KillDescendants returned only once they were dead).
TEST(LeftoverKiller, KillsWithoutWaitingAndTellsFromALoopEvent) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  pid_t grandchild = std::stoi(RunShell("setsid sleep 1000 >/dev/null 2>&1 & echo $!"));
  EventLoop loop;
  LeftoverKiller killer(loop);
  std::optional<std::string> told;
  ASSERT_FALSE(killer.Start(getpid(), {}, loop.Now() + std::chrono::seconds(60),
                            [&](const std::string& err) { told = err; }));
  EXPECT_TRUE(killer.running());
  EXPECT_FALSE(told.has_value());  // not before a loop event
  auto give_up = MonoClock::now() + std::chrono::seconds(60);
  while (!told && MonoClock::now() < give_up) loop.RunOnce(Millis(1000));
  ASSERT_TRUE(told.has_value());
  EXPECT_EQ(*told, "");
  EXPECT_FALSE(killer.running());
  EXPECT_TRUE(LiveDescendants(ReadProcTable(), getpid()).empty());
  int status = 0;
  ASSERT_EQ(waitpid(grandchild, &status, 0), grandchild);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST(LeftoverKiller, NoneLeftFinishesAtOnceWithoutATelling) {
  EventLoop loop;
  LeftoverKiller killer(loop);
  bool told = false;
  EXPECT_TRUE(killer.Start(getpid(), {}, loop.Now() + std::chrono::seconds(1), [&](const std::string&) { told = true; }));
  EXPECT_FALSE(killer.running());
  loop.RunOnce(Millis(0));
  EXPECT_FALSE(told);
}

TEST(SignalDescendants, SkipsTheGivenGroupsAndSignalsTheRest) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  pid_t grandchild = std::stoi(RunShell("setsid sleep 1000 >/dev/null 2>&1 & echo $!"));
  // $! is known before the child has called setsid(): wait (bounded) until it
  // leads its own group, the state this test is about.
  auto give_up = MonoClock::now() + std::chrono::seconds(30);
  while (getpgid(grandchild) != grandchild && MonoClock::now() < give_up) usleep(1000);
  ASSERT_EQ(getpgid(grandchild), grandchild);
  EXPECT_EQ(SignalDescendants(getpid(), SIGTERM, {grandchild}), 0);  // its own group: skipped
  EXPECT_EQ(SignalDescendants(getpid(), SIGTERM, {}), 1);
  int status = 0;
  ASSERT_EQ(waitpid(grandchild, &status, 0), grandchild);  // reparented to us: ours to reap
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
}

}  // namespace
}  // namespace elastic
