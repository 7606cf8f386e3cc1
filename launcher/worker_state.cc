#include "launcher/worker_state.h"

#include "launcher/exit_codes.h"

#include <signal.h>

namespace elastic {
namespace {

// Builder that keeps StepWorkers()'s cases short.
class Stepper {
 public:
  Stepper(const GroupStatus& s, MonoClock::time_point now, Millis grace)
      : t_{s, {}}, now_(now), grace_(grace) {}

  // Arms the stop timer for `deadline`.
  void Arm(MonoClock::time_point deadline) {
    t_.actions.push_back(Action{ActionKind::kArmStopTimer, 0, deadline, 0});
  }

  GroupStatus& s() { return t_.status; }
  void Do(ActionKind kind, int signal = 0, int exit_code = 0) {
    t_.actions.push_back(Action{kind, signal, s().kill_at, exit_code});
  }
  void Exit(WorkerState state, int code) {
    s().state = state;
    s().exited = true;
    Do(ActionKind::kExit, 0, code);
  }

  // Starts stopping the group with `sig`, unless it is already stopping.
  void BeginStop(int sig, AfterStop after) {
    if (s().state == WorkerState::kUnhealthy) {
      Decide(after);
      if (sig != SIGTERM) Do(ActionKind::kSignalWorkers, sig);  // e.g. a second Ctrl-C
      return;
    }
    s().state = WorkerState::kUnhealthy;
    s().after_stop = after;
    s().kill_at = now_ + grace_;
    s().kill_sent = false;
    s().kill_checked = false;
    Do(ActionKind::kSignalWorkers, sig);
    Do(ActionKind::kArmStopTimer);
    if (s().alive == 0) Stopped();
  }

  // A later, stronger verdict overrides an earlier one: signal > fatal > fail > rejoin > await.
  void Decide(AfterStop after) {
    if (static_cast<int>(after) > static_cast<int>(s().after_stop)) s().after_stop = after;
  }

  // Every worker is gone: act on after_stop.
  void Stopped() {
    if (s().state == WorkerState::kUnhealthy) Do(ActionKind::kEndAttempt);
    s().state = WorkerState::kStopped;
    Resolve();
  }

  void Resolve() {
    switch (s().after_stop) {
      case AfterStop::kRejoin:
        s().state = WorkerState::kInit;
        s().after_stop = AfterStop::kNone;
        Do(ActionKind::kJoin);
        break;
      case AfterStop::kFail:
        Exit(WorkerState::kFailed, ExitCodeFor(s().fail_end.reason));  // the summary names the
                                                                        // worker's code
        break;
      case AfterStop::kFatal:
        Exit(WorkerState::kFailed, ExitCodeFor(s().fatal_end.reason));
        break;
      case AfterStop::kExitSignal:
        Exit(WorkerState::kStopped, 128 + s().exit_signal);
        break;
      case AfterStop::kNone:
        break;
    }
  }

  void RecordFailure(const WorkerFailure& f) {
    if (s().has_failure) return;
    s().failure = f;
    s().has_failure = true;
  }

  Transition Done() { return std::move(t_); }

 private:
  Transition t_;
  MonoClock::time_point now_;
  Millis grace_;
};

void OnWorkerExited(Stepper& st, const WorkerFailure& exit) {
  GroupStatus& s = st.s();
  if (s.alive == 0) return;  // not ours (stale event)
  --s.alive;
  if (s.state == WorkerState::kHealthy) {
    if (!IsFailure(exit)) {
      if (s.alive == 0) {
        s.state = WorkerState::kSucceeded;
        st.Do(ActionKind::kEndAttempt);
        st.Do(ActionKind::kReportSucceeded);
      }
      return;
    }
    st.RecordFailure(exit);
    st.Do(ActionKind::kReportFailure);
    // RendezvousHandler's life cycle: report, stop, Join again. A rendezvous whose
    // restarts are used up answers with JobFailed instead of a round.
    st.BeginStop(SIGTERM, AfterStop::kRejoin);
    return;
  }
  if (s.state == WorkerState::kUnhealthy && s.alive == 0) st.Stopped();
}

// The grace period is over: SIGKILL, then a check once the kill had its time. Past
// that, workers still unreaped (a stuck check said so) make this node leave.
void OnStopTimeout(Stepper& st, MonoClock::time_point now, Millis uninterruptible) {
  GroupStatus& s = st.s();
  if (s.state != WorkerState::kUnhealthy) return;
  if (!s.kill_sent && now >= s.kill_at) {
    s.kill_sent = true;
    s.stuck_at = now + uninterruptible;
    st.Do(ActionKind::kSignalWorkers, SIGKILL);
    st.Arm(s.stuck_at);
  } else if (s.kill_sent && !s.kill_checked && now >= s.stuck_at && s.alive > 0) {
    s.kill_checked = true;
    st.Do(ActionKind::kCheckKill);
  }
}

// Workers that SIGKILL cannot end: this node leaves the job (with notice: the others
// go on without it) and exits kExitWorkerStuck, unless the job's end or a signal
// already said how it ends (then that code: the job's summary, 128+sig).
void OnWorkersStuck(Stepper& st) {
  GroupStatus& s = st.s();
  if (s.state != WorkerState::kUnhealthy || s.alive == 0) return;
  st.Do(ActionKind::kShutdownRendezvous, s.after_stop == AfterStop::kExitSignal ? s.exit_signal : 0);
  switch (s.after_stop) {
    case AfterStop::kFail:
      return st.Exit(WorkerState::kFailed, ExitCodeFor(s.fail_end.reason));
    case AfterStop::kFatal:
      return st.Exit(WorkerState::kFailed, ExitCodeFor(s.fatal_end.reason));
    case AfterStop::kExitSignal:
      return st.Exit(WorkerState::kStopped, 128 + s.exit_signal);
    case AfterStop::kRejoin:
    case AfterStop::kNone:
      return st.Exit(WorkerState::kFailed, kExitWorkerStuck);
  }
}

void OnTerminate(Stepper& st, int sig) {
  GroupStatus& s = st.s();
  s.exit_signal = sig;
  switch (s.state) {
    case WorkerState::kHealthy:
    case WorkerState::kUnhealthy:
      st.Do(ActionKind::kShutdownRendezvous, sig);
      st.BeginStop(sig, AfterStop::kExitSignal);
      break;
    case WorkerState::kInit:
    case WorkerState::kStopped:
    case WorkerState::kSucceeded:
      st.Do(ActionKind::kShutdownRendezvous, sig);
      st.Exit(WorkerState::kStopped, 128 + sig);
      break;
    case WorkerState::kFailed:
      break;
  }
}

void OnVerdict(Stepper& st, AfterStop verdict) {
  GroupStatus& s = st.s();
  switch (s.state) {
    case WorkerState::kHealthy:
      st.BeginStop(SIGTERM, verdict);
      break;
    case WorkerState::kUnhealthy:
      st.Decide(verdict);
      break;
    case WorkerState::kInit:
      if (verdict == AfterStop::kRejoin) break;  // already waiting for a round
      s.after_stop = verdict;
      st.Resolve();
      break;
    case WorkerState::kStopped:  // only on the way out (Exit issued): nothing to decide
      break;
    case WorkerState::kSucceeded:
      // Our workers are done; a restart elsewhere needs us no more, a failure is the job's.
      if (verdict != AfterStop::kRejoin) {
        s.after_stop = verdict;
        st.Resolve();
      }
      break;
    case WorkerState::kFailed:
      break;
  }
}

}  // namespace

const char* WorkerStateName(WorkerState state) {
  switch (state) {
    case WorkerState::kInit: return "INIT";
    case WorkerState::kHealthy: return "HEALTHY";
    case WorkerState::kUnhealthy: return "UNHEALTHY";
    case WorkerState::kStopped: return "STOPPED";
    case WorkerState::kSucceeded: return "SUCCEEDED";
    case WorkerState::kFailed: return "FAILED";
  }
  return "?";
}

bool IsFailure(const WorkerFailure& exit) { return exit.signal != 0 || exit.exit_code != 0; }

int FailureExitCode(const WorkerFailure& failure) {
  if (failure.signal != 0) return 128 + failure.signal;
  if (failure.exit_code > 0 && failure.exit_code < 256) return failure.exit_code;
  return 1;
}

int LateStartSignal(WorkerState state, int stop_signal) {
  return state == WorkerState::kUnhealthy ? stop_signal : 0;
}

Transition StepWorkers(const GroupStatus& status, const Event& event, MonoClock::time_point now,
                Millis shutdown_timeout, Millis uninterruptible_timeout) {
  Stepper st(status, now, shutdown_timeout);
  GroupStatus& s = st.s();
  if (s.exited) return st.Done();
  switch (event.kind) {
    case EventKind::kRoundReady:
      if (s.state == WorkerState::kInit) {
        s.state = WorkerState::kHealthy;
        s.alive = s.nproc;
        s.kill_sent = false;
        s.has_failure = false;  // the summary names the first failure of the last attempt
        st.Do(ActionKind::kStartWorkers);
      }
      break;
    case EventKind::kWorkerExited:
      OnWorkerExited(st, event.failure);
      break;
    case EventKind::kStopTimeout:
      OnStopTimeout(st, now, uninterruptible_timeout);
      break;
    case EventKind::kWorkersStuck:
      OnWorkersStuck(st);
      break;
    case EventKind::kRestartRequired:
      OnVerdict(st, AfterStop::kRejoin);
      break;
    case EventKind::kJobFailed:
      s.fail_end = event.end;  // the rendezvous tells it once
      st.RecordFailure(event.failure);
      OnVerdict(st, AfterStop::kFail);
      break;
    case EventKind::kFatal:
      if (s.fatal_message.empty()) s.fatal_message = event.message, s.fatal_end = event.end;
      OnVerdict(st, AfterStop::kFatal);
      break;
    case EventKind::kDone:
      // In INIT the job ended while this node waited for a round: it stood by
      // on the wait list (its workers were not needed), which is no failure
      // (torchrun's RendezvousGracefulExitError). Waiting on would never end.
      if (s.state == WorkerState::kSucceeded || s.state == WorkerState::kInit)
        st.Exit(WorkerState::kSucceeded, 0);
      break;
    case EventKind::kTerminate:
      OnTerminate(st, event.signal);
      break;
    case EventKind::kForward:
      if (s.alive > 0) st.Do(ActionKind::kSignalWorkers, event.signal);
      break;
  }
  return st.Done();
}

}  // namespace elastic
