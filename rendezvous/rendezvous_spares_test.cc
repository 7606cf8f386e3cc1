// Table tests of the spare rules (docs/user.md "Spares and allowed sizes") and of
// nodes Slurm drained, with a fake clock: every event carries `now`, so nothing
// here sleeps. Split from rendezvous_state_test.cc.
#include "rendezvous/rendezvous_state.h"
#include "testing/rendezvous_state_test_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace elastic {
namespace {

// ---- spares and allowed sizes (docs/user.md "Spares and allowed sizes") ----

// A round has a multiple of node_multiple nodes within MIN..MAX; the other nodes
// of the step stand by (the highest node ranks) and fill the next round after a loss.
TEST_F(RendezvousStateTest, SparesAndAllowedSizes) {
  struct Row {
    const char* name;
    int min, max, multiple, nodes;  // nodes: the step's (expected_nodes), all of them join
    size_t members;                 // of the first round; the rest stand by
    NodeId lost;                    // a member lost in it (0: none)
    size_t next_members;            // of the round after the loss (0: the job ends)
  };
  const Row rows[] = {
      {"4 nodes for 3:3: a spare takes the lost node's place", 3, 3, 1, 4, 3, 2, 3},
      {"3 nodes for 2:2: the spare's vote makes the majority", 2, 2, 1, 3, 2, 1, 2},
      {"pairs of 3 nodes: 2 train, 1 stands by, then fills in", 1, 3, 2, 3, 2, 2, 2},
      {"pairs of 4 in 2:4, one lost: a pair trains, one stands by", 2, 4, 2, 4, 4, 3, 2},
      {"pairs of 5 nodes in 2:6: 4 train", 2, 6, 2, 5, 4, 0, 0},
      {"triples of 3 in 3:6, one lost: below the smallest round", 3, 6, 3, 3, 3, 1, 0},
  };
  for (const Row& r : rows) {
    StartStep(r.min, r.max, r.multiple, r.nodes);
    std::vector<RendezvousAction> last;
    for (int i = 1; i <= r.nodes; ++i) {
      last = ConnectJoin(static_cast<NodeId>(i), 2, i - 1);
      if (i < r.nodes) {
        EXPECT_TRUE(Rounds(last).empty()) << r.name << ": waits for the step's nodes";
      }
    }
    auto rounds = Rounds(last);
    ASSERT_EQ(rounds.size(), r.members) << r.name;
    std::vector<NodeId> spares;
    for (NodeId id = r.members + 1; id <= static_cast<NodeId>(r.nodes); ++id) spares.push_back(id);
    EXPECT_EQ(state.wait_list, spares) << r.name;
    EXPECT_EQ(Targets(last, RendezvousActionKind::kStandBy), spares) << r.name;
    for (auto& [id, info] : rounds) {
      EXPECT_EQ(info.world_size, static_cast<int>(2 * r.members)) << r.name;
      EXPECT_EQ(info.spares, static_cast<int>(spares.size())) << r.name;
    }
    if (!r.lost) continue;
    auto loss = Do(EvLeave{r.lost, "connection closed"});
    if (r.next_members == 0) {
      EXPECT_FALSE(Targets(loss, RendezvousActionKind::kFatal).empty()) << r.name;
      EXPECT_EQ(state.phase, RendezvousPhase::kClosed) << r.name;
      continue;
    }
    for (NodeId id = 1; id <= r.members; ++id)
      if (id != r.lost) last = Do(EvJoin{id, 2});
    rounds = Rounds(last);
    ASSERT_EQ(rounds.size(), r.next_members) << r.name << ": no last call, the spares are there";
    for (auto& [id, info] : rounds)
      EXPECT_EQ(info.world_size, static_cast<int>(2 * r.next_members)) << r.name;
  }
}

// ---- Slurm's node state (docs/user.md "Slurm's node state") ----

// A node that joins with a standby reason (Slurm drained it) stands by as a spare
// unless the round needs it to reach MIN; then the lowest ranks of them train.
TEST_F(RendezvousStateTest, DrainedNodesStandByUnlessTheRoundNeedsThem) {
  struct Row {
    const char* name;
    int min, max, multiple, nodes;
    std::vector<NodeId> drained;
    std::vector<NodeId> members, spares;
  };
  const Row rows[] = {
      {"3 nodes for 2:3, n2 drained: n1 and n3 train", 2, 3, 1, 3, {2}, {1, 3}, {2}},
      {"3 nodes for 2:3, n2 and n3 drained: never below MIN, n2 trains", 2, 3, 1, 3, {2, 3}, {1, 2}, {3}},
      {"2 nodes for 2:2, n1 drained: both train", 2, 2, 1, 2, {1}, {1, 2}, {}},
      {"every node drained in 1:3: the first trains", 1, 3, 1, 3, {1, 2, 3}, {1}, {2, 3}},
      {"pairs of 4 in 2:4, n3 drained: a pair trains", 2, 4, 2, 4, {3}, {1, 2}, {3, 4}},
      {"4 nodes for 3:3, n1 drained: the spare trains instead", 3, 3, 1, 4, {1}, {2, 3, 4}, {1}},
      {"nothing drained: as before", 2, 3, 1, 3, {}, {1, 2, 3}, {}},
  };
  for (const Row& r : rows) {
    StartStep(r.min, r.max, r.multiple, r.nodes);
    std::vector<RendezvousAction> last;
    for (int i = 1; i <= r.nodes; ++i) {
      NodeId id = static_cast<NodeId>(i);
      Connect(id, i - 1);
      bool drained = std::count(r.drained.begin(), r.drained.end(), id) > 0;
      last = Do(EvJoin{id, 2, -1, drained ? fmt::format("n{} is DRAIN in Slurm (reason: test)", id) : ""});
    }
    auto rounds = Rounds(last);
    std::vector<NodeId> members;
    for (auto& [id, info] : rounds) members.push_back(id);
    EXPECT_EQ(members, r.members) << r.name;
    EXPECT_EQ(state.members, r.members) << r.name << ": group ranks in node order";
    EXPECT_EQ(state.wait_list, r.spares) << r.name;
    for (auto& [id, info] : rounds) EXPECT_EQ(info.world_size, static_cast<int>(2 * r.members.size())) << r.name;
    std::vector<NodeId> standby = Targets(last, RendezvousActionKind::kStandBy);
    EXPECT_EQ(standby, r.spares) << r.name;
    for (const auto& a : last) {
      if (a.kind != RendezvousActionKind::kStandBy || !std::count(r.drained.begin(), r.drained.end(), a.node))
        continue;
      EXPECT_EQ(a.message, fmt::format("n{} is DRAIN in Slurm (reason: test): standing by (round 0 has {} "
                                       "node(s) without it)", a.node, r.members.size())) << r.name;
      EXPECT_FALSE(a.round.successors.empty()) << r.name << ": a voter, as every spare";
    }
  }
}

// After a restart the drained node's join keeps it out; a loss makes the round need
// it; a spare whose verdict clears joins again and a round below MAX grows by it.
TEST_F(RendezvousStateTest, ADrainedSpareFillsInBelowMinAndRejoinsOnceCleared) {
  settings.heartbeat_timeout_ms = 3'600'000;
  RunRound(3);
  const std::string drained = "n2 is DRAIN in Slurm (reason: test)";
  auto restart = Do(EvWorkerFailed{1, 0, WorkerFailure{}});
  ASSERT_EQ(Targets(restart, RendezvousActionKind::kRestartRequired), (std::vector<NodeId>{2, 3}));
  Do(EvJoin{1, 2, 0});
  Do(EvJoin{2, 2, 0, drained});
  auto round1 = Do(EvJoin{3, 2, 0});  // every survivor is back: no last call
  EXPECT_EQ(state.members, (std::vector<NodeId>{1, 3}));
  EXPECT_EQ(Targets(round1, RendezvousActionKind::kStandBy), (std::vector<NodeId>{2}));
  EXPECT_EQ(Rounds(round1).at(1).spares, 1);
  EXPECT_EQ(state.quorum_size, 3u) << "the drained spare votes";
  // Still drained, it joins again: it stays a spare (no restart of the others).
  auto again = Do(EvJoin{2, 2, 0, drained});
  EXPECT_TRUE(Targets(again, RendezvousActionKind::kRestartRequired).empty());
  // Cleared: the round (2 of MAX 3) grows by it, not counted against the restarts.
  auto cleared = Do(EvJoin{2, 2, 0});
  EXPECT_EQ(Targets(cleared, RendezvousActionKind::kRestartRequired), (std::vector<NodeId>{1, 3}));
  Do(EvJoin{1, 2, 1});
  EXPECT_EQ(Rounds(Do(EvJoin{3, 2, 1})).size(), 3u);
  EXPECT_EQ(state.restarts_used, 1);
  // Drained again at the next restart, then n3 lost: MIN 2 needs n2, which trains.
  Do(EvWorkerFailed{1, 2, WorkerFailure{}});
  Do(EvJoin{1, 2, 2});
  Do(EvJoin{2, 2, 2, drained});
  Do(EvJoin{3, 2, 2});
  ASSERT_EQ(state.members, (std::vector<NodeId>{1, 3}));
  Do(EvLeave{3, "connection closed"});  // the spare n2 is a participant of the next round
  auto needed = Do(EvJoin{1, 2, 3});
  EXPECT_EQ(state.members, (std::vector<NodeId>{1, 2}));
  EXPECT_EQ(Rounds(needed).size(), 2u);
}

TEST_F(RendezvousStateTest, AllowedRoundSizes) {
  struct Row {
    const char* name;
    int min, max, multiple;
    size_t joined, size;
  };
  const Row rows[] = {
      {"any size up to max", 1, 3, 1, 5, 3},
      {"below min: none", 2, 3, 1, 1, 0},
      {"pairs: 3 joined, 2 train", 1, 4, 2, 3, 2},
      {"pairs: 1 joined, none", 1, 4, 2, 1, 0},
      {"pairs within 3:6: 3 joined, none (4 is the smallest)", 3, 6, 2, 3, 0},
      {"triples up to 8: 9 joined, 6 train", 3, 8, 3, 9, 6},
  };
  for (const Row& r : rows) {
    settings.min_nodes = r.min;
    settings.max_nodes = r.max;
    settings.node_multiple = r.multiple;
    EXPECT_EQ(RoundSize(settings, r.joined), r.size) << r.name;
  }
}

// Nodes that arrive while a full round runs wait, but did not stand by when it
// formed: they are no voters of it (no successors: they cannot follow a failover).
TEST_F(RendezvousStateTest, LateSpareStandsByWithoutAVote) {
  settings.heartbeat_timeout_ms = 3'600'000;
  RunRound(3);
  auto actions = ConnectJoin(4);
  ASSERT_EQ(Targets(actions, RendezvousActionKind::kStandBy), (std::vector<NodeId>{4}));
  EXPECT_TRUE(actions[0].round.successors.empty());
  EXPECT_EQ(state.quorum_size, 3u);
}

TEST_F(RendezvousStateTest, SparesOfACompletedRoundAreVotersWithItsSuccessors) {
  settings.max_nodes = 2;
  settings.expected_nodes = 3;
  settings.heartbeat_timeout_ms = 3'600'000;
  ConnectJoin(1, 2, 0);
  ConnectJoin(2, 2, 1);
  auto actions = ConnectJoin(3, 2, 2);
  ASSERT_EQ(Targets(actions, RendezvousActionKind::kStandBy), (std::vector<NodeId>{3}));
  const RendezvousAction& standby = actions.back();
  EXPECT_EQ(standby.round.successors.size(), 2u);
  EXPECT_EQ(standby.round.spares, 1);
  EXPECT_NE(standby.message.find("round 0 is full (2 node(s))"), std::string::npos) << standby.message;
  EXPECT_EQ(state.quorum_size, 3u);
  // Both members lost at once: the spare alone is no majority of the 3 voters.
  Do(EvLeave{1, "no heartbeat"});
  settings.min_nodes = 1;
  Do(EvLeave{2, "no heartbeat"});
  EXPECT_TRUE(Rounds(Do(EvTick{})).empty());
  EXPECT_EQ(state.phase, RendezvousPhase::kJoining);
}

TEST_F(RendezvousStateTest, GrowthWaitsForAWholeMultiple) {
  settings.min_nodes = 2;
  settings.max_nodes = 4;
  settings.node_multiple = 2;
  settings.heartbeat_timeout_ms = 3'600'000;
  RunRound(2);
  auto third = ConnectJoin(3);
  EXPECT_TRUE(Targets(third, RendezvousActionKind::kRestartRequired).empty());
  EXPECT_EQ(Targets(third, RendezvousActionKind::kStandBy), (std::vector<NodeId>{3}));
  auto fourth = ConnectJoin(4);
  EXPECT_EQ(Targets(fourth, RendezvousActionKind::kRestartRequired), (std::vector<NodeId>{1, 2}));
  Do(EvJoin{1, 2});
  EXPECT_EQ(Rounds(Do(EvJoin{2, 2})).size(), 4u);
  EXPECT_EQ(state.restarts_used, 0);  // growth is no failure
}

}  // namespace
}  // namespace elastic
