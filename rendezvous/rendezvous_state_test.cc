// Table tests of the rendezvous rules with a fake clock: every event carries
// `now`, so nothing here sleeps.
#include "rendezvous/rendezvous_state.h"
#include "testing/rendezvous_state_test_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace elastic {
namespace {

// ---- failover: the majority rule, takeover, successors (docs/design.md "Failover") ----

TEST_F(RendezvousStateTest, RoundsCarryTheirMembersAsSuccessorsInGroupRankOrder) {
  settings.expected_nodes = 3;
  Do(EvConnect{NodeDesc{1, "a", "10.0.0.1", 2, false, "", 4001}});
  Do(EvConnect{NodeDesc{2, "b", "10.0.0.2", 0, false, "10.1.0.2", 4002}});
  Do(EvConnect{NodeDesc{3, "c", "10.0.0.3", 1, false, "", 0}});
  Do(EvJoin{1, 2});
  Do(EvJoin{2, 2});
  auto rounds = Rounds(Do(EvJoin{3, 2}));
  ASSERT_EQ(rounds.size(), 3u);
  for (auto& [id, r] : rounds) {
    ASSERT_EQ(r.successors.size(), 3u);
    EXPECT_EQ(r.successors[0].name, "b");
    EXPECT_EQ(r.successors[0].addr, "10.1.0.2");  // its rendezvous address wins
    EXPECT_EQ(r.successors[0].port, 4002);
    EXPECT_EQ(r.successors[1].addr, "10.0.0.3");  // else the address it came from
    EXPECT_EQ(r.successors[1].port, 0);
    EXPECT_EQ(r.successors[2].port, 4001);
  }
}

// Issue 19 item 13: every agent gets the round's first failover_successors members,
// not the whole list (it made each round message grow with N); spares alike, with
// the round's size, so a successor still weighs the majority against all of it.
TEST_F(RendezvousStateTest, RoundsCarryOnlyTheFirstFailoverSuccessors) {
  settings.max_nodes = 3;
  settings.expected_nodes = 4;  // the fourth stands by as a spare
  settings.failover_successors = 2;
  for (NodeId id = 1; id <= 3; ++id) ConnectJoin(id, 2, static_cast<int>(id - 1));
  auto actions = ConnectJoin(4, 2, 3);
  auto rounds = Rounds(actions);
  ASSERT_EQ(rounds.size(), 3u);
  for (auto& [id, r] : rounds) {
    EXPECT_EQ(r.group_world_size, 3);
    ASSERT_EQ(r.successors.size(), 2u) << "node " << id;
    EXPECT_EQ(r.successors[0].name, "n1");
    EXPECT_EQ(r.successors[1].name, "n2");
  }
  auto standby = Targets(actions, RendezvousActionKind::kStandBy);
  ASSERT_EQ(standby.size(), 1u);
  for (const auto& a : actions)
    if (a.kind == RendezvousActionKind::kStandBy) {
      EXPECT_EQ(a.round.group_world_size, 3);
      EXPECT_EQ(a.round.successors.size(), 2u);
    }
}

// The partitioned side of a split: the rounds after a loss need a strict majority
// of the previous round's members, whatever --nnodes MIN allows.
TEST_F(RendezvousStateTest, MajorityRuleAfterLosses) {
  struct Row {
    const char* name;
    int members;
    std::vector<NodeId> lost;
    bool completes;  // once every survivor rejoined
  };
  const Row rows[] = {
      {"1 of 3 lost: 2 of 3 go on", 3, {3}, true},
      {"a partitioned host: alone of 3", 3, {2, 3}, false},
      {"2 of 5 cut off: 3 of 5 go on", 5, {4, 5}, true},
      {"3 of 5 cut off: 2 of 5 wait", 5, {3, 4, 5}, false},
      {"1 of 2 lost: cannot be told from a partition", 2, {2}, false},
  };
  for (const Row& r : rows) {
    settings.min_nodes = 1;
    settings.max_nodes = 5;
    settings.heartbeat_timeout_ms = 3'600'000;
    state = InitialState(settings, now);
    RunRound(r.members);
    for (NodeId id : r.lost) Do(EvLeave{id, "no heartbeat"});
    ASSERT_EQ(state.phase, RendezvousPhase::kJoining) << r.name;
    std::vector<RendezvousAction> actions;
    for (int id = 1; id <= r.members; ++id)
      if (std::find(r.lost.begin(), r.lost.end(), static_cast<NodeId>(id)) == r.lost.end())
        actions = Do(EvJoin{static_cast<NodeId>(id), 2});
    EXPECT_EQ(!Rounds(actions).empty(), r.completes) << r.name;
    if (r.completes) continue;
    // Neither the last call nor max make a minority round; the join timeout ends it.
    Advance(settings.last_call_timeout_ms);
    EXPECT_TRUE(Rounds(Do(EvTick{})).empty()) << r.name;
    Advance(settings.join_timeout_ms);
    auto end = Do(EvTick{});
    EXPECT_FALSE(Targets(end, RendezvousActionKind::kFatal).empty()) << r.name;
    ASSERT_FALSE(end.empty());
    EXPECT_NE(end[0].message.find("no strict majority"), std::string::npos) << end[0].message;
    EXPECT_EQ(state.phase, RendezvousPhase::kClosed) << r.name;
  }
}

// Issue 24: nodes that leave with notice (their job ends: scancel, time limit,
// preemption) are no voters any more; nodes lost without notice still are, so a
// partitioned node never trains alone. Departures on notice count no restart.
TEST_F(RendezvousStateTest, MajorityRuleWithDeparturesOnNotice) {
  struct Row {
    const char* name;
    int members;
    std::vector<NodeId> notice;  // leave with notice first
    std::vector<NodeId> lost;    // then lost without notice
    bool completes;              // once every survivor rejoined
    int restarts;                // counted against max_restarts
  };
  const Row rows[] = {
      {"a joined job's 4 of 6 leave with notice: 2 go on", 6, {3, 4, 5, 6}, {}, true, 0},
      {"the same 4 lost without notice: 2 of 6 wait", 6, {}, {3, 4, 5, 6}, false, 1},
      // (a loss while a round forms counts no restart of its own: the round is restarting)
      {"2 leave with notice, 1 of the 4 left lost: 3 of 4 go on", 6, {5, 6}, {4}, true, 0},
      {"3 of 5 leave with notice, 1 of the 2 left lost: alone of 2 waits", 5, {3, 4, 5}, {2},
       false, 0},
      {"1 of 2 leaves with notice: the other goes on alone", 2, {2}, {}, true, 0},
      {"1 of 2 lost: cannot be told from a partition", 2, {}, {2}, false, 0},
  };
  for (const Row& r : rows) {
    settings.min_nodes = 1;
    settings.max_nodes = 6;
    settings.max_restarts = 5;
    settings.heartbeat_timeout_ms = 3'600'000;
    state = InitialState(settings, now);
    RunRound(r.members);
    for (NodeId id : r.notice) Do(EvLeave{id, "its agent was stopped", /*notice=*/true});
    for (NodeId id : r.lost) Do(EvLeave{id, "no heartbeat"});
    ASSERT_EQ(state.phase, RendezvousPhase::kJoining) << r.name;
    std::vector<RendezvousAction> actions;
    for (int id = 1; id <= r.members; ++id) {
      auto gone = [&](const std::vector<NodeId>& ids) {
        return std::find(ids.begin(), ids.end(), static_cast<NodeId>(id)) != ids.end();
      };
      if (!gone(r.notice) && !gone(r.lost)) actions = Do(EvJoin{static_cast<NodeId>(id), 2});
    }
    // At once: no last call waited out.
    EXPECT_EQ(!Rounds(actions).empty(), r.completes) << r.name;
    EXPECT_EQ(state.restarts_used, r.restarts) << r.name;
    if (r.completes) continue;
    Advance(settings.join_timeout_ms);
    auto end = Do(EvTick{});
    ASSERT_FALSE(end.empty()) << r.name;
    EXPECT_NE(end[0].message.find("no strict majority"), std::string::npos) << end[0].message;
  }
}

TEST_F(RendezvousStateTest, ADepartureOnNoticeRestartsTheOthersAndSaysSo) {
  settings.min_nodes = 1;
  settings.max_nodes = 4;
  RunRound(4);
  auto actions = Do(EvLeave{4, "its agent was stopped", /*notice=*/true});
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kRestartRequired),
            (std::vector<NodeId>{1, 2, 3}));
  ASSERT_FALSE(actions.empty());
  EXPECT_NE(actions[0].message.find("node n4 left with notice (its agent was stopped)"),
            std::string::npos) << actions[0].message;
  EXPECT_FALSE(actions[0].worker_failed);
  EXPECT_EQ(state.quorum_size, 3u);
  // A spare that leaves with notice: no restart, one voter less.
  settings.max_nodes = 2;
  settings.expected_nodes = 3;
  state = InitialState(settings, now);
  for (NodeId id = 1; id <= 3; ++id) ConnectJoin(id);
  ASSERT_EQ(state.wait_list, (std::vector<NodeId>{3}));
  EXPECT_TRUE(Do(EvLeave{3, "its agent was stopped", /*notice=*/true}).empty());
  EXPECT_EQ(state.phase, RendezvousPhase::kRunning);
  EXPECT_EQ(state.quorum_size, 2u);
}

// After a takeover the voters are known by the round they ran: one of them that
// leaves with notice lowers both the voters and the survivors awaited.
TEST_F(RendezvousStateTest, TakeoverCountsADepartureOnNoticeByTheRoundItRan) {
  settings.min_nodes = 1;
  settings.max_nodes = 5;
  settings.heartbeat_timeout_ms = 3'600'000;
  // Round 4 had 5 voters; the lost host was one: 4 awaited.
  state = TakeoverState(settings, now, CarriedRound{5, 1, 4, 5, 4});
  for (NodeId id = 1; id <= 4; ++id) Connect(id);
  for (NodeId id = 1; id <= 3; ++id) Do(EvJoin{id, 2, /*member_of=*/4});
  EXPECT_TRUE(Rounds(Do(EvLeave{3, "its agent was stopped", /*notice=*/true})).empty());
  EXPECT_EQ(state.quorum_size, 4u);
  EXPECT_EQ(state.quorum_awaited, 3u);
  // Every survivor not known gone is back: the round forms at once, no last call.
  EXPECT_EQ(Rounds(Do(EvJoin{4, 2, /*member_of=*/4})).size(), 3u);
}

// The failover test's race (CI, Debian 13, 2026-12-06): the host formed round 1 of 4,
// told only the successor, and died. The two others say round 0; by name they are
// round 1's members: with the successor, 3 of 4, the round forms and nobody waits out
// join_timeout. One of them leaving with notice is a voter gone, as by round.
TEST_F(RendezvousStateTest, TakeoverCountsMembersThatMissedTheLostRoundsCompletionByName) {
  settings.min_nodes = 2;
  settings.max_nodes = 5;
  settings.heartbeat_timeout_ms = 3'600'000;
  CarriedRound carried{2, 1, 1, 4, 4};
  carried.known_members = {"n1", "n2", "n3", "n4"};
  state = TakeoverState(settings, now, carried);
  Connect(1, -1, /*local=*/true);
  Do(EvJoin{1, 1, /*member_of=*/1});
  Connect(2);
  Connect(3);
  Do(EvJoin{2, 1, /*member_of=*/0});
  EXPECT_EQ(QuorumRejoined(state), 2u);
  auto rounds = Rounds(Do(EvJoin{3, 1, /*member_of=*/0}));
  EXPECT_TRUE(rounds.empty());  // a majority; n4 is still awaited: the last call
  EXPECT_EQ(QuorumRejoined(state), 3u);
  ASSERT_TRUE(state.last_call_deadline.has_value());
  Advance(settings.last_call_timeout_ms);
  rounds = Rounds(Do(EvTick{}));
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_EQ(rounds.begin()->second.round, 2u);
  EXPECT_TRUE(state.quorum_names.empty());  // the new round's voters are known by id

  state = TakeoverState(settings, now, carried);
  Connect(2);
  Do(EvJoin{2, 1, /*member_of=*/0});
  Do(EvLeave{2, "its agent was stopped", /*notice=*/true});
  EXPECT_EQ(state.quorum_size, 3u);
  EXPECT_EQ(state.quorum_awaited, 3u);
}

// Issue 24: the run's own job first. Nodes of a joined job (guests) rank after every
// node of the original job whatever their Slurm node ids, so the host and the failover
// successors stay on the job that leaves last.
TEST_F(RendezvousStateTest, NodesOfAJoinedJobRankAfterTheRunsOwnJob) {
  settings.min_nodes = 2;
  settings.max_nodes = 4;
  settings.expected_nodes = 4;
  settings.failover_successors = 2;
  auto guest = [](NodeId id, int pref) {
    NodeDesc d{id, "g" + std::to_string(id), "10.0.1." + std::to_string(id), pref, false, "", 5000};
    d.guest = true;
    return d;
  };
  Do(EvConnect{guest(1, 0)});
  Do(EvConnect{guest(2, 1)});
  Do(EvConnect{NodeDesc{3, "a1", "10.0.0.3", 1, false, "", 4001}});
  Do(EvConnect{NodeDesc{4, "a0", "10.0.0.4", 0, false, "", 4000}});
  for (NodeId id = 1; id <= 3; ++id) Do(EvJoin{id, 2});
  auto rounds = Rounds(Do(EvJoin{4, 2}));
  ASSERT_EQ(rounds.size(), 4u);
  EXPECT_EQ(state.members, (std::vector<NodeId>{4, 3, 1, 2}));
  ASSERT_EQ(rounds[1].successors.size(), 2u);
  EXPECT_EQ(rounds[1].successors[0].name, "a0");
  EXPECT_EQ(rounds[1].successors[1].name, "a1");
}

TEST_F(RendezvousStateTest, MinorityWaitingSaysAMajorityIsNeeded) {
  settings.min_nodes = 1;
  settings.heartbeat_timeout_ms = 3'600'000;
  RunRound(3);
  Do(EvLeave{2, "no heartbeat"});
  Do(EvLeave{3, "no heartbeat"});
  Do(EvJoin{1, 2});
  EXPECT_NE(DescribeWaiting(settings, state).find("1 of round 0's 3 node(s) back, a majority (2)"),
            std::string::npos) << DescribeWaiting(settings, state);
}

// A successor's rendezvous: the previous members count by the round they ran, or by
// name (the lost round's first members, RoundInfo::successors) when they missed its
// completion and say the round before.
TEST_F(RendezvousStateTest, TakeoverFormsTheNextRoundFromSurvivorsWhoRanTheLostRound) {
  struct Row {
    const char* name;
    std::vector<int64_t> member_of;  // of each joiner (n1, n2, ...)
    std::set<std::string> known_members;  // the lost round's members the successor knows
    bool completes_at_once;
  };
  const Row rows[] = {
      {"both survivors of round 4 back", {4, 4}, {}, true},
      {"one survivor and a stranger: no majority", {4, -1}, {}, false},
      {"a former round's member does not count", {4, 3}, {}, false},
      {"a member of round 4 that missed its completion: by name", {4, 3}, {"n1", "n2", "n9"}, true},
      {"an earlier round's node not listed in round 4 does not count", {4, 3}, {"n1", "n9"}, false},
      {"a listed node that ran no round does not count", {4, -1}, {"n1", "n2", "n9"}, false},
      {"a listed node that says a later round does not count", {4, 5}, {"n1", "n2", "n9"}, false},
  };
  for (const Row& r : rows) {
    settings.min_nodes = 1;
    settings.heartbeat_timeout_ms = 3'600'000;
    CarriedRound carried{5, 2, 4, 3, 2};
    carried.known_members = r.known_members;
    state = TakeoverState(settings, now, carried);
    EXPECT_EQ(state.round, 5u);
    EXPECT_EQ(state.restarts_used, 2);
    std::vector<RendezvousAction> actions;
    for (size_t i = 0; i < r.member_of.size(); ++i) {
      NodeId id = i + 1;
      Connect(id);
      actions = Do(EvJoin{id, 2, r.member_of[i]});
    }
    auto rounds = Rounds(actions);
    EXPECT_EQ(!rounds.empty(), r.completes_at_once) << r.name;
    for (auto& [id, info] : rounds) {
      EXPECT_EQ(info.round, 5u) << r.name;  // round numbers never go back
      EXPECT_EQ(info.restarts_used, 2) << r.name;
    }
  }
}

TEST_F(RendezvousStateTest, TakeoverWaitsForEverySurvivorThenTheLastCall) {
  settings.min_nodes = 1;
  settings.heartbeat_timeout_ms = 3'600'000;
  settings.max_nodes = 5;
  state = TakeoverState(settings, now, CarriedRound{1, 1, 0, 5, 4});  // 5 ran, host lost
  Connect(1);
  Connect(2);
  Connect(3);
  Do(EvJoin{1, 2, 0});
  Do(EvJoin{2, 2, 0});
  EXPECT_TRUE(Rounds(Do(EvJoin{3, 2, 0})).empty());  // a majority, but one survivor is awaited
  ASSERT_TRUE(state.last_call_deadline.has_value());
  Advance(settings.last_call_timeout_ms);
  EXPECT_EQ(Rounds(Do(EvTick{})).size(), 3u);  // it never came: go on with 3 of 5
}


// After the host's loss a successor weighs the majority against the same voters:
// the lost round's members and its spares (RoundInfo::spares), who say the round.
TEST_F(RendezvousStateTest, TakeoverCountsTheLostRoundsSparesAsVoters) {
  struct Row {
    const char* name;
    std::vector<int64_t> member_of;  // of each joiner, the successor itself first
    bool completes;
  };
  const Row rows[] = {
      {"the survivor and the spare of round 0: 2 of 3", {0, 0}, true},
      {"the survivor alone: 1 of 3", {0}, false},
      {"the survivor and a stranger: 1 of 3", {0, -1}, false},
  };
  for (const Row& r : rows) {
    settings.min_nodes = 2;
    settings.max_nodes = 2;
    settings.heartbeat_timeout_ms = 3'600'000;
    state = TakeoverState(settings, now, CarriedRound{1, 1, 0, 3, 2});  // 2 members + 1 spare
    std::vector<RendezvousAction> actions;
    for (size_t i = 0; i < r.member_of.size(); ++i) {
      NodeId id = i + 1;
      Connect(id);
      actions = Do(EvJoin{id, 2, r.member_of[i]});
    }
    Advance(settings.last_call_timeout_ms);
    auto tick = Do(EvTick{});
    actions.insert(actions.end(), tick.begin(), tick.end());
    EXPECT_EQ(!Rounds(actions).empty(), r.completes) << r.name;
  }
}

TEST_F(RendezvousStateTest, CompletesAtExpectedNodesWithoutLastCall) {
  settings.max_nodes = 4;
  settings.expected_nodes = 3;
  ConnectJoin(1);
  ConnectJoin(2);
  auto rounds = Rounds(ConnectJoin(3));
  EXPECT_EQ(rounds.size(), 3u);
  EXPECT_EQ(rounds[1].group_world_size, 3);
}

TEST_F(RendezvousStateTest, LeavingBelowMinCancelsTheLastCall) {
  settings.heartbeat_timeout_ms = 3'600'000;
  ConnectJoin(1);
  ConnectJoin(2);
  ASSERT_TRUE(state.last_call_deadline.has_value());
  Do(EvLeave{2, "connection closed"});
  EXPECT_FALSE(state.last_call_deadline.has_value());
  Advance(40'000);
  EXPECT_TRUE(ConnectJoin(3).empty());  // a full last call again, not an instant close
  EXPECT_EQ(*state.last_call_deadline, now + Millis(30'000));
}

TEST_F(RendezvousStateTest, RanksFollowPreferredRankNotJoinOrder) {
  settings.expected_nodes = 3;
  ConnectJoin(1, 2, /*pref=*/2);
  ConnectJoin(2, 2, /*pref=*/0);
  auto rounds = Rounds(ConnectJoin(3, 2, /*pref=*/1));
  EXPECT_EQ(rounds[2].group_rank, 0);
  EXPECT_EQ(rounds[3].group_rank, 1);
  EXPECT_EQ(rounds[1].group_rank, 2);
}

TEST_F(RendezvousStateTest, RanksFollowJoinOrderWithoutPreference) {
  RunRound(3);
  EXPECT_EQ(state.members, (std::vector<NodeId>{1, 2, 3}));
}

TEST_F(RendezvousStateTest, GlobalRanksAreContiguousPerNode) {
  settings.expected_nodes = 3;
  ConnectJoin(1, 4);
  ConnectJoin(2, 1);
  auto rounds = Rounds(ConnectJoin(3, 2));
  EXPECT_EQ(rounds[1].rank_offset, 0);
  EXPECT_EQ(rounds[2].rank_offset, 4);
  EXPECT_EQ(rounds[3].rank_offset, 5);
  for (auto& [id, r] : rounds) EXPECT_EQ(r.world_size, 7);
}

TEST_F(RendezvousStateTest, RoundNumberIsTheSameOnEveryNode) {
  RunRound(3);
  Do(EvWorkerFailed{2, 0, WorkerFailure{}});
  Do(EvJoin{1, 2});
  Do(EvJoin{2, 2});
  auto rounds = Rounds(Do(EvJoin{3, 2}));
  ASSERT_EQ(rounds.size(), 3u);
  for (auto& [id, r] : rounds) EXPECT_EQ(r.round, 1u);
}

TEST_F(RendezvousStateTest, LateJoinerIsPushedToRunningMembersAndGrowthIsNotCounted) {
  settings.max_nodes = 3;
  settings.expected_nodes = 2;
  ConnectJoin(1);
  ConnectJoin(2);
  ASSERT_EQ(state.phase, RendezvousPhase::kRunning);
  auto actions = ConnectJoin(3);
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kRestartRequired), (std::vector<NodeId>{1, 2}));
  EXPECT_EQ(state.restarts_used, 0);
  EXPECT_EQ(state.round, 1u);
  Do(EvJoin{1, 2});
  auto rounds = Rounds(Do(EvJoin{2, 2}));
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_EQ(rounds[3].group_rank, 2);
  EXPECT_EQ(rounds[1].world_size, 6);
}

TEST_F(RendezvousStateTest, RoundAfterLossClosesWhenSurvivorsRejoinWithoutLastCall) {
  RunRound(3);
  Do(EvLeave{1, "connection closed"});
  EXPECT_TRUE(Do(EvJoin{3, 2}).empty());
  auto rounds = Rounds(Do(EvJoin{2, 2}));
  ASSERT_EQ(rounds.size(), 2u);
  // Survivors keep their relative order; the lowest survivor becomes rank 0.
  EXPECT_EQ(rounds[2].group_rank, 0);
  EXPECT_EQ(rounds[3].group_rank, 1);
  EXPECT_EQ(rounds[3].rank_offset, 2);
  EXPECT_EQ(rounds[2].world_size, 4);
  EXPECT_EQ(rounds[2].restarts_used, 1);
}

// --max-restarts is one budget of the job, not of a node: failures on different
// nodes draw from it, every round tells every node the same round number and
// count, and a restart tells the count it used (a successor carries it).
TEST_F(RendezvousStateTest, OneRestartBudgetForTheJobAcrossFailuresOnDifferentNodes) {
  settings.max_restarts = 2;
  RunRound(3);
  for (int attempt = 0; attempt < 2; ++attempt) {
    NodeId failing = attempt == 0 ? 2 : 3;  // n2, then n3
    auto actions = Do(EvWorkerFailed{failing, state.round, WorkerFailure{}});
    for (const auto& a : actions) {
      ASSERT_EQ(a.kind, RendezvousActionKind::kRestartRequired);
      EXPECT_EQ(a.round.restarts_used, attempt + 1) << "restart told to n" << a.node;
    }
    std::map<NodeId, RoundInfo> rounds;
    for (NodeId id : {1, 2, 3}) {
      auto joined = Rounds(Do(EvJoin{id, 2}));
      rounds.insert(joined.begin(), joined.end());
    }
    ASSERT_EQ(rounds.size(), 3u);
    for (const auto& [id, info] : rounds) {
      EXPECT_EQ(info.round, static_cast<uint64_t>(attempt + 1)) << "n" << id;
      EXPECT_EQ(info.restarts_used, attempt + 1) << "n" << id;
    }
  }
  auto actions = Do(EvWorkerFailed{1, state.round, WorkerFailure{}});  // n1: the third failure
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kJobFailed), (std::vector<NodeId>{1, 2, 3}));
  EXPECT_NE(actions[0].message.find("restarts exhausted (2 of --max-restarts=2 used)"),
            std::string::npos) << actions[0].message;
}

// Why the job ended travels with its end actions (the agents' exit codes follow from it).
TEST_F(RendezvousStateTest, EveryEndSaysWhy) {
  using R = EndReason;
  struct Row {
    const char* name;
    std::function<std::vector<RendezvousAction>()> run;
    RendezvousActionKind kind;
    R reason;
  };
  const Row rows[] = {
      {"a worker fails, no restart left",
       [this] {
         settings.max_restarts = 0;
         RunRound(3);
         return Do(EvWorkerFailed{2, 0, WorkerFailure{}});
       },
       RendezvousActionKind::kJobFailed, R::kWorkerFailed},
      {"a node is lost, no restart left",
       [this] {
         settings.max_restarts = 0;
         RunRound(3);
         return Do(EvLeave{3, "connection closed"});
       },
       RendezvousActionKind::kJobFailed, R::kNodesLost},
      {"a node is lost, fewer than MIN left",
       [this] {
         settings.min_nodes = 3;
         RunRound(3);
         return Do(EvLeave{3, "connection closed"});
       },
       RendezvousActionKind::kFatal, R::kTooFewNodes},
      // Round 0 never formed: MIN asks for nodes never started (a configuration
      // error, exit 2, never requeued), not a lost node.
      {"join timeout below MIN, no round yet",
       [this] {
         settings.heartbeat_timeout_ms = 2 * settings.join_timeout_ms;  // heard from in time
         ConnectJoin(1);
         Advance(settings.join_timeout_ms);
         return Do(EvTick{});
       },
       RendezvousActionKind::kFatal, R::kBadInput},
      {"every node finished",
       [this] {
         RunRound(2);
         Do(EvSucceeded{1, 0});
         return Do(EvSucceeded{2, 0});
       },
       RendezvousActionKind::kDone, R::kDone},
      {"the host cannot go on",
       [this] {
         RunRound(2);
         return Do(EvHostFailure{"cannot open the workers' store"});
       },
       RendezvousActionKind::kFatal, R::kError},
  };
  for (const Row& r : rows) {
    settings = RendezvousSettings{};
    now = TimePoint(std::chrono::hours(1));
    SetUp();
    auto actions = r.run();
    ASSERT_FALSE(actions.empty()) << r.name;
    for (const auto& a : actions) {
      EXPECT_EQ(a.kind, r.kind) << r.name;
      EXPECT_EQ(a.end_reason, r.reason) << r.name << ": " << EndReasonName(a.end_reason);
    }
  }
}

TEST_F(RendezvousStateTest, WaitListFillsTheNextRoundAfterALoss) {
  RunRound(3);
  ConnectJoin(4);
  Do(EvLeave{1, "connection closed"});
  Do(EvJoin{2, 2});
  auto rounds = Rounds(Do(EvJoin{3, 2}));
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_EQ(rounds[4].group_rank, 2);
}

TEST_F(RendezvousStateTest, WaitingMessageNamesMissingNodeRanks) {
  settings.expected_nodes = 3;
  ConnectJoin(1, 2, 0);
  ConnectJoin(2, 2, 2);
  std::string text = DescribeWaiting(settings, state);
  EXPECT_NE(text.find("2 node(s) joined"), std::string::npos) << text;
  EXPECT_NE(text.find("missing: node rank 1"), std::string::npos) << text;
}

TEST_F(RendezvousStateTest, WaitingMessageNamesSurvivorsYetToRejoin) {
  RunRound(3);
  Do(EvLeave{1, "connection closed"});
  Do(EvJoin{2, 2});
  EXPECT_NE(DescribeWaiting(settings, state).find("missing: n3"), std::string::npos);
}

}  // namespace
}  // namespace elastic

namespace elastic {
namespace {

// Issue 19 item 15: a host cut off from its peers (cable cut, or frozen past
// heartbeat_timeout while they failed over) with MIN >= 2 closed the job at once as
// too_few_nodes (or nodes_lost with no restart left), which may requeue it while the
// majority trains. A minority never acts for the job: it waits out join_timeout and
// ends with no_majority (never requeued); a majority still ends below MIN at once.
TEST_F(RendezvousStateTest, ACutOffHostNeverActsForTheJob) {
  using R = EndReason;
  struct Row {
    const char* name;
    int min_nodes;
    int max_restarts;
    bool frozen;                 // the host heard nothing for heartbeat_timeout first
    std::vector<NodeId> closed;  // connections that closed (else: the peers went silent)
    std::vector<NodeId> silent;
    R at_once;                   // kUnknown: no end at once (then no_majority at join_timeout)
  };
  const Row rows[] = {
      {"cable cut, MIN 2: alone of 3", 2, 3, false, {}, {2, 3}, R::kUnknown},
      {"cable cut, MIN 2, no restart left", 2, 0, false, {}, {2, 3}, R::kUnknown},
      {"cable cut, MIN 3: alone of 3", 3, 3, false, {}, {2, 3}, R::kUnknown},
      {"frozen host: its peers closed and went on, MIN 2", 2, 3, true, {2, 3}, {}, R::kUnknown},
      {"frozen host, MIN 3, no restart left", 3, 0, true, {2, 3}, {}, R::kUnknown},
      {"a majority below MIN ends at once (and may requeue)", 3, 3, false, {3}, {}, R::kTooFewNodes},
      {"a majority with no restart left ends at once", 2, 0, false, {3}, {}, R::kNodesLost},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    settings.min_nodes = r.min_nodes;
    settings.max_restarts = r.max_restarts;
    settings.expected_nodes = 3;
    state = InitialState(settings, now);
    Connect(1, 0, /*local=*/true);
    Do(EvJoin{1, 2});
    Connect(2, 1);
    Do(EvJoin{2, 2});
    Connect(3, 2);
    ASSERT_EQ(Rounds(Do(EvJoin{3, 2})).size(), 3u);
    std::vector<RendezvousAction> actions;
    auto add = [&actions](std::vector<RendezvousAction> more) {
      actions.insert(actions.end(), more.begin(), more.end());
    };
    if (r.frozen || !r.silent.empty()) Advance(settings.heartbeat_timeout_ms);
    for (NodeId id : r.closed) add(Do(EvLeave{id, "connection closed"}));
    if (!r.silent.empty()) add(Do(EvTick{}));
    std::vector<R> ends;
    for (const auto& a : actions)
      if (a.kind == RendezvousActionKind::kFatal || a.kind == RendezvousActionKind::kJobFailed)
        ends.push_back(a.end_reason);
    if (r.at_once != R::kUnknown) {
      ASSERT_FALSE(ends.empty());
      EXPECT_EQ(ends[0], r.at_once) << EndReasonName(ends[0]);
      continue;
    }
    EXPECT_TRUE(ends.empty()) << EndReasonName(ends[0]);
    EXPECT_EQ(state.phase, RendezvousPhase::kJoining);
    Do(EvJoin{1, 2});  // the host's own agent rejoins and waits
    Advance(settings.join_timeout_ms);
    auto end = Do(EvTick{});
    ASSERT_EQ(Targets(end, RendezvousActionKind::kFatal), std::vector<NodeId>{1});
    EXPECT_EQ(end[0].end_reason, R::kNoMajority) << EndReasonName(end[0].end_reason);
  }
}

// scancel, a time limit or preemption reach the nodes one by one: the host heard the others'
// leaves (each naming its signal) before its own signal and ended the job as too_few_nodes,
// which requeued a cancelled job (the partition fault run's teardown, Debian 12 and 13 CI).
// Below MIN only through signals is kStopped (never requeued); a node lost or leaving for a
// reason of its own is still too_few_nodes, and signals of a past round do not count.
TEST_F(RendezvousStateTest, NodesStoppedBySignalsEndTheJobAsStoppedNotTooFew) {
  using R = EndReason;
  struct Leave {
    NodeId node;
    bool notice;
    int signal;
  };
  struct Row {
    const char* name;
    int min_nodes;
    int nodes;
    std::vector<Leave> before_next_round;  // then the others rejoin and a round forms again
    std::vector<Leave> leaves;
    R end;
  };
  const Row rows[] = {
      {"one node stopped by SIGTERM, MIN 3 of 3", 3, 3, {}, {{3, true, SIGTERM}}, R::kStopped},
      {"one node leaves with notice, no signal (stuck workers)", 3, 3, {}, {{3, true, 0}}, R::kTooFewNodes},
      {"one node lost", 3, 3, {}, {{3, false, 0}}, R::kTooFewNodes},
      {"signals one by one, MIN 2 of 3", 2, 3, {{3, true, SIGTERM}}, {{2, true, SIGTERM}}, R::kStopped},
      {"a past round's signal, then a lost node", 3, 4, {{4, true, SIGTERM}}, {{3, false, 0}},
       R::kTooFewNodes},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    settings.min_nodes = r.min_nodes;
    settings.max_nodes = r.nodes;
    state = InitialState(settings, now);
    RunRound(r.nodes);
    std::vector<NodeId> left;
    for (const Leave& l : r.before_next_round) {
      EXPECT_TRUE(Targets(Do(EvLeave{l.node, "left", l.notice, l.signal}), RendezvousActionKind::kFatal).empty());
      left.push_back(l.node);
    }
    if (!left.empty()) {
      std::vector<RendezvousAction> last;
      for (NodeId id = 1; id <= static_cast<NodeId>(r.nodes); ++id) {
        if (std::ranges::count(left, id) == 0) last = Do(EvJoin{id, 2, 0});
      }
      ASSERT_EQ(Rounds(last).size(), static_cast<size_t>(r.nodes) - left.size());
    }
    std::vector<RendezvousAction> actions;
    for (const Leave& l : r.leaves) {
      auto more = Do(EvLeave{l.node, "left", l.notice, l.signal});
      actions.insert(actions.end(), more.begin(), more.end());
    }
    std::vector<RendezvousAction> ends;
    for (const auto& a : actions)
      if (a.kind == RendezvousActionKind::kFatal) ends.push_back(a);
    ASSERT_FALSE(ends.empty());
    for (const auto& a : ends) EXPECT_EQ(a.end_reason, r.end) << EndReasonName(a.end_reason) << ": " << a.message;
    if (r.end == R::kStopped) {
      EXPECT_NE(ends[0].message.find("stopped by a signal"), std::string::npos) << ends[0].message;
    }
  }
}

// A lone survivor that took over (no majority ever came) said too_few_nodes.
TEST_F(RendezvousStateTest, ALoneSuccessorTimesOutWithNoMajority) {
  settings.min_nodes = 2;
  settings.heartbeat_timeout_ms = 3'600'000;
  state = TakeoverState(settings, now, CarriedRound{1, 1, 0, 3, 2});
  Connect(1, 1, /*local=*/true);
  Do(EvJoin{1, 2, 0});
  Advance(settings.join_timeout_ms);
  auto end = Do(EvTick{});
  ASSERT_EQ(Targets(end, RendezvousActionKind::kFatal), std::vector<NodeId>{1});
  EXPECT_EQ(end[0].end_reason, EndReason::kNoMajority) << EndReasonName(end[0].end_reason);
}

// Issue 19 item 19: the restart says whether a worker's failure ended the round.
TEST_F(RendezvousStateTest, RestartsSayWhetherAWorkerFailed) {
  RunRound(3);
  auto after_failure = Do(EvWorkerFailed{2, 0, WorkerFailure{}});
  ASSERT_EQ(Targets(after_failure, RendezvousActionKind::kRestartRequired),
            (std::vector<NodeId>{1, 3}));
  for (const auto& a : after_failure)
    EXPECT_TRUE(a.kind != RendezvousActionKind::kRestartRequired || a.worker_failed);
  settings = RendezvousSettings{};
  SetUp();
  RunRound(3);
  auto after_loss = Do(EvLeave{3, "connection closed"});
  ASSERT_EQ(Targets(after_loss, RendezvousActionKind::kRestartRequired),
            (std::vector<NodeId>{1, 2}));
  for (const auto& a : after_loss)
    EXPECT_TRUE(a.kind != RendezvousActionKind::kRestartRequired || !a.worker_failed);
}

}  // namespace
}  // namespace elastic
