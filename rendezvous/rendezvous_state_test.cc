// Table tests of the rendezvous rules with a fake clock: every event carries
// `now`, so nothing here sleeps.
#include "rendezvous/rendezvous_state.h"

#include <gtest/gtest.h>

#include <map>

namespace elastic {
namespace {

class RendezvousStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    settings.min_nodes = 2;
    settings.max_nodes = 3;
    settings.max_restarts = 3;
    settings.last_call_timeout_ms = 30'000;
    settings.join_timeout_ms = 600'000;
    settings.heartbeat_timeout_ms = 10'000;
    state = InitialState(settings, now);
  }
  std::vector<RendezvousAction> Do(const RendezvousEvent& ev) {
    std::vector<RendezvousAction> actions;
    Step(settings, ev, now, &state, &actions);
    return actions;
  }
  void Connect(NodeId id, int preferred_rank = -1, bool local = false) {
    Do(EvConnect{NodeDesc{id, "n" + std::to_string(id), "10.0.0." + std::to_string(id),
                          preferred_rank, local}});
  }
  std::vector<RendezvousAction> ConnectJoin(NodeId id, int lws = 2, int pref = -1) {
    Connect(id, pref);
    return Do(EvJoin{id, lws});
  }
  void Advance(int64_t ms) { now += Millis(ms); }
  static std::map<NodeId, RoundInfo> Rounds(const std::vector<RendezvousAction>& actions) {
    std::map<NodeId, RoundInfo> rounds;
    for (const auto& a : actions)
      if (a.kind == RendezvousActionKind::kRoundComplete) rounds[a.node] = a.round;
    return rounds;
  }
  static std::vector<NodeId> Targets(const std::vector<RendezvousAction>& actions, RendezvousActionKind kind) {
    std::vector<NodeId> ids;
    for (const auto& a : actions)
      if (a.kind == kind) ids.push_back(a.node);
    return ids;
  }
  // Starts a running round of nodes 1..n (2 workers each).
  void RunRound(int n) {
    settings.expected_nodes = n;
    std::vector<RendezvousAction> last;
    for (int i = 1; i <= n; ++i) last = ConnectJoin(i);
    ASSERT_EQ(Rounds(last).size(), static_cast<size_t>(n));
  }

  RendezvousSettings settings;
  TimePoint now = TimePoint(std::chrono::hours(1));
  RendezvousState state;
};

TEST_F(RendezvousStateTest, FirstJoinBelowMinWaits) {
  EXPECT_TRUE(ConnectJoin(1).empty());
  EXPECT_EQ(state.phase, RendezvousPhase::kJoining);
  EXPECT_FALSE(state.last_call_deadline.has_value());
}

TEST_F(RendezvousStateTest, CompletesAtOnceAtMaxNodes) {
  ConnectJoin(1);
  ConnectJoin(2);
  auto rounds = Rounds(ConnectJoin(3));
  EXPECT_EQ(rounds.size(), 3u);
  EXPECT_EQ(state.phase, RendezvousPhase::kRunning);
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

TEST_F(RendezvousStateTest, LastCallStartsAtMinAndClosesAtItsDeadline) {
  settings.heartbeat_timeout_ms = 3'600'000;  // only the last call matters here
  ConnectJoin(1);
  ConnectJoin(2);
  ASSERT_TRUE(state.last_call_deadline.has_value());
  EXPECT_EQ(*state.last_call_deadline, now + Millis(30'000));
  EXPECT_EQ(NextDeadline(state), state.last_call_deadline);
  Advance(29'999);
  EXPECT_TRUE(Do(EvTick{}).empty());
  Advance(1);
  EXPECT_EQ(Rounds(Do(EvTick{})).size(), 2u);
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

TEST_F(RendezvousStateTest, JoinTimeoutBelowMinIsFatalForEveryone) {
  settings.heartbeat_timeout_ms = 3'600'000;
  ConnectJoin(1);
  Connect(2);  // connected, never joined
  Advance(600'000);
  auto actions = Do(EvTick{});
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kFatal), (std::vector<NodeId>{1, 2}));
  EXPECT_EQ(state.phase, RendezvousPhase::kClosed);
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

TEST_F(RendezvousStateTest, LateJoinerAtMaxStaysOnTheWaitList) {
  RunRound(3);
  auto actions = ConnectJoin(4);
  EXPECT_TRUE(actions.empty());
  EXPECT_EQ(state.wait_list, (std::vector<NodeId>{4}));
  EXPECT_EQ(state.phase, RendezvousPhase::kRunning);
}

TEST_F(RendezvousStateTest, MemberLossRestartsSurvivorsAndCountsAgainstMaxRestarts) {
  RunRound(3);
  auto actions = Do(EvLeave{2, "connection closed"});
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kRestartRequired), (std::vector<NodeId>{1, 3}));
  EXPECT_EQ(state.restarts_used, 1);
  EXPECT_EQ(state.phase, RendezvousPhase::kJoining);
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

TEST_F(RendezvousStateTest, MemberLossBelowMinIsFatalEverywhere) {
  settings.expected_nodes = 2;
  ConnectJoin(1);
  ConnectJoin(2);
  auto actions = Do(EvLeave{2, "connection closed"});
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kFatal), (std::vector<NodeId>{1}));
  EXPECT_NE(actions[0].message.find("below the minimum of 2"), std::string::npos);
  EXPECT_EQ(state.phase, RendezvousPhase::kClosed);
}

TEST_F(RendezvousStateTest, LossWhileRejoiningBelowMinIsFatal) {
  RunRound(3);
  Do(EvLeave{1, "connection closed"});
  auto actions = Do(EvLeave{2, "connection closed"});
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kFatal), (std::vector<NodeId>{3}));
}

TEST_F(RendezvousStateTest, WorkerFailureRestartsEveryOtherNode) {
  RunRound(3);
  WorkerFailure f;
  f.global_rank = 3;
  auto actions = Do(EvWorkerFailed{2, 0, f});
  // The reporting node already stops its workers and rejoins by itself.
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kRestartRequired), (std::vector<NodeId>{1, 3}));
  EXPECT_EQ(state.restarts_used, 1);
  EXPECT_EQ(state.pending_rejoin.size(), 3u);
}

TEST_F(RendezvousStateTest, WorkerFailureOverBudgetFailsTheJobEverywhere) {
  settings.max_restarts = 0;
  RunRound(3);
  WorkerFailure f;
  f.global_rank = 5;
  f.exit_code = 7;
  auto actions = Do(EvWorkerFailed{3, 0, f});
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kJobFailed), (std::vector<NodeId>{1, 2, 3}));
  EXPECT_EQ(actions[0].failure.global_rank, 5);
  EXPECT_EQ(state.phase, RendezvousPhase::kClosed);
}

TEST_F(RendezvousStateTest, StaleFailureOfAnEarlierRoundIsIgnored) {
  RunRound(3);
  Do(EvWorkerFailed{1, 0, WorkerFailure{}});
  EXPECT_TRUE(Do(EvWorkerFailed{2, 0, WorkerFailure{}}).empty());
  EXPECT_EQ(state.restarts_used, 1);
}

TEST_F(RendezvousStateTest, SilentNodeIsDisconnectedAfterHeartbeatTimeout) {
  RunRound(3);
  Advance(5'000);
  Do(EvHeartbeat{1});
  Do(EvHeartbeat{3});
  Advance(5'000);
  auto actions = Do(EvTick{});
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kDisconnect), (std::vector<NodeId>{2}));
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kRestartRequired), (std::vector<NodeId>{1, 3}));
}

TEST_F(RendezvousStateTest, LocalNodeNeverTimesOut) {
  settings.expected_nodes = 2;
  Connect(1, -1, /*local=*/true);
  Do(EvJoin{1, 2});
  ConnectJoin(2);
  Advance(60'000);
  Do(EvHeartbeat{2});
  EXPECT_TRUE(Targets(Do(EvTick{}), RendezvousActionKind::kDisconnect).empty());
}

TEST_F(RendezvousStateTest, RemoteSuccessIsAcknowledgedAndDoneComesWhenAllSucceeded) {
  settings.expected_nodes = 2;
  Connect(1, -1, /*local=*/true);
  Do(EvJoin{1, 2});
  ConnectJoin(2);
  auto ack = Do(EvSucceeded{2, 0});
  EXPECT_EQ(Targets(ack, RendezvousActionKind::kDone), (std::vector<NodeId>{2}));
  EXPECT_EQ(state.phase, RendezvousPhase::kFinishing);
  auto done = Do(EvSucceeded{1, 0});
  EXPECT_EQ(Targets(done, RendezvousActionKind::kDone), (std::vector<NodeId>{1, 2}));
  EXPECT_EQ(state.phase, RendezvousPhase::kClosed);
}

TEST_F(RendezvousStateTest, FinishedNodeLeavingDoesNotRestartTheRound) {
  RunRound(3);
  Do(EvSucceeded{2, 0});
  auto actions = Do(EvLeave{2, "exited"});
  EXPECT_TRUE(actions.empty());
  Do(EvSucceeded{1, 0});
  EXPECT_EQ(Targets(Do(EvSucceeded{3, 0}), RendezvousActionKind::kDone), (std::vector<NodeId>{1, 3}));
}

TEST_F(RendezvousStateTest, FailureAfterOthersFinishedFailsTheJob) {
  RunRound(3);
  Do(EvSucceeded{1, 0});
  auto actions = Do(EvWorkerFailed{2, 0, WorkerFailure{}});
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kJobFailed).size(), 3u);
}

TEST_F(RendezvousStateTest, HostFailureIsFatalForEveryNodeOnceAndNamesTheCause) {
  RunRound(3);
  auto actions = Do(EvHostFailure{"cannot open the workers' store of round 1: EMFILE"});
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kFatal), (std::vector<NodeId>{1, 2, 3}));
  for (const auto& a : actions) EXPECT_EQ(a.message, "cannot open the workers' store of round 1: EMFILE");
  EXPECT_EQ(state.phase, RendezvousPhase::kClosed);
  EXPECT_TRUE(Do(EvHostFailure{"again"}).empty());
}

TEST_F(RendezvousStateTest, JoinAfterTheJobEndedIsFatalForTheNewcomer) {
  settings.max_restarts = 0;
  RunRound(2);
  Do(EvWorkerFailed{1, 0, WorkerFailure{}});
  auto actions = ConnectJoin(9);
  EXPECT_EQ(Targets(actions, RendezvousActionKind::kFatal), (std::vector<NodeId>{9}));
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
