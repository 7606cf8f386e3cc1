// The resilience rules (crash loops, no progress, health checks, hung workers,
// --requeue) as rows of the worker state table, and what their actions carry.
#include "testing/worker_state_test_util.h"

namespace elastic {
namespace {

using namespace worker_state_testing;  // NOLINT(google-build-using-namespace): the table's vocabulary

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

}  // namespace
}  // namespace elastic
