// The fixture of the rendezvous rules' tests (rendezvous_state_test.cc, the
// transition table in rendezvous_transition_table_test.cc): a state stepped on
// a fake clock, so nothing sleeps.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "rendezvous/rendezvous_state.h"

namespace elastic {

class RendezvousStateTest : public ::testing::Test {
 public:  // the transition table's rows drive it too
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
    RendezvousTransition t = StepRendezvous(settings, std::move(state), ev, now);
    state = std::move(t.state);
    return t.actions;
  }
  void Connect(NodeId id, int preferred_rank = -1, bool local = false) {
    Do(EvConnect{NodeDesc{id, "n" + std::to_string(id), "10.0.0." + std::to_string(id),
                          preferred_rank, local, "", 0}});
  }
  std::vector<RendezvousAction> ConnectJoin(NodeId id, int lws = 2, int pref = -1) {
    Connect(id, pref);
    return Do(EvJoin{id, lws});
  }
  void Advance(int64_t ms) { now += Millis(ms); }
  // A fresh state for a step of `nodes` nodes in MIN:MAX rounds of a multiple of
  // `multiple` (the table tests of spares and of Slurm's node state), no heartbeat loss.
  void StartStep(int min, int max, int multiple, int nodes) {
    settings.min_nodes = min;
    settings.max_nodes = max;
    settings.node_multiple = multiple;
    settings.expected_nodes = nodes;
    settings.heartbeat_timeout_ms = 3'600'000;
    state = InitialState(settings, now);
  }
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

}  // namespace elastic
