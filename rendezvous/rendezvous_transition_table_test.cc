// The rendezvous rules as a transition table: named rows of state in, event,
// actions by kind and target, phase after (like launcher/worker_state_test.cc).
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "rendezvous/rendezvous_state.h"
#include "testing/rendezvous_state_test_util.h"

namespace elastic {
namespace {

// Each row: a name, the state in (built by `given` from events on a fake
// clock), one event, and the transition expected: every action by kind and
// target node, the phase after, and what else the row checks (`also`).

using A = RendezvousActionKind;
using P = RendezvousPhase;
using ByKind = std::map<A, std::vector<NodeId>>;

struct Row {
  const char* name;
  std::function<void(RendezvousStateTest&)> given;
  RendezvousEvent event;
  ByKind actions;  // every action of the transition, by kind
  P phase;
  std::function<void(const RendezvousStateTest&, const std::vector<RendezvousAction>&)> also = {};
};

// ctest lists a row by its name, not as a byte dump.
void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

const char* ActionName(A kind) {
  switch (kind) {
    case A::kRoundComplete: return "round";
    case A::kRestartRequired: return "restart";
    case A::kJobFailed: return "job_failed";
    case A::kDone: return "done";
    case A::kFatal: return "fatal";
    case A::kDisconnect: return "disconnect";
    case A::kStandBy: return "standby";
  }
  return "?";
}

std::string Describe(const ByKind& targets) {
  std::string text;
  for (const auto& [kind, nodes] : targets) {
    text += std::string(ActionName(kind)) + ":";
    for (NodeId id : nodes) text += " " + std::to_string(id);
    text += "; ";
  }
  return text.empty() ? "none" : text;
}

class RendezvousTransitionTable : public RendezvousStateTest,
                                  public ::testing::WithParamInterface<Row> {};

TEST_P(RendezvousTransitionTable, Step) {
  const Row& row = GetParam();
  if (row.given) row.given(*this);
  std::vector<RendezvousAction> actions = Do(row.event);
  ByKind got;
  for (const auto& a : actions) got[a.kind].push_back(a.node);
  EXPECT_EQ(Describe(got), Describe(row.actions));
  EXPECT_EQ(std::string(PhaseName(state.phase)), PhaseName(row.phase));
  if (row.also) row.also(*this, actions);
}

WorkerFailure Failure(int global_rank, int exit_code = 1) {
  WorkerFailure f;
  f.global_rank = global_rank;
  f.exit_code = exit_code;
  return f;
}

// The host's own agent (node 1, local) and one remote node run a round.
void LocalAndRemoteRunning(RendezvousStateTest& t) {
  t.settings.expected_nodes = 2;
  t.Connect(1, -1, /*local=*/true);
  t.Do(EvJoin{1, 2});
  t.ConnectJoin(2);
}

INSTANTIATE_TEST_SUITE_P(
    Rules, RendezvousTransitionTable,
    ::testing::Values(
        // -- forming a round --
        Row{"FirstJoinBelowMinWaits", [](auto& t) { t.Connect(1); }, EvJoin{1, 2}, {}, P::kJoining,
            [](const auto& t, const auto&) { EXPECT_FALSE(t.state.last_call_deadline.has_value()); }},
        Row{"CompletesAtOnceAtMaxNodes",
            [](auto& t) {
              t.ConnectJoin(1);
              t.ConnectJoin(2);
              t.Connect(3);
            },
            EvJoin{3, 2}, {{A::kRoundComplete, {1, 2, 3}}}, P::kRunning},
        Row{"LastCallStillOpenOneMillisecondBeforeItsDeadline",
            [](auto& t) {
              t.settings.heartbeat_timeout_ms = 3'600'000;  // only the last call matters here
              t.ConnectJoin(1);
              t.ConnectJoin(2);
              ASSERT_TRUE(t.state.last_call_deadline.has_value());
              EXPECT_EQ(*t.state.last_call_deadline, t.now + Millis(30'000));
              EXPECT_EQ(NextDeadline(t.state), t.state.last_call_deadline);
              t.Advance(29'999);
            },
            EvTick{}, {}, P::kJoining},
        Row{"LastCallClosesAtItsDeadline",
            [](auto& t) {
              t.settings.heartbeat_timeout_ms = 3'600'000;
              t.ConnectJoin(1);
              t.ConnectJoin(2);
              t.Advance(30'000);
            },
            EvTick{}, {{A::kRoundComplete, {1, 2}}}, P::kRunning},
        Row{"JoinTimeoutBelowMinIsFatalForEveryone",
            [](auto& t) {
              t.settings.heartbeat_timeout_ms = 3'600'000;
              t.ConnectJoin(1);
              t.Connect(2);  // connected, never joined
              t.Advance(600'000);
            },
            EvTick{}, {{A::kFatal, {1, 2}}}, P::kClosed},
        Row{"LateJoinerAtMaxStaysOnTheWaitList",
            [](auto& t) {
              t.RunRound(3);
              t.Connect(4);
            },
            EvJoin{4, 2}, {{A::kStandBy, {4}}}, P::kRunning,
            [](const auto& t, const auto&) { EXPECT_EQ(t.state.wait_list, (std::vector<NodeId>{4})); }},
        Row{"JoinAfterTheJobEndedIsFatalForTheNewcomer",
            [](auto& t) {
              t.settings.max_restarts = 0;
              t.RunRound(2);
              t.Do(EvWorkerFailed{1, 0, WorkerFailure{}});
              t.Connect(9);
            },
            EvJoin{9, 2}, {{A::kFatal, {9}}}, P::kClosed},
        // -- losses --
        Row{"MemberLossRestartsSurvivorsAndCountsAgainstMaxRestarts", [](auto& t) { t.RunRound(3); },
            EvLeave{2, "connection closed"}, {{A::kRestartRequired, {1, 3}}}, P::kJoining,
            [](const auto& t, const auto&) { EXPECT_EQ(t.state.restarts_used, 1); }},
        // A strict majority of the round left below MIN: the job cannot go on in-job.
        Row{"MemberLossBelowMinIsFatalEverywhere",
            [](auto& t) {
              t.settings.min_nodes = 3;
              t.RunRound(3);
            },
            EvLeave{2, "connection closed"}, {{A::kFatal, {1, 3}}}, P::kClosed,
            [](const auto&, const auto& actions) {
              ASSERT_FALSE(actions.empty());
              EXPECT_NE(actions[0].message.find("below the minimum of 3"), std::string::npos)
                  << actions[0].message;
            }},
        // Alone of the round's 3 (or 1 of 2): maybe the cut-off side. It never acts for
        // the job (too_few_nodes may requeue it): it waits out join_timeout (no_majority).
        Row{"LossWhileRejoiningToAMinorityWaits",
            [](auto& t) {
              t.RunRound(3);
              t.Do(EvLeave{1, "connection closed"});
            },
            EvLeave{2, "connection closed"}, {}, P::kJoining},
        Row{"LossOfOneOfTwoWaits",
            [](auto& t) {
              t.settings.expected_nodes = 2;
              t.ConnectJoin(1);
              t.ConnectJoin(2);
            },
            EvLeave{2, "connection closed"}, {{A::kRestartRequired, {1}}}, P::kJoining},
        Row{"SilentNodeIsDisconnectedAfterHeartbeatTimeout",
            [](auto& t) {
              t.RunRound(3);
              t.Advance(5'000);
              t.Do(EvHeartbeat{1});
              t.Do(EvHeartbeat{3});
              t.Advance(5'000);
            },
            EvTick{}, {{A::kDisconnect, {2}}, {A::kRestartRequired, {1, 3}}}, P::kJoining},
        Row{"LocalNodeNeverTimesOut",
            [](auto& t) {
              LocalAndRemoteRunning(t);
              t.Advance(60'000);
              t.Do(EvHeartbeat{2});
            },
            EvTick{}, {}, P::kRunning},
        Row{"HostFailureIsFatalForEveryNodeAndNamesTheCause", [](auto& t) { t.RunRound(3); },
            EvHostFailure{"cannot open the workers' store of round 1: EMFILE"}, {{A::kFatal, {1, 2, 3}}},
            P::kClosed,
            [](const auto&, const auto& actions) {
              for (const auto& a : actions)
                EXPECT_EQ(a.message, "cannot open the workers' store of round 1: EMFILE");
            }},
        Row{"HostFailureIsFatalOnlyOnce",
            [](auto& t) {
              t.RunRound(3);
              t.Do(EvHostFailure{"cannot open the workers' store of round 1: EMFILE"});
            },
            EvHostFailure{"again"}, {}, P::kClosed},
        // -- worker failures --
        Row{"WorkerFailureRestartsEveryOtherNode", [](auto& t) { t.RunRound(3); },
            EvWorkerFailed{2, 0, Failure(3)},
            // The reporting node already stops its workers and rejoins by itself.
            {{A::kRestartRequired, {1, 3}}}, P::kJoining,
            [](const auto& t, const auto&) {
              EXPECT_EQ(t.state.restarts_used, 1);
              EXPECT_EQ(t.state.pending_rejoin.size(), 3u);
            }},
        Row{"WorkerFailureOverBudgetFailsTheJobEverywhere",
            [](auto& t) {
              t.settings.max_restarts = 0;
              t.RunRound(3);
            },
            EvWorkerFailed{3, 0, Failure(5, 7)}, {{A::kJobFailed, {1, 2, 3}}}, P::kClosed,
            [](const auto&, const auto& actions) {
              ASSERT_FALSE(actions.empty());
              EXPECT_EQ(actions[0].failure.global_rank, 5);
            }},
        Row{"StaleFailureOfAnEarlierRoundIsIgnored",
            [](auto& t) {
              t.RunRound(3);
              t.Do(EvWorkerFailed{1, 0, WorkerFailure{}});
            },
            EvWorkerFailed{2, 0, WorkerFailure{}}, {}, P::kJoining,
            [](const auto& t, const auto&) { EXPECT_EQ(t.state.restarts_used, 1); }},
        Row{"FailureAfterOthersFinishedFailsTheJob",
            [](auto& t) {
              t.RunRound(3);
              t.Do(EvSucceeded{1, 0});
            },
            EvWorkerFailed{2, 0, WorkerFailure{}}, {{A::kJobFailed, {1, 2, 3}}}, P::kClosed},
        // -- a node ends the job: its crash loop --
        Row{"CrashLoopEndsTheJobForEveryNodeWithRestartsLeft",
            [](auto& t) {
              t.RunRound(3);
              t.Do(EvWorkerFailed{2, 0, Failure(3)});  // restarting: round 1 forms
            },
            EvEndJob{2, EndReason::kCrashLoop, Failure(3), "crash loop"}, {{A::kJobFailed, {1, 2, 3}}},
            P::kClosed,
            [](const auto& t, const auto& actions) {
              EXPECT_EQ(t.state.restarts_used, 1);  // of 3: the budget does not matter
              for (const auto& a : actions) {
                EXPECT_EQ(a.end_reason, EndReason::kCrashLoop);
                EXPECT_EQ(a.failure.global_rank, 3);
                EXPECT_EQ(a.message, "crash loop");
              }
            }},
        Row{"CrashLoopOfANodeWithoutAFailureNamesTheLastOneCounted",
            [](auto& t) {
              t.RunRound(3);
              t.Do(EvWorkerFailed{3, 0, Failure(5, 7)});
            },
            EvEndJob{1, EndReason::kCrashLoop, WorkerFailure{}, "crash loop"}, {{A::kJobFailed, {1, 2, 3}}},
            P::kClosed,
            [](const auto&, const auto& actions) {
              for (const auto& a : actions) EXPECT_EQ(a.failure.global_rank, 5);
            }},
        Row{"EndJobOfAnUnknownNodeIsIgnored", [](auto& t) { t.RunRound(3); },
            EvEndJob{9, EndReason::kCrashLoop, Failure(1), "crash loop"}, {}, P::kRunning},
        Row{"EndJobAfterTheEndChangesNothing",
            [](auto& t) {
              t.RunRound(3);
              t.Do(EvHostFailure{"EMFILE"});
            },
            EvEndJob{2, EndReason::kCrashLoop, Failure(1), "crash loop"}, {}, P::kClosed},
        // -- the end --
        Row{"RemoteSuccessIsAcknowledged", LocalAndRemoteRunning,
            EvSucceeded{2, 0}, {{A::kDone, {2}}}, P::kFinishing},
        Row{"DoneComesWhenAllSucceeded",
            [](auto& t) {
              LocalAndRemoteRunning(t);
              t.Do(EvSucceeded{2, 0});
            },
            EvSucceeded{1, 0}, {{A::kDone, {1, 2}}}, P::kClosed},
        Row{"FinishedNodeLeavingDoesNotRestartTheRound",
            [](auto& t) {
              t.RunRound(3);
              t.Do(EvSucceeded{2, 0});
            },
            EvLeave{2, "exited"}, {}, P::kFinishing},
        Row{"AfterAFinishedNodeLeftTheLastSuccessEndsTheJob",
            [](auto& t) {
              t.RunRound(3);
              t.Do(EvSucceeded{2, 0});
              t.Do(EvLeave{2, "exited"});
              t.Do(EvSucceeded{1, 0});
            },
            EvSucceeded{3, 0}, {{A::kDone, {1, 3}}}, P::kClosed},
        // -- a success crossing the stop of its round (late_success.h): the host's own
        // workers finish just after it asked every node to rejoin for node 2's failure.
        // Before, the round waited for the host until join_timeout (600 s); now the job
        // ends on the spot (the clock does not move), the restart not counted.
        Row{"HostsOwnSuccessCrossingARestartEndsTheJobAtOnce",
            [](auto& t) {
              t.settings.max_restarts = 2;
              LocalAndRemoteRunning(t);
              t.Do(EvWorkerFailed{2, 0, Failure(2, 3)});  // round 1 forms
              t.Do(EvJoin{2, 2, 0});                       // node 2 is back, the host is not
            },
            EvSucceeded{1, 0}, {{A::kJobFailed, {1, 2}}}, P::kClosed,
            [](const auto& t, const auto& actions) {
              EXPECT_EQ(t.state.restarts_used, 0);
              for (const auto& a : actions) {
                EXPECT_EQ(a.end_reason, EndReason::kWorkerFailed);
                EXPECT_EQ(a.failure.global_rank, 2);
                EXPECT_EQ(a.round.restarts_used, 0);
                EXPECT_EQ(a.message, "worker 2 (local rank -1) on n2 failed as node n1 had finished "
                                     "(its workers all exited 0); a restart would need its workers again");
              }
              EXPECT_FALSE(NextDeadline(t.state).has_value());
            }},
        Row{"RemoteSuccessCrossingARestartEndsTheJob",
            [](auto& t) {
              t.settings.max_restarts = 2;
              t.RunRound(3);
              t.Do(EvWorkerFailed{1, 0, Failure(0, 3)});
            },
            EvSucceeded{3, 0}, {{A::kJobFailed, {1, 2, 3}}}, P::kClosed,
            [](const auto& t, const auto&) { EXPECT_EQ(t.state.restarts_used, 0); }},
        Row{"SuccessCrossingANodeLossEndsTheJobAsNodesLost",
            [](auto& t) {
              t.settings.max_restarts = 2;
              t.RunRound(3);
              t.Do(EvLeave{1, "connection closed"});
            },
            EvSucceeded{3, 0}, {{A::kFatal, {2, 3}}}, P::kClosed,
            [](const auto& t, const auto& actions) {
              EXPECT_EQ(t.state.restarts_used, 0);
              for (const auto& a : actions) EXPECT_EQ(a.end_reason, EndReason::kNodesLost);
            }},
        Row{"SuccessOfTheStoppedRoundFromANodeThatRejoinedIsIgnored",
            [](auto& t) {
              t.settings.max_restarts = 2;
              t.RunRound(3);
              t.Do(EvWorkerFailed{1, 0, Failure(0, 3)});
              t.Do(EvJoin{3, 2, 0});
            },
            EvSucceeded{3, 0}, {}, P::kJoining,
            [](const auto& t, const auto&) { EXPECT_EQ(t.state.restarts_used, 1); }},
        Row{"FailureAfterAFinishedNodeNamesItInTheMessage",
            [](auto& t) {
              t.settings.max_restarts = 2;
              t.RunRound(3);
              t.Do(EvSucceeded{1, 0});
            },
            EvWorkerFailed{2, 0, Failure(2, 3)}, {{A::kJobFailed, {1, 2, 3}}}, P::kClosed,
            [](const auto&, const auto& actions) {
              for (const auto& a : actions)
                EXPECT_EQ(a.message, "worker 2 (local rank -1) on n2 failed after node n1 had finished "
                                     "(its workers all exited 0); a restart would need its workers again");
            }}));

}  // namespace
}  // namespace elastic
