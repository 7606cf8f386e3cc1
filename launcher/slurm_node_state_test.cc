#include "launcher/slurm_node_state.h"

#include <gtest/gtest.h>

#include <string>

namespace elastic {
namespace {

// What scontrol prints (22.05, 24.11, 26.05 alike on these fields), cut to the
// fields read and their neighbours.
TEST(SlurmNodeStateTest, ParsesScontrolsOneLiner) {
  struct Row {
    const char* name;
    const char* text;
    bool ok;
    SlurmNodeState node;
    const char* error;  // a part of it
  };
  const Row rows[] = {
      {"drained by an admin",
       "NodeName=n2 Arch=x86_64 OS=Linux 6.1.0 #1 SMP State=MIXED+DRAIN ThreadsPerCore=1 TmpDisk=0 "
       "CurrentWatts=0 AveWatts=0 Reason=test [root@2026-12-03T07:02:00]\n",
       true, {"n2", "MIXED+DRAIN", "test"}, ""},
      {"a reason of several words, then a comment",
       "NodeName=n3 State=DOWN* ThreadsPerCore=1 Reason=GPU 3 fell off the bus [slurm@2026-12-03T07:02:00] "
       "Comment=rack 4\n",
       true, {"n3", "DOWN*", "GPU 3 fell off the bus"}, ""},
      {"a reason without its time", "NodeName=n1 State=IDLE+FAIL Reason=nhc: disk full Extra=x", true,
       {"n1", "IDLE+FAIL", "nhc: disk full"}, ""},
      {"idle, no reason", "NodeName=n1 Arch=x86_64 State=IDLE ThreadsPerCore=1\n", true, {"n1", "IDLE", ""}, ""},
      {"its address (22.05's line, shortened)",
       "NodeName=n1 Arch=x86_64 CoresPerSocket=1  Gres=gpu:8 NodeAddr=10.200.0.11 NodeHostName=n1 "
       "Version=22.05.8 State=MIXED ThreadsPerCore=1\n",
       true, {"n1", "MIXED", "", "10.200.0.11"}, ""},
      {"NextState is not State", "NodeName=n1 NextState=DRAIN State=ALLOCATED Weight=1", true,
       {"n1", "ALLOCATED", ""}, ""},
      {"not found", "Node n9 not found\n", false, {}, "no NodeName="},
      {"no state", "NodeName=n1 Arch=x86_64\n", false, {}, "no State="},
      {"empty", "", false, {}, "no NodeName="},
      {"an empty state", "NodeName=n1 State= Weight=1", false, {}, "an empty State"},
  };
  for (const Row& r : rows) {
    SlurmNodeState node;
    std::string err;
    ASSERT_EQ(ParseScontrolNode(r.text, &node, &err), r.ok) << r.name << ": " << err;
    if (!r.ok) {
      EXPECT_NE(err.find(r.error), std::string::npos) << r.name << ": " << err;
      continue;
    }
    EXPECT_EQ(node.name, r.node.name) << r.name;
    EXPECT_EQ(node.state, r.node.state) << r.name;
    EXPECT_EQ(node.reason, r.node.reason) << r.name;
    EXPECT_EQ(node.addr, r.node.addr) << r.name;
  }
}

TEST(SlurmNodeStateTest, VerdictOfEachState) {
  const std::pair<const char*, const char*> rows[] = {
      {"IDLE", ""}, {"MIXED", ""}, {"ALLOCATED", ""}, {"IDLE*", ""}, {"COMPLETING", ""},
      {"MIXED+DRAIN", "DRAIN"}, {"IDLE+DRAIN", "DRAIN"}, {"DRAINING", "DRAIN"}, {"DRAINED", "DRAIN"},
      {"drained*", "DRAIN"}, {"DOWN", "DOWN"}, {"DOWN*", "DOWN"}, {"DOWN+DRAIN", "DOWN"},
      {"IDLE+FAIL", "FAIL"}, {"FAILING", "FAIL"}, {"ALLOCATED+DRAIN+FAIL", "FAIL"},
      {"MIXED+COMPLETING+DRAIN", "DRAIN"}, {"IDLE+POWERED_DOWN", ""}, {"IDLE+RESERVED", ""},
      {"DRAINABLE", ""}, {"", ""},
  };
  for (const auto& [state, verdict] : rows) EXPECT_EQ(NodeVerdict(state), verdict) << state;
}

TEST(SlurmNodeStateTest, StandByReasonIsOneEscapedLine) {
  EXPECT_EQ(StandByReason({"n2", "MIXED+DRAIN", "test"}), "n2 is DRAIN in Slurm (reason: test)");
  EXPECT_EQ(StandByReason({"n2", "DOWN*", ""}), "n2 is DOWN in Slurm (no reason given)");
  EXPECT_EQ(StandByReason({"n2", "IDLE", "old reason"}), "");
  std::string line = StandByReason({"n2", "IDLE+FAIL", "a\nelasticrun: forged\x1b[2J"});
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  EXPECT_LE(StandByReason({"n2", "DRAIN", std::string(5000, 'x')}).size(), 260u);
}

// At most one question per interval: the answer is reused in between (fake clock);
// never again once a question failed (the node state is unknown: nothing waits for it).
TEST(SlurmNodeStateTest, AsksAtMostOncePerIntervalAndNeverOnceUnknown) {
  const MonoClock::time_point t0(std::chrono::hours(1));
  const Millis kMinInterval(5000);  // AgentSettings::node_state_min_interval_ms
  const struct {
    const char* name;
    bool unknown;
    std::optional<MonoClock::time_point> last;
    MonoClock::time_point now;
    bool ask;
  } rows[] = {
      {"never asked", false, std::nullopt, t0, true},
      {"just asked", false, t0, t0, false},
      {"within the interval", false, t0, t0 + kMinInterval - Millis(1), false},
      {"at the interval", false, t0, t0 + kMinInterval, true},
      {"long after", false, t0, t0 + std::chrono::hours(1), true},
      {"unknown: the first question failed", true, std::nullopt, t0, false},
      {"unknown, long after", true, t0, t0 + std::chrono::hours(1), false},
  };
  for (const auto& r : rows) EXPECT_EQ(ShouldAskSlurm(r.unknown, r.last, r.now, kMinInterval), r.ask) << r.name;
}

}  // namespace
}  // namespace elastic
