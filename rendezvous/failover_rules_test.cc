// The failover rules as tables: successor choice, the majority, fencing.
#include "rendezvous/failover_rules.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(FailoverRulesTest, NextCandidateIsTheFirstRankNotExcluded) {
  struct Row {
    const char* name;
    size_t members;
    std::set<int> excluded;
    std::optional<int> want;
  };
  const Row rows[] = {
      {"host 0 lost: rank 1", 3, {0}, 1},
      {"host 0 lost, rank 1 unreachable: rank 2", 3, {0, 1}, 2},
      {"a middle rank excluded does not matter", 3, {1}, 0},
      {"host 0 and its successor lost (second loss)", 5, {0, 1}, 2},
      {"everyone excluded: none", 2, {0, 1}, std::nullopt},
      {"no members: none", 0, {}, std::nullopt},
      {"excluded ranks past the members are ignored", 2, {0, 7}, 1},
  };
  for (const Row& r : rows) EXPECT_EQ(NextCandidate(r.members, r.excluded), r.want) << r.name;
}

// Issue 19 (the short fault run, seed 19): latecomers that walked round 3's successors
// once while the two that could host were cut off exited 3; they walk again until
// join_timeout, pausing heartbeat_interval (1 s here), doubled, at most heartbeat_timeout
// (3 s), the last walk at the deadline.
TEST(FailoverRulesTest, AWalkThatFoundNobodyIsWalkedAgainUntilTheDeadline) {
  struct Row {
    const char* name;
    int walks;
    int64_t left_ms;
    std::optional<int64_t> pause_ms;
  };
  const Row rows[] = {
      {"first fruitless walk: heartbeat_interval", 1, 60'000, 1'000},
      {"second: doubled", 2, 60'000, 2'000},
      {"third: capped at heartbeat_timeout", 3, 60'000, 3'000},
      {"many: still capped (no overflow)", 200, 60'000, 3'000},
      {"near the deadline: the last walk at it", 3, 1'500, 1'500},
      {"a millisecond left", 1, 1, 1},
      {"at the deadline: give up", 1, 0, std::nullopt},
      {"past it: give up", 5, -20, std::nullopt},
  };
  for (const Row& r : rows)
    EXPECT_EQ(PauseAfterAFruitlessWalk(r.walks, r.left_ms, 1'000, 3'000), r.pause_ms) << r.name;
  // A heartbeat_timeout under the interval (settings allow it): the interval, never less.
  EXPECT_EQ(PauseAfterAFruitlessWalk(4, 60'000, 2'000, 500), 2'000);
  EXPECT_EQ(PauseAfterAFruitlessWalk(1, 60'000, 0, 0), 1);  // never a busy loop
}

TEST(FailoverRulesTest, StrictMajorityOfThePreviousRound) {
  struct Row {
    size_t rejoined, previous;
    bool want;
  };
  const Row rows[] = {
      {2, 3, true},   {1, 3, false},  // a partitioned host alone of 3
      {3, 5, true},   {2, 5, false},  // 2 of 5 cut off together
      {1, 2, false},  {2, 2, true},   // two nodes: losing one cannot be survived
      {1, 1, true},   {0, 1, false},  {2, 4, false}, {3, 4, true},
  };
  for (const Row& r : rows)
    EXPECT_EQ(HasMajority(r.rejoined, r.previous), r.want) << r.rejoined << " of " << r.previous;
  EXPECT_EQ(MajorityOf(3), 2u);
  EXPECT_EQ(MajorityOf(4), 3u);
  EXPECT_EQ(MajorityOf(5), 3u);
  EXPECT_EQ(MajorityOf(1), 1u);
}

TEST(FailoverRulesTest, HostsNotPastTheLastRoundRunAreStale) {
  struct Row {
    const char* name;
    uint64_t host_round;
    std::optional<uint64_t> last_run;
    bool stale;
  };
  const Row rows[] = {
      {"a first join: nothing run yet", 0, std::nullopt, false},
      {"a successor forming the next round", 4, 3, false},
      {"a former host still at the round run", 3, 3, true},
      {"a former host behind", 2, 3, true},
      {"a host far ahead (rounds went on)", 9, 3, false},
  };
  for (const Row& r : rows) EXPECT_EQ(HostIsStale(r.host_round, r.last_run), r.stale) << r.name;
}

TEST(FailoverRulesTest, AStuckHostYieldsOnlyToAHostThatCompletedALaterRound) {
  struct Row {
    const char* name;
    int64_t mine, theirs;
    bool yield;
  };
  const Row rows[] = {
      {"the majority went on to round 1: the former host joins it", 0, 1, true},
      {"rounds went on further", 3, 7, true},
      {"two stuck minorities of round 0: neither yields", 0, 0, false},
      {"the other is behind", 2, 1, false},
      {"nothing completed anywhere yet", -1, -1, false},
  };
  for (const Row& r : rows) EXPECT_EQ(ShouldYield(r.mine, r.theirs), r.yield) << r.name;
}

TEST(FailoverRulesTest, OfTwoHostsStuckOnTheSameRoundTheLaterInTheSuccessorOrderYields) {
  struct Row {
    const char* name;
    int64_t quorum_round;
    int probed_rank, own_rank;
    int64_t their_last_completed;
    bool yield;
  };
  const Row rows[] = {
      {"node 3 stuck on round 0 finds the former host (rank 0) stuck on it too", 0, 0, 3, 0, true},
      {"the former host (rank 0) finds node 3: it stays", 0, 3, 0, 0, false},
      {"a later round anywhere: yield whatever the order", 4, 5, 2, 5, true},
      {"an earlier successor that completed nothing (a fresh host): never", 0, 0, 3, -1, false},
      {"an earlier successor behind the round: never", 4, 0, 3, 3, false},
      {"no rank of its own in the round: only to a later round", 4, 0, -1, 4, false},
  };
  for (const Row& r : rows)
    EXPECT_EQ(ShouldYield(ProbeYieldsAfter(r.quorum_round, r.probed_rank, r.own_rank),
                          r.their_last_completed), r.yield) << r.name;
}

// --max-restarts is one job-wide budget: a successor carries every restart the
// lost host counted, plus the loss itself.
TEST(FailoverRulesTest, ASuccessorCarriesTheHostsRestartsPlusItsLoss) {
  struct Row {
    const char* name;
    RestartsKnown known;
    int before_loss, carried;
  };
  const Row rows[] = {
      {"host lost while round 2 runs (1 restart used)", {1, -1, false}, 1, 2},
      {"first round, nothing used", {0, -1, false}, 0, 1},
      // The known bug: another node's worker failed, the host counted it (2) and told
      // this node to restart, then was lost while the next round formed: 3, not 2.
      {"host lost while a restart round forms", {1, 2, false}, 2, 3},
      // This node's own worker failed: the host counts it but sends it no restart.
      {"host lost after this node reported its failure", {1, -1, true}, 2, 3},
      {"both: the host's count wins over a double count", {1, 2, true}, 2, 3},
      {"a growth restart is not counted: the host says so", {1, 1, false}, 1, 2},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(RestartsBeforeLoss(r.known), r.before_loss) << r.name;
    EXPECT_EQ(CarriedRestarts(r.known), r.carried) << r.name;
  }
}

// Issue 24: a joined job's agent (--elastic-join: its own --max-restarts is its step's,
// 0 by default on one node) judged the host's loss by its own budget and exited 3 while
// the run had restarts left; the run's budget, said in each round, counts.
TEST(FailoverRulesTest, TheRunsRestartBudgetFromTheRoundWinsOverTheAgentsOwn) {
  struct Row {
    const char* name;
    int round_max, own, want;
  } rows[] = {
      {"a joined agent: the run's 3, not its own 0", 3, 0, 3},
      {"the run has none left to give: 0, not the agent's 5", 0, 5, 0},
      {"a host that does not say it: the agent's own", -1, 2, 2},
  };
  for (const Row& r : rows) EXPECT_EQ(RunRestartBudget(r.round_max, r.own), r.want) << r.name;
}

}  // namespace
}  // namespace elastic
