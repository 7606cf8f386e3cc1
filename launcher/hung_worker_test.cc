#include "launcher/hung_worker.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(HungWorkerTest, ExtractsTheFaulthandlerDump) {
  const std::string dump =
      "Fatal Python error: Aborted\n\n"
      "Thread 0x00007f326f9736c0 (most recent call first):\n"
      "  File \"w.py\", line 3 in loader\n\n"
      "Current thread 0x00007f32707c4b80 (most recent call first):\n"
      "  File \"w.py\", line 9 in stuck_in_collective\n";
  struct Case {
    std::string in;
    std::string want;
  } cases[] = {
      {"[warn] step 3\nloss 0.1\n" + dump, dump},
      {dump, dump},
      // Without the header line (older Pythons, or output cut), the thread list.
      {"noise\nCurrent thread 0x1 (most recent call first):\n  File \"w.py\", line 1 in f\n",
       "Current thread 0x1 (most recent call first):\n  File \"w.py\", line 1 in f\n"},
      {"not python at all\n", "not python at all\n"},
      {"", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(ExtractPythonStacks(c.in), c.want) << c.in;
}

TEST(HungWorkerTest, MessageNamesTheScopeAndWhereTheStacksAre) {
  HangInfo h;
  h.timer = ExpiredTimer{4242, "train.py#17", 100.0, 9};
  h.overdue_s = 0.12;
  h.stacks_path = "/logs/attempt_0/1/stacks.log";
  EXPECT_EQ(FormatHangMessage(h, true),
            "hung: FileTimerClient timer 'train.py#17' expired 0.1 s ago (pid 4242); Python stacks "
            "collected with SIGABRT: /logs/attempt_0/1/stacks.log");
  EXPECT_NE(FormatHangMessage(h, false).find("no Python stacks"), std::string::npos);
  h.native_tool = "gdb";
  h.native_path = "/logs/attempt_0/1/native_stacks.log";
  EXPECT_EQ(FormatHangMessage(h, true),
            "hung: FileTimerClient timer 'train.py#17' expired 0.1 s ago (pid 4242); Python stacks "
            "collected with SIGABRT: /logs/attempt_0/1/stacks.log; native frames (gdb): "
            "/logs/attempt_0/1/native_stacks.log");
  h.native_problem = "killed after the 15 s timeout";
  EXPECT_EQ(FormatHangMessage(h, false),
            "hung: FileTimerClient timer 'train.py#17' expired 0.1 s ago (pid 4242); no Python stacks "
            "(run the worker with PYTHONFAULTHANDLER=1); native frames: gdb failed (killed after the "
            "15 s timeout): /logs/attempt_0/1/native_stacks.log");
}

TEST(HungWorkerTest, TimerFileIsTheUsersOrPrivate) {
  EXPECT_EQ(TimerFilePath("/tmp/mine", "/tmp/elasticrun-timer-x"), "/tmp/mine");
  EXPECT_EQ(TimerFilePath("", "/tmp/elasticrun-timer-x"), "/tmp/elasticrun-timer-x/watchdog_timer");
}

}  // namespace
}  // namespace elastic
