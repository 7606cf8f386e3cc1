// The supervision state machine as a table, with a fake clock (the rows' helpers:
// testing/worker_state_test_util.h; the resilience rows and the fake-runner scenarios are
// worker_state_resilience_test.cc and worker_state_scenario_test.cc).
#include "testing/worker_state_test_util.h"

namespace elastic {
namespace {

using namespace worker_state_testing;  // NOLINT(google-build-using-namespace): the table's vocabulary

TEST_P(TransitionTable, Step) {
  const Row& row = GetParam();
  Transition t = StepWorkers(row.before, row.event, kT0, row.settings);
  EXPECT_EQ(WorkerStateName(t.status.state), std::string(WorkerStateName(row.after)));
  EXPECT_EQ(Kinds(t), row.actions);
  if (row.exit_code >= 0) {
    ASSERT_FALSE(t.actions.empty());
    EXPECT_EQ(t.actions.back().kind, K::kExit);
    EXPECT_EQ(t.actions.back().exit_code, row.exit_code);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Supervision, TransitionTable,
    ::testing::Values(
        Row{"InitRoundStarts", Status(S::kInit, 2, 0), Simple(E::kRoundReady), S::kHealthy,
            {K::kStartWorkers}},
        Row{"InitTerminateExits", Status(S::kInit, 2, 0), Simple(E::kTerminate, SIGTERM), S::kStopped,
            {K::kShutdownRendezvous, K::kExit}, 143},
        Row{"HealthyOneSucceedsOthersRun", Status(S::kHealthy, 2, 2), Exited(0), S::kHealthy, {}},
        Row{"HealthyLastSucceeds", Status(S::kHealthy, 2, 1), Exited(0), S::kSucceeded,
            {K::kEndAttempt, K::kReportSucceeded}},
        Row{"HealthyFailureStopsGroup", Status(S::kHealthy, 2, 2), Exited(1), S::kUnhealthy,
            {K::kReportFailure, K::kSignalWorkers, K::kArmStopTimer}},
        Row{"HealthyOnlyWorkerFailsRejoins", Status(S::kHealthy, 1, 1), Exited(0, SIGKILL),
            S::kInit, {K::kReportFailure, K::kSignalWorkers, K::kArmStopTimer, K::kEndAttempt, K::kJoin}},
        Row{"HealthyRestartRequiredStops", Status(S::kHealthy, 2, 2), Simple(E::kRestartRequired),
            S::kUnhealthy, {K::kSignalWorkers, K::kArmStopTimer}},
        Row{"HealthyTerminateForwardsAndStops", Status(S::kHealthy, 2, 2), Simple(E::kTerminate, SIGINT),
            S::kUnhealthy, {K::kShutdownRendezvous, K::kSignalWorkers, K::kArmStopTimer}},
        Row{"HealthyForwardUsr1", Status(S::kHealthy, 2, 2), Simple(E::kForward, SIGUSR1), S::kHealthy,
            {K::kSignalWorkers}},
        Row{"UnhealthyWorkerExitsOthersLeft", Status(S::kUnhealthy, 3, 2, AfterStop::kRejoin), Exited(143),
            S::kUnhealthy, {}},
        Row{"UnhealthyLastExitRejoins", Status(S::kUnhealthy, 3, 1, AfterStop::kRejoin), Exited(0, SIGTERM),
            S::kInit, {K::kEndAttempt, K::kJoin}},
        Row{"UnhealthyTimeoutKills", Status(S::kUnhealthy, 2, 1, AfterStop::kRejoin), Simple(E::kStopTimeout),
            S::kUnhealthy, {K::kSignalWorkers, K::kArmStopTimer}},
        // Workers a SIGKILL could not end (stuck_worker.h): this node leaves with notice.
        Row{"UnhealthyStuckLeaves", Status(S::kUnhealthy, 2, 1, AfterStop::kRejoin), Simple(E::kWorkersStuck),
            S::kFailed, {K::kShutdownRendezvous, K::kExit}, 4},
        Row{"UnhealthyStuckBeforeAnyVerdictLeaves", Status(S::kUnhealthy, 2, 2), Simple(E::kWorkersStuck),
            S::kFailed, {K::kShutdownRendezvous, K::kExit}, 4},
        Row{"UnhealthyStuckJobFailedKeepsItsCode", Status(S::kUnhealthy, 2, 1, AfterStop::kFail),
            Simple(E::kWorkersStuck), S::kFailed, {K::kShutdownRendezvous, K::kExit}, 1},
        Row{"UnhealthyStuckOnSignalKeeps128PlusSig",
            [] { GroupStatus s = Status(S::kUnhealthy, 2, 1, AfterStop::kExitSignal); s.exit_signal = SIGTERM;
                 return s; }(),
            Simple(E::kWorkersStuck), S::kStopped, {K::kShutdownRendezvous, K::kExit}, 143},
        Row{"StuckAfterTheLastExitIsStale", Status(S::kInit, 2, 0), Simple(E::kWorkersStuck), S::kInit, {}},
        Row{"StuckWhileHealthyIsStale", Status(S::kHealthy, 2, 2), Simple(E::kWorkersStuck), S::kHealthy, {}},
        Row{"UnhealthyJobFailedWhileStopping", Status(S::kUnhealthy, 2, 1, AfterStop::kRejoin),
            Event{E::kJobFailed, 0, Exit(3), {}}, S::kUnhealthy, {}},
        Row{"InitRestartRequiredAlreadyRejoining", Status(S::kInit, 2, 0), Simple(E::kRestartRequired),
            S::kInit, {}},
        // Restarts used up: 1 (kExitJobFailed), whatever the worker's code or signal.
        Row{"InitJobFailedExits1", Status(S::kInit, 2, 0), Event{E::kJobFailed, 0, Exit(3), {}},
            S::kFailed, {K::kExit}, 1},
        Row{"InitJobFailedBySignalExits1", Status(S::kInit, 2, 0), Event{E::kJobFailed, 0, Exit(0, SIGSEGV), {}},
            S::kFailed, {K::kExit}, 1},
        Row{"InitFatalExits1", Status(S::kInit, 2, 0), Event{E::kFatal, 0, {}, "lost the store"},
            S::kFailed, {K::kExit}, 1},
        // The exit code is the reason's (exit_codes.h), whatever the text says.
        Row{"InitFatalTooFewNodesExits3", Status(S::kInit, 2, 0),
            Event{E::kFatal, 0, {}, "node n2 left", {EndReason::kTooFewNodes, false}},
            S::kFailed, {K::kExit}, 3},
        // Below MIN because signals stopped the other nodes: Slurm ends the job, never 3.
        Row{"InitFatalStoppedBySignalsExits1", Status(S::kInit, 2, 0),
            Event{E::kFatal, 0, {}, "node n2 left with notice", {EndReason::kStopped, true}},
            S::kFailed, {K::kExit}, 1},
        Row{"InitFatalBelowMinTextWithoutReasonExits1", Status(S::kInit, 2, 0),
            Event{E::kFatal, 0, {}, "1 node(s) left, below the minimum of 2 (--nnodes)"},
            S::kFailed, {K::kExit}, 1},
        Row{"InitFatalBadInputExits2", Status(S::kInit, 2, 0),
            Event{E::kFatal, 0, {}, "runs 'a', not 'b'", {EndReason::kBadInput, false}},
            S::kFailed, {K::kExit}, 2},
        Row{"InitJobFailedByNodeLossExits3", Status(S::kInit, 2, 0),
            Event{E::kJobFailed, 0, Exit(0), {}, {EndReason::kNodesLost, false}},
            S::kFailed, {K::kExit}, 3},
        Row{"StoppedAfterSignalIgnoresRestart", Status(S::kStopped, 2, 0), Simple(E::kRestartRequired),
            S::kStopped, {}},
        Row{"SucceededDoneExits0", Status(S::kSucceeded, 2, 0), Simple(E::kDone), S::kSucceeded, {K::kExit}, 0},
        Row{"SucceededIgnoresRestart", Status(S::kSucceeded, 2, 0), Simple(E::kRestartRequired),
            S::kSucceeded, {}},
        // The host's own agent on the wait list when the running round finished.
        Row{"InitDoneExits0", Status(S::kInit, 2, 0), Simple(E::kDone), S::kSucceeded, {K::kExit}, 0},
        Row{"HealthyIgnoresDone", Status(S::kHealthy, 2, 2), Simple(E::kDone), S::kHealthy, {}}),
    [](const ::testing::TestParamInfo<Row>& info) { return std::string(info.param.name); });

// A fatal end while the group stops after a job failure is the stronger verdict:
// its reason, not the job failure's, gives the exit code.
TEST(WorkerStateTest, FatalWhileStoppingAfterJobFailedExitsWithTheFatalReason) {
  GroupStatus s = Status(S::kHealthy, 2, 1);
  s = StepWorkers(s, Event{E::kJobFailed, 0, Exit(1), {}, {EndReason::kWorkerFailed, false}}, kT0,
                  Settings(kGrace)).status;
  s = StepWorkers(s, Event{E::kFatal, 0, {}, "no strict majority", {EndReason::kNoMajority, false}},
                  kT0, Settings(kGrace)).status;
  Transition t = StepWorkers(s, Exited(0, SIGTERM), kT0, Settings(kGrace));
  ASSERT_FALSE(t.actions.empty());
  EXPECT_EQ(t.actions.back().kind, K::kExit);
  EXPECT_EQ(t.actions.back().exit_code, 3);
}

// The leave tells the host which signal stops this agent (scancel, a time limit reach the
// nodes one by one: the host must not read the others' leaving as lost nodes to requeue for);
// workers that cannot be killed are the node's own reason (0).
TEST(WorkerStateTest, TheLeaveCarriesTheSignalThatStopsTheAgent) {
  struct Case {
    const char* name;
    GroupStatus before;
    Event event;
    int signal;
  };
  GroupStatus stuck_on_signal = Status(S::kUnhealthy, 2, 1, AfterStop::kExitSignal);
  stuck_on_signal.exit_signal = SIGINT;
  GroupStatus crash_loop_sent = Status(S::kInit, 2, 0);
  crash_loop_sent.ending_here = EndReason::kCrashLoop;
  GroupStatus failing_check = Status(S::kInit, 2, 0);
  failing_check.health_failing_since = kT0 - Millis(600000);
  Event failing_check_event{E::kHealthChecked};  // passed: false
  const Case cases[] = {
      {"waiting for a round", Status(S::kInit, 2, 0), Simple(E::kTerminate, SIGTERM), SIGTERM},
      {"training", Status(S::kHealthy, 2, 2), Simple(E::kTerminate, SIGINT), SIGINT},
      {"done, waiting for the others", Status(S::kSucceeded, 2, 0), Simple(E::kTerminate, SIGTERM), SIGTERM},
      {"stuck workers, no signal", Status(S::kUnhealthy, 2, 1, AfterStop::kRejoin), Simple(E::kWorkersStuck), 0},
      {"stuck workers after a signal", stuck_on_signal, Simple(E::kWorkersStuck), SIGINT},
      {"a crash loop the host did not end", crash_loop_sent, Simple(E::kEndJobUnanswered), 0},
      {"a health check that kept failing", failing_check, failing_check_event, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Transition t = StepWorkers(c.before, c.event, kT0, Settings(kGrace));
    ASSERT_FALSE(t.actions.empty());
    EXPECT_EQ(t.actions.front().kind, K::kShutdownRendezvous);
    EXPECT_EQ(t.actions.front().signal, c.signal);
  }
}

TEST(WorkerStateTest, StopTimeoutBeforeDeadlineDoesNothing) {
  GroupStatus s = Status(S::kUnhealthy, 2, 2, AfterStop::kRejoin);
  s.kill_at = kT0 + Millis(5000);
  EXPECT_TRUE(StepWorkers(s, Simple(E::kStopTimeout), kT0 + Millis(4999), Settings(kGrace)).actions.empty());
  Transition t = StepWorkers(s, Simple(E::kStopTimeout), kT0 + Millis(5000), Settings(kGrace));
  ASSERT_EQ(Kinds(t), (std::vector<K>{K::kSignalWorkers, K::kArmStopTimer}));
  EXPECT_EQ(t.actions[0].signal, SIGKILL);
  // SIGKILL goes out once.
  EXPECT_TRUE(StepWorkers(t.status, Simple(E::kStopTimeout), kT0 + Millis(9000), Settings(kGrace)).actions.empty());
}

// --uninterruptible-timeout after SIGKILL, /proc is read once (CheckKill); before
// that, and after, a stop timer does nothing; a group whose workers all exited has
// nothing to check.
TEST(WorkerStateTest, KillIsCheckedOnceUninterruptibleTimeoutAfterSigkill) {
  const Millis stuck(2000);
  GroupStatus s = Status(S::kUnhealthy, 2, 2, AfterStop::kRejoin);
  s.kill_at = kT0 + Millis(1000);
  Transition kill = StepWorkers(s, Simple(E::kStopTimeout), kT0 + Millis(1000), Settings(kGrace, stuck));
  ASSERT_EQ(Kinds(kill), (std::vector<K>{K::kSignalWorkers, K::kArmStopTimer}));
  EXPECT_EQ(kill.actions[1].deadline, kT0 + Millis(3000));
  EXPECT_TRUE(StepWorkers(kill.status, Simple(E::kStopTimeout), kT0 + Millis(2999), Settings(kGrace, stuck)).actions.empty());
  Transition check = StepWorkers(kill.status, Simple(E::kStopTimeout), kT0 + Millis(3000), Settings(kGrace, stuck));
  EXPECT_EQ(Kinds(check), std::vector<K>{K::kCheckKill});
  EXPECT_TRUE(StepWorkers(check.status, Simple(E::kStopTimeout), kT0 + Millis(9000), Settings(kGrace, stuck)).actions.empty());
  GroupStatus gone = kill.status;
  gone.alive = 0;
  EXPECT_TRUE(StepWorkers(gone, Simple(E::kStopTimeout), kT0 + Millis(3000), Settings(kGrace, stuck)).actions.empty());
  // A new stop (the next round's) checks again.
  Transition again = StepWorkers(Status(S::kHealthy, 2, 2), Exited(1), kT0, Settings(kGrace, stuck));
  EXPECT_FALSE(again.status.kill_checked);
}

TEST(WorkerStateTest, StopTimerDeadlineIsNowPlusGrace) {
  Transition t = StepWorkers(Status(S::kHealthy, 2, 2), Exited(1), kT0 + Millis(700), Settings(Millis(2500)));
  ASSERT_EQ(t.actions[2].kind, K::kArmStopTimer);
  EXPECT_EQ(t.actions[2].deadline, kT0 + Millis(3200));
  EXPECT_EQ(t.actions[1].signal, SIGTERM);
}

TEST(WorkerStateTest, FirstFailureIsKept) {
  GroupStatus s = Status(S::kHealthy, 3, 3);
  WorkerFailure first = Exit(7);
  first.global_rank = 2;
  s = StepWorkers(s, Event{E::kWorkerExited, 0, first, {}}, kT0, Settings(kGrace)).status;
  s = StepWorkers(s, Exited(0, SIGTERM), kT0, Settings(kGrace)).status;
  EXPECT_EQ(s.failure.global_rank, 2);
  EXPECT_EQ(s.failure.exit_code, 7);
}

TEST(WorkerStateTest, SignalOverridesRejoinWhileStopping) {
  GroupStatus s = Status(S::kUnhealthy, 2, 1, AfterStop::kRejoin);
  s = StepWorkers(s, Simple(E::kTerminate, SIGTERM), kT0, Settings(kGrace)).status;
  Transition t = StepWorkers(s, Exited(0, SIGTERM), kT0, Settings(kGrace));
  EXPECT_EQ(Kinds(t), (std::vector<K>{K::kEndAttempt, K::kExit}));
  EXPECT_EQ(t.actions.back().exit_code, 128 + SIGTERM);
}

TEST(WorkerStateTest, NothingAfterExit) {
  GroupStatus s = Status(S::kSucceeded, 1, 0);
  s = StepWorkers(s, Simple(E::kDone), kT0, Settings(kGrace)).status;
  EXPECT_TRUE(StepWorkers(s, Simple(E::kTerminate, SIGTERM), kT0, Settings(kGrace)).actions.empty());
}

TEST(WorkerStateTest, FailureExitCodes) {
  EXPECT_EQ(FailureExitCode(Exit(3)), 3);
  EXPECT_EQ(FailureExitCode(Exit(0, SIGKILL)), 137);
  EXPECT_EQ(FailureExitCode(Exit(0)), 1);  // a failure reported without a code
}

}  // namespace
}  // namespace elastic
