// The supervision state machine as a table, with a fake clock, plus scenarios
// driven through a fake process runner that carries out the actions.
#include "launcher/worker_state.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

namespace elastic {
namespace {

using K = ActionKind;
const Millis kGrace(30000);
const MonoClock::time_point kT0{};  // the fake clock's origin

// The agent's defaults (AgentSettings), with `grace` and `stuck` as given.
SupervisionSettings Settings(Millis grace, Millis stuck = Millis(60000)) {
  SupervisionSettings s;
  s.shutdown_timeout = grace;
  s.uninterruptible_timeout = stuck;
  s.max_restarts = 3;
  s.crash_loop = CrashLoopSettings{3, Millis(60000)};
  s.crash_loop_answer_timeout = Millis(10000);
  s.progress_file = false;
  s.no_progress_restarts = 3;
  s.health_check_recheck = Millis(10000);
  s.health_check_give_up = Millis(600000);
  s.max_requeues = 0;
  return s;
}

WorkerFailure Exit(int code, int sig = 0) {
  WorkerFailure f;
  f.exit_code = code;
  f.signal = sig;
  return f;
}
Event Exited(int code, int sig = 0) { return Event{EventKind::kWorkerExited, 0, Exit(code, sig), {}}; }
Event Simple(EventKind kind, int sig = 0) { return Event{kind, sig, {}, {}}; }

GroupStatus Status(WorkerState state, int nproc, int alive, AfterStop after = AfterStop::kNone) {
  GroupStatus s;
  s.state = state;
  s.nproc = nproc;
  s.alive = alive;
  s.after_stop = after;
  s.kill_at = kT0;  // rows run at kT0: a running stop is past its grace period
  return s;
}

std::vector<K> Kinds(const Transition& t) {
  std::vector<K> kinds;
  for (const Action& a : t.actions) kinds.push_back(a.kind);
  return kinds;
}

struct Row {
  const char* name;
  GroupStatus before;
  Event event;
  WorkerState after;
  std::vector<K> actions;
  int exit_code = -1;  // checked when >= 0
  SupervisionSettings settings = Settings(kGrace);
};

// ctest lists a row by its name, not as a byte dump.
void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class TransitionTable : public ::testing::TestWithParam<Row> {};

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

using S = WorkerState;
using E = EventKind;
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

// The resilience rules (crash loops, no progress, health checks, hung workers,
// --requeue): rows of the same table.
GroupStatus WithFailure(GroupStatus s) {
  s.has_failure = true;
  s.failure = Exit(1);
  return s;
}
// A group stopping after a failure 1 s after its start (inside the crash-loop window),
// `quick` such rounds before it.
GroupStatus QuickFailure(int quick, bool here = true) {
  GroupStatus s = Status(S::kUnhealthy, 2, 1, AfterStop::kRejoin);
  if (here) s = WithFailure(s);
  s.started_at = kT0 - Millis(2000);
  s.first_failure_at = kT0 - Millis(1000);
  s.crash_loop.quick_failures = quick;
  return s;
}
GroupStatus InitWith(auto&& change) {
  GroupStatus s = Status(S::kInit, 2, 0);
  change(s);
  return s;
}
Event Health(bool passed) {
  Event e{E::kHealthChecked};
  e.passed = passed;
  return e;
}
Event Progress(std::optional<int64_t> value) {
  Event e{E::kProgressRead};
  e.progress = value;
  return e;
}
Event Hung(int local_rank, int sig) {
  Event e{E::kWorkerHung, sig};
  e.local_rank = local_rank;
  return e;
}
SupervisionSettings With(auto&& change) {
  SupervisionSettings s = Settings(kGrace);
  change(s);
  return s;
}
const SupervisionSettings kProgressFile = With([](SupervisionSettings& s) { s.progress_file = true; });
const SupervisionSettings kRequeue1 = With([](SupervisionSettings& s) { s.max_requeues = 1; });

INSTANTIATE_TEST_SUITE_P(
    Resilience, TransitionTable,
    ::testing::Values(
        // Crash loops (crash_loop.h): the third quick failed round in a row ends the job.
        Row{"ThirdQuickFailureEndsTheJob", QuickFailure(2), Exited(143), S::kInit,
            {K::kEndAttempt, K::kEndJob}},
        Row{"SecondQuickFailureRejoins", QuickFailure(1), Exited(143), S::kInit, {K::kEndAttempt, K::kJoin}},
        Row{"QuickFailureElsewhereCounts",
            [] { GroupStatus s = QuickFailure(2, false); s.restart_cause = RestartCause::kWorkerFailure;
                 return s; }(),
            Exited(143), S::kInit, {K::kEndAttempt, K::kEndJob}},
        Row{"ChurnNeverMakesACrashLoop", QuickFailure(2, false), Exited(143), S::kInit,
            {K::kEndAttempt, K::kJoin}},
        Row{"SlowFailureRejoins",
            [] { GroupStatus s = QuickFailure(2); s.started_at = kT0 - Millis(70000); return s; }(),
            Exited(143), S::kInit, {K::kEndAttempt, K::kJoin}},
        // The last restart used up: the rendezvous ends the job (restarts exhausted) instead.
        Row{"CrashLoopWithRestartsUsedUpRejoins",
            [] { GroupStatus s = QuickFailure(2); s.restarts_used = 3; return s; }(),
            Exited(143), S::kInit, {K::kEndAttempt, K::kJoin}},
        // One worker per node: its failure stops the group at once; its uptime is still
        // start to failure (70 s: no quick failure), not a stale time (every one quick).
        Row{"OnlyWorkerFailingLateIsNoQuickFailure",
            [] { GroupStatus s = Status(S::kHealthy, 1, 1); s.started_at = kT0 - Millis(70000);
                 s.crash_loop.quick_failures = 2; return s; }(),
            Exited(1), S::kInit, {K::kReportFailure, K::kSignalWorkers, K::kArmStopTimer, K::kEndAttempt, K::kJoin}},
        Row{"OnlyWorkerFailingQuicklyEndsTheJob",
            [] { GroupStatus s = Status(S::kHealthy, 1, 1); s.started_at = kT0 - Millis(1000);
                 s.crash_loop.quick_failures = 2; return s; }(),
            Exited(1), S::kInit,
            {K::kReportFailure, K::kSignalWorkers, K::kArmStopTimer, K::kEndAttempt, K::kEndJob}},
        Row{"CrashLoopCountZeroNeverEnds", QuickFailure(5), Exited(143), S::kInit, {K::kEndAttempt, K::kJoin}, -1,
            With([](SupervisionSettings& s) { s.crash_loop.count = 0; })},
        // No progress (no_progress.h): group rank 0 reads --progress-file before the join.
        Row{"Rank0ReadsProgressBeforeRejoin", QuickFailure(0), Exited(143), S::kInit,
            {K::kEndAttempt, K::kReadProgress}, -1, kProgressFile},
        Row{"OtherRanksRejoinWithoutReading",
            [] { GroupStatus s = QuickFailure(0); s.group_rank = 1; return s; }(),
            Exited(143), S::kInit, {K::kEndAttempt, K::kJoin}, -1, kProgressFile},
        Row{"ChurnReadsNoProgress", QuickFailure(0, false), Exited(143), S::kInit, {K::kEndAttempt, K::kJoin}, -1,
            kProgressFile},
        Row{"NoProgressRestartsZeroReadsNothing", QuickFailure(0), Exited(143), S::kInit,
            {K::kEndAttempt, K::kJoin}, -1,
            With([](SupervisionSettings& s) { s.progress_file = true; s.no_progress_restarts = 0; })},
        Row{"CrashLoopComesBeforeTheProgressRead", QuickFailure(2), Exited(143), S::kInit,
            {K::kEndAttempt, K::kEndJob}, -1, kProgressFile},
        Row{"ProgressGrewRejoins", InitWith([](GroupStatus& s) { s.no_progress.best = 4; s.no_progress.stalled = 2; }),
            Progress(5), S::kInit, {K::kJoin}},
        Row{"ThirdRoundWithoutProgressEndsTheJob",
            InitWith([](GroupStatus& s) { s.no_progress.best = 5; s.no_progress.stalled = 2; }), Progress(5),
            S::kInit, {K::kEndJob}},
        Row{"UnknownProgressCountsAsNone",
            InitWith([](GroupStatus& s) { s.no_progress.best = 5; s.no_progress.stalled = 2; }),
            Progress(std::nullopt), S::kInit, {K::kEndJob}},
        Row{"ProgressReadWhileHealthyIsStale", Status(S::kHealthy, 2, 2), Progress(5), S::kHealthy, {}},
        // The host did not end the job it was asked to end: this node ends it (2, 5).
        Row{"CrashLoopUnansweredEndsHereWith2",
            InitWith([](GroupStatus& s) { s.ending_here = EndReason::kCrashLoop; }), Simple(E::kEndJobUnanswered),
            S::kFailed, {K::kShutdownRendezvous, K::kEndHere}},
        Row{"UnansweredWithoutEndJobIsStale", Status(S::kInit, 2, 0), Simple(E::kEndJobUnanswered), S::kInit, {}},
        // --health-check before a join.
        Row{"HealthPassedJoins", Status(S::kInit, 2, 0), Health(true), S::kInit, {K::kJoinRendezvous}},
        Row{"HealthFailedStaysOutAndRetries", Status(S::kInit, 2, 0), Health(false), S::kInit,
            {K::kRetryHealthCheck}},
        Row{"HealthFailingJustUnderGiveUpRetries",
            InitWith([](GroupStatus& s) { s.health_failing_since = kT0 - Millis(599999); }), Health(false),
            S::kInit, {K::kRetryHealthCheck}},
        Row{"HealthFailingForGiveUpLeaves",
            InitWith([](GroupStatus& s) { s.health_failing_since = kT0 - Millis(600000); }), Health(false),
            S::kFailed, {K::kShutdownRendezvous, K::kGiveUp}},
        Row{"HealthPassingAgainJoins",
            InitWith([](GroupStatus& s) { s.health_failing_since = kT0 - Millis(50000); }), Health(true),
            S::kInit, {K::kJoinRendezvous}},
        Row{"HealthVerdictWhileHealthyIsStale", Status(S::kHealthy, 2, 2), Health(false), S::kHealthy, {}},
        // A hung worker (hung_worker.h): its stacks while the group runs; nothing once it stops.
        Row{"HealthyHungWorkerStacks", Status(S::kHealthy, 2, 2), Hung(1, SIGKILL), S::kHealthy,
            {K::kCollectStacks}},
        Row{"HealthyHungWorkerWithoutSignalGoesOn", Status(S::kHealthy, 2, 2), Hung(1, 0), S::kHealthy,
            {K::kKeepHungWorker}},
        Row{"StoppingGroupIgnoresAHang", Status(S::kUnhealthy, 2, 2, AfterStop::kRejoin), Hung(1, SIGKILL),
            S::kUnhealthy, {}},
        Row{"InitIgnoresAHang", Status(S::kInit, 2, 0), Hung(0, SIGKILL), S::kInit, {}},
        // --requeue: asked for an end the rendezvous gave, never for a signal's or this node's own.
        Row{"JobFailedAsksRequeue", Status(S::kUnhealthy, 2, 1, AfterStop::kFail), Exited(143), S::kFailed,
            {K::kEndAttempt, K::kExit, K::kRequeue}, -1, kRequeue1},
        Row{"FatalAsksRequeue", Status(S::kInit, 2, 0),
            Event{E::kFatal, 0, {}, "too few nodes", {EndReason::kTooFewNodes, true}}, S::kFailed,
            {K::kExit, K::kRequeue}, -1, kRequeue1},
        Row{"RequeueOffAsksNothing", Status(S::kUnhealthy, 2, 1, AfterStop::kFail), Exited(143), S::kFailed,
            {K::kEndAttempt, K::kExit}, 1},
        Row{"SignalNeverAsksRequeue", Status(S::kInit, 2, 0), Simple(E::kTerminate, SIGTERM), S::kStopped,
            {K::kShutdownRendezvous, K::kExit}, 143, kRequeue1},
        Row{"StuckAfterJobFailedAsksRequeue", Status(S::kUnhealthy, 2, 1, AfterStop::kFail),
            Simple(E::kWorkersStuck), S::kFailed, {K::kShutdownRendezvous, K::kExit, K::kRequeue}, -1, kRequeue1},
        Row{"HealthGiveUpNeverAsksRequeue",
            InitWith([](GroupStatus& s) { s.health_failing_since = kT0 - Millis(600000); }), Health(false),
            S::kFailed, {K::kShutdownRendezvous, K::kGiveUp}, -1, kRequeue1}),
    [](const ::testing::TestParamInfo<Row>& info) { return std::string(info.param.name); });

// What the resilience actions carry: deadlines from the settings, the reason, the end.
TEST(WorkerStateResilience, EndJobIsAnsweredWithinTheAnswerTimeout) {
  SupervisionSettings settings = Settings(kGrace);
  settings.crash_loop_answer_timeout = Millis(7000);
  Transition t = StepWorkers(QuickFailure(2), Exited(143), kT0, settings);
  ASSERT_EQ(Kinds(t), (std::vector<K>{K::kEndAttempt, K::kEndJob}));
  EXPECT_EQ(t.actions[1].reason, EndReason::kCrashLoop);
  EXPECT_EQ(t.actions[1].deadline, kT0 + Millis(7000));
  EXPECT_EQ(t.status.ending_here, EndReason::kCrashLoop);
  Transition here = StepWorkers(t.status, Simple(E::kEndJobUnanswered), kT0 + Millis(7000), settings);
  ASSERT_EQ(Kinds(here), (std::vector<K>{K::kShutdownRendezvous, K::kEndHere}));
  EXPECT_EQ(here.actions[1].exit_code, 2);
  EXPECT_EQ(here.actions[1].reason, EndReason::kCrashLoop);
  EXPECT_TRUE(here.status.exited);
}

TEST(WorkerStateResilience, NoProgressEndHereExits5) {
  GroupStatus s = InitWith([](GroupStatus& g) { g.no_progress.best = 5; g.no_progress.stalled = 2; });
  Transition t = StepWorkers(s, Progress(5), kT0, Settings(kGrace));
  ASSERT_EQ(Kinds(t), std::vector<K>{K::kEndJob});
  EXPECT_EQ(t.actions[0].reason, EndReason::kNoProgress);
  Transition here = StepWorkers(t.status, Simple(E::kEndJobUnanswered), kT0, Settings(kGrace));
  EXPECT_EQ(here.actions.back().exit_code, 5);
  // The host answered first: its JobFailed ends the node; the timer finds nothing left.
  GroupStatus answered = StepWorkers(t.status, Event{E::kJobFailed, 0, Exit(1), {}, {EndReason::kNoProgress, false}},
                                     kT0, Settings(kGrace)).status;
  EXPECT_TRUE(StepWorkers(answered, Simple(E::kEndJobUnanswered), kT0, Settings(kGrace)).actions.empty());
}

TEST(WorkerStateResilience, HealthCheckRetriesAfterRecheckAndGivesUpAfterGiveUp) {
  SupervisionSettings settings = Settings(kGrace);
  settings.health_check_recheck = Millis(3000);
  settings.health_check_give_up = Millis(7000);
  GroupStatus s = Status(S::kInit, 2, 0);
  MonoClock::time_point now = kT0;
  for (int check = 0; check < 3; ++check, now += Millis(3000)) {  // at 0, 3 and 6 s: out, retry
    Transition t = StepWorkers(s, Health(false), now, settings);
    ASSERT_EQ(Kinds(t), std::vector<K>{K::kRetryHealthCheck}) << check;
    EXPECT_EQ(t.actions[0].deadline, now + Millis(3000));
    s = t.status;
  }
  EXPECT_EQ(s.health_failing_since, kT0);  // since the first failure
  Transition last = StepWorkers(s, Health(false), now, settings);  // 9 s >= 7 s
  ASSERT_EQ(Kinds(last), (std::vector<K>{K::kShutdownRendezvous, K::kGiveUp}));
  EXPECT_EQ(last.actions[1].exit_code, 1);
  // A pass in between starts the count again.
  GroupStatus passed = StepWorkers(s, Health(true), now, settings).status;
  EXPECT_FALSE(passed.health_failing_since.has_value());
  EXPECT_EQ(Kinds(StepWorkers(passed, Health(false), now, settings)), std::vector<K>{K::kRetryHealthCheck});
}

TEST(WorkerStateResilience, RequeueCarriesTheEndTheRendezvousGave) {
  JobEnd end{EndReason::kNodesLost, true};
  GroupStatus s = Status(S::kHealthy, 2, 2);
  s = StepWorkers(s, Event{E::kJobFailed, 0, Exit(1), {}, end}, kT0, kRequeue1).status;
  s = StepWorkers(s, Exited(143), kT0, kRequeue1).status;
  Transition t = StepWorkers(s, Exited(143), kT0, kRequeue1);
  ASSERT_EQ(Kinds(t), (std::vector<K>{K::kEndAttempt, K::kExit, K::kRequeue}));
  EXPECT_EQ(t.actions[1].exit_code, 3);
  EXPECT_EQ(t.actions[2].end.reason, EndReason::kNodesLost);
  EXPECT_TRUE(t.actions[2].end.acts_for_job);
}

TEST(WorkerStateResilience, HungWorkerActionNamesItsLocalRank) {
  Transition t = StepWorkers(Status(S::kHealthy, 4, 4), Hung(3, SIGTERM), kT0, Settings(kGrace));
  ASSERT_EQ(Kinds(t), std::vector<K>{K::kCollectStacks});
  EXPECT_EQ(t.actions[0].local_rank, 3);
}

// The crash-loop window counts from the workers' start (with --preload, once its
// interpreter is ready), not from the round: a slow import is no uptime.
TEST(WorkerStateResilience, CrashLoopUptimeCountsFromTheWorkersStart) {
  SupervisionSettings settings = Settings(kGrace);
  auto round = [&](MonoClock::time_point at, Millis import, Millis runs, GroupStatus s) {
    s = StepWorkers(s, Simple(E::kRoundReady), at, settings).status;
    s = StepWorkers(s, Simple(E::kWorkersStarted), at + import, settings).status;
    s = StepWorkers(s, Exited(1), at + import + runs, settings).status;
    return StepWorkers(s, Exited(143), at + import + runs, settings);
  };
  GroupStatus s = Status(S::kInit, 1, 0);
  s.nproc = 2;
  Transition t = round(kT0, Millis(90000), Millis(5000), s);  // 95 s after the round, 5 s up
  EXPECT_EQ(t.status.crash_loop.quick_failures, 1);
  t = round(kT0 + Millis(100000), Millis(0), Millis(5000), t.status);
  EXPECT_EQ(t.status.crash_loop.quick_failures, 2);
  EXPECT_EQ(Kinds(t).back(), K::kJoin);
  t = round(kT0 + Millis(200000), Millis(0), Millis(5000), t.status);
  EXPECT_EQ(Kinds(t).back(), K::kEndJob);
}

// The round's restarts and the restart's cause reach the rules through events.
TEST(WorkerStateResilience, RoundAndRestartCauseAreRecorded) {
  Event round{E::kRoundReady};
  round.restarts_used = 2;
  round.group_rank = 1;
  GroupStatus s = StepWorkers(Status(S::kInit, 2, 0), round, kT0, Settings(kGrace)).status;
  EXPECT_EQ(s.restarts_used, 2);
  EXPECT_EQ(s.group_rank, 1);
  Event restart{E::kRestartRequired};
  restart.cause = RestartCause::kWorkerFailure;
  s = StepWorkers(s, restart, kT0, Settings(kGrace)).status;
  EXPECT_EQ(s.restart_cause, RestartCause::kWorkerFailure);
  EXPECT_EQ(StepWorkers(s, round, kT0, Settings(kGrace)).status.restart_cause, RestartCause::kMembership);
}

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

// A fake process runner: carries out the actions on pretend workers, and a fake
// local rendezvous answers failures with restarts while the budget lasts.
class FakeRun {
 public:
  FakeRun(int nproc, int max_restarts) : max_restarts_(max_restarts) { status_.nproc = nproc; }

  void Send(const Event& e) {
    std::vector<Event> queue{e};
    while (!queue.empty()) {
      Event next = queue.front();
      queue.erase(queue.begin());
      Transition t = StepWorkers(status_, next, now_, Settings(kGrace));
      status_ = t.status;
      for (const Action& a : t.actions) Carry(a, &queue);
    }
  }
  void Advance(Millis d) { now_ += d; }

  int started = 0;                 // workers started, all attempts
  int joins = 0;
  std::vector<int> signals;        // signals sent to the group
  int exit_code = -1;
  int checks = 0;                  // CheckKill asked
  int shutdowns = 0;               // the rendezvous left
  const GroupStatus& status() const { return status_; }

 private:
  void Carry(const Action& a, std::vector<Event>* queue) {
    switch (a.kind) {
      case K::kStartWorkers: started += status_.nproc; break;
      case K::kSignalWorkers: signals.push_back(a.signal); break;
      case K::kJoin:
        ++joins;
        if (!failed_) queue->push_back(Simple(E::kRoundReady));
        break;
      case K::kReportFailure:  // like the rendezvous host: count, or fail the job
        if (restarts_ < max_restarts_) {
          ++restarts_;
        } else {
          failed_ = true;
          queue->push_back(Event{E::kJobFailed, 0, status_.failure, {}});
        }
        break;
      case K::kReportSucceeded: queue->push_back(Simple(E::kDone)); break;
      case K::kExit: exit_code = a.exit_code; break;
      case K::kCheckKill: ++checks; break;
      case K::kShutdownRendezvous: ++shutdowns; break;
      default: break;
    }
  }
  GroupStatus status_;
  MonoClock::time_point now_ = kT0;
  int max_restarts_;
  int restarts_ = 0;
  bool failed_ = false;
};

TEST(WorkerStateScenario, WorkerFailsOnceThenRunSucceeds) {
  FakeRun run(2, 1);
  run.Send(Simple(E::kRoundReady));
  run.Send(Exited(1));                 // rank 0 fails: TERM to the group
  run.Send(Exited(0, SIGTERM));        // rank 1 stops
  EXPECT_EQ(run.joins, 1);
  EXPECT_EQ(run.status().state, S::kHealthy);
  run.Send(Exited(0));
  run.Send(Exited(0));
  EXPECT_EQ(run.started, 4);
  EXPECT_EQ(run.signals, std::vector<int>{SIGTERM});
  EXPECT_EQ(run.exit_code, 0);
}

TEST(WorkerStateScenario, RestartsExhaustedExits1AndKeepsTheWorkerCodeForTheSummary) {
  FakeRun run(2, 1);
  run.Send(Simple(E::kRoundReady));
  for (int attempt = 0; attempt < 2; ++attempt) {
    run.Send(Exited(5));
    run.Send(Exited(0, SIGTERM));
  }
  EXPECT_EQ(run.status().state, S::kFailed);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.status().failure.exit_code, 5);
  EXPECT_EQ(run.started, 4);
}

TEST(WorkerStateScenario, WorkerIgnoringTermIsKilledAfterGrace) {
  FakeRun run(2, 0);
  run.Send(Simple(E::kRoundReady));
  run.Send(Exited(1));
  run.Advance(kGrace);
  run.Send(Simple(E::kStopTimeout));
  run.Send(Exited(0, SIGKILL));
  EXPECT_EQ(run.signals, (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_EQ(run.exit_code, 1);
}

// A worker in D state: TERM, KILL after the grace period, the check after the
// uninterruptible timeout finds it alive: leave with notice, exit 4; never a rejoin.
TEST(WorkerStateScenario, UnkillableWorkerMakesTheNodeLeaveWithExit4) {
  FakeRun run(2, 5);
  run.Send(Simple(E::kRoundReady));
  run.Send(Exited(1));  // rank 0 fails; rank 1 hangs in the kernel
  run.Advance(kGrace);
  run.Send(Simple(E::kStopTimeout));
  run.Advance(Millis(60000));
  run.Send(Simple(E::kStopTimeout));
  EXPECT_EQ(run.checks, 1);
  run.Send(Simple(E::kWorkersStuck));
  EXPECT_EQ(run.signals, (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_EQ(run.shutdowns, 1);
  EXPECT_EQ(run.joins, 0);
  EXPECT_EQ(run.exit_code, 4);
  EXPECT_EQ(run.status().state, S::kFailed);
}

TEST(WorkerStateScenario, AgentSigtermForwardsAndExits143) {
  FakeRun run(3, 3);
  run.Send(Simple(E::kRoundReady));
  run.Send(Simple(E::kTerminate, SIGTERM));
  for (int i = 0; i < 3; ++i) run.Send(Exited(0, SIGTERM));
  EXPECT_EQ(run.signals, std::vector<int>{SIGTERM});
  EXPECT_EQ(run.exit_code, 143);
  EXPECT_EQ(run.joins, 0);
}

}  // namespace
}  // namespace elastic

namespace elastic {
namespace {

// Issue 21: a worker forked by the preloaded interpreter arrives after StartWorkers
// (a loop event); if the group began stopping meanwhile it gets the group's signal.
TEST(LateStartSignal, OnlyAStoppingGroupSignalsALateWorker) {
  struct Row {
    WorkerState state;
    int stop_signal;
    int want;
  };
  const Row rows[] = {
      {WorkerState::kHealthy, 0, 0},          {WorkerState::kHealthy, SIGUSR1, 0},
      {WorkerState::kUnhealthy, SIGTERM, SIGTERM}, {WorkerState::kUnhealthy, SIGKILL, SIGKILL},
      {WorkerState::kUnhealthy, 0, 0},        {WorkerState::kStopped, SIGTERM, 0},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(LateStartSignal(r.state, r.stop_signal), r.want) << WorkerStateName(r.state) << " " << r.stop_signal;
  }
}

}  // namespace
}  // namespace elastic
