// The worker state machine driven through a fake process runner that carries out
// its actions (and a fake local rendezvous), with a fake clock.
#include "testing/worker_state_test_util.h"

namespace elastic {
namespace {

using namespace worker_state_testing;  // NOLINT(google-build-using-namespace): the table's vocabulary

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
