// Workers the kill cannot end: the verdict over a /proc snapshot as a table, the
// wchan parser's table, and the report through a fake /proc reader.
#include "launcher/stuck_worker.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace elastic {
namespace {

// Two workers: local rank 0 = pid 100 (rank 4), local rank 1 = pid 200 (rank 5);
// each leads its process group.
const std::vector<UnreapedWorker> kWorkers = {{100, 0, 4}, {200, 1, 5}};

struct Row {
  const char* name;
  ProcTable table;
  KillVerdict verdict;
  std::vector<pid_t> reported;  // in report order
};

void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class JudgeKillTable : public ::testing::TestWithParam<Row> {};

TEST_P(JudgeKillTable, Verdict) {
  const Row& row = GetParam();
  KillCheck check = JudgeKill(row.table, kWorkers);
  EXPECT_EQ(check.verdict, row.verdict);
  std::vector<pid_t> reported;
  for (const StuckProcess& p : check.processes) reported.push_back(p.pid);
  EXPECT_EQ(reported, row.reported);
}

// ProcEntry: pid, ppid, pgid, state.
INSTANTIATE_TEST_SUITE_P(
    StuckWorker, JudgeKillTable,
    ::testing::Values(
        Row{"BothGoneFromProc", {}, KillVerdict::kDying, {}},
        Row{"BothZombies", {{100, 1, 100, 'Z'}, {200, 1, 200, 'Z'}}, KillVerdict::kDying, {}},
        Row{"OneInUninterruptibleSleep", {{100, 1, 100, 'Z'}, {200, 1, 200, 'D'}}, KillVerdict::kStuck, {200}},
        Row{"RunningAfterKillCountsToo", {{100, 1, 100, 'R'}}, KillVerdict::kStuck, {100}},
        // The group's other processes are reported, D first; a zombie leader's group is not.
        Row{"GroupMembersDFirst",
            {{100, 1, 100, 'R'}, {101, 100, 100, 'S'}, {102, 100, 100, 'D'}, {103, 100, 100, 'Z'},
             {200, 1, 200, 'Z'}, {201, 200, 200, 'D'}},
            KillVerdict::kStuck, {102, 100, 101}},
        // A process of another group (an unrelated one) is never ours.
        Row{"OtherGroupsIgnored", {{100, 1, 100, 'D'}, {300, 1, 300, 'D'}}, KillVerdict::kStuck, {100}}));

TEST(StuckWorker, ReportIsBounded) {
  ProcTable table{{100, 1, 100, 'D'}};
  for (pid_t pid = 1000; pid < 1030; ++pid) table.push_back({pid, 100, 100, 'D'});
  KillCheck check = JudgeKill(table, kWorkers);
  EXPECT_EQ(check.processes.size(), kMaxReported);
  EXPECT_EQ(check.unreported, 31 - kMaxReported);
  EXPECT_EQ(check.processes[0].pid, 100);  // the worker's own process first among the D ones
}

TEST(StuckWorker, ParseWchan) {
  struct Case {
    std::string text, want;
  };
  for (const Case& c : std::vector<Case>{{"request_wait_answer", "request_wait_answer"},
                                         {"request_wait_answer\n", "request_wait_answer"},
                                         {"0", ""},
                                         {"", ""},
                                         {"\n", ""},
                                         {"bad\x1b[2Jname", "bad\\x1b[2Jname"}}) {
    EXPECT_EQ(ParseWchan(c.text), c.want) << c.text;
  }
  EXPECT_LE(ParseWchan(std::string(500, 'a')).size(), 80u);
}

class FakeProc : public ProcReader {
 public:
  ProcTable table;
  std::map<pid_t, std::string> wchan;
  ProcTable Table() const override { return table; }
  std::string Wchan(pid_t pid) const override {
    auto it = wchan.find(pid);
    return it == wchan.end() ? "" : it->second;
  }
};

TEST(StuckWorker, CheckKillReportsStateAndWchan) {
  FakeProc proc;
  proc.table = {{100, 1, 100, 'Z'}, {200, 1, 200, 'D'}, {201, 200, 200, 'S'}};
  proc.wchan = {{200, "request_wait_answer\n"}, {201, "0"}};
  KillCheck check = CheckKill(proc, kWorkers);
  ASSERT_EQ(check.verdict, KillVerdict::kStuck);
  ASSERT_EQ(check.processes.size(), 2u);
  EXPECT_EQ(DescribeStuck(check.processes[0]),
            "local rank 1 (rank 5, pid 200) is in uninterruptible sleep (state D, wchan request_wait_answer)");
  EXPECT_EQ(DescribeStuck(check.processes[1]), "pid 201 of local rank 1 (rank 5) is still alive (state S)");
}

}  // namespace
}  // namespace elastic
