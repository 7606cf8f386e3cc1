#include "launcher/worker_state.h"

#include "launcher/exit_codes.h"

#include <signal.h>

namespace elastic {
namespace {

// Builder that keeps StepWorkers()'s cases short.
class Stepper {
 public:
  Stepper(const GroupStatus& s, MonoClock::time_point now, const SupervisionSettings& settings)
      : t_{s, {}}, now_(now), settings_(settings) {}

  // Arms the stop timer for `deadline`.
  void Arm(MonoClock::time_point deadline) {
    t_.actions.push_back(Action{ActionKind::kArmStopTimer, 0, deadline, 0});
  }

  GroupStatus& s() { return t_.status; }
  MonoClock::time_point now() const { return now_; }
  const SupervisionSettings& settings() const { return settings_; }
  Action& Do(ActionKind kind, int signal = 0, int exit_code = 0) {
    return t_.actions.emplace_back(Action{kind, signal, s().kill_at, exit_code});
  }
  // The job's end: the summary, the final Comment, then --requeue's question for an end
  // the rendezvous gave (the job failed, or a fatal end).
  void Exit(WorkerState state, int code) {
    s().state = state;
    s().exited = true;
    Do(ActionKind::kExit, 0, code);
    const JobEnd* end = s().after_stop == AfterStop::kFail    ? &s().fail_end
                        : s().after_stop == AfterStop::kFatal ? &s().fatal_end
                                                              : nullptr;
    if (end && settings_.max_requeues > 0) Do(ActionKind::kRequeue).end = *end;
  }
  // This node ends by itself, the job's end not told to it: no summary, no final
  // Comment, no requeue (`kind` says why).
  void ExitHere(ActionKind kind, int code) {
    s().state = WorkerState::kFailed;
    s().exited = true;
    Do(ActionKind::kShutdownRendezvous, 0);  // no signal: this node's own reason
    Do(kind, 0, code).reason = s().ending_here;
  }
  // Asks the host to end the job for all; it answers with JobFailed, or EndJobUnanswered.
  void EndJob(EndReason reason) {
    s().ending_here = reason;
    Action& a = Do(ActionKind::kEndJob);
    a.reason = reason;
    a.deadline = now_ + settings_.crash_loop_answer_timeout;
  }

  // Starts stopping the group with `sig`, unless it is already stopping.
  void BeginStop(int sig, AfterStop after) {
    if (s().state == WorkerState::kUnhealthy) {
      Decide(after);
      if (sig != SIGTERM) Do(ActionKind::kSignalWorkers, sig);  // e.g. a second Ctrl-C
      return;
    }
    s().state = WorkerState::kUnhealthy;
    s().first_failure_at = now_;  // from HEALTHY (the crash-loop window's end)
    s().after_stop = after;
    s().kill_at = now_ + settings_.shutdown_timeout;
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
        Rejoin();
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
  // After a failed round, before the join: a crash loop ends the job (every node sees
  // the same rounds: the failing one asks first); else group rank 0 reads
  // --progress-file first (its workers write it, most trainers from rank 0).
  void Rejoin() {
    GroupStatus& st = s();
    // The last restart used up: the rendezvous ends the job anyway (restarts exhausted, exit 1).
    bool budget_left = st.restarts_used < settings_.max_restarts;
    // Only a worker's failure (here, or anywhere: the host says so) counts; churn never does.
    bool worker_failed = st.has_failure || st.restart_cause == RestartCause::kWorkerFailure;
    auto uptime = std::chrono::duration_cast<Millis>(st.first_failure_at - st.started_at);
    if (budget_left && NoteFailedRound(settings_.crash_loop, uptime, worker_failed, &st.crash_loop)) {
      EndJob(EndReason::kCrashLoop);
    } else if (budget_left && worker_failed && settings_.progress_file && settings_.no_progress_restarts > 0 &&
               st.group_rank == 0) {
      Do(ActionKind::kReadProgress);
    } else {
      Do(ActionKind::kJoin);
    }
  }

  Transition t_;
  MonoClock::time_point now_;
  const SupervisionSettings& settings_;
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
void OnStopTimeout(Stepper& st) {
  GroupStatus& s = st.s();
  MonoClock::time_point now = st.now();
  if (s.state != WorkerState::kUnhealthy) return;
  if (!s.kill_sent && now >= s.kill_at) {
    s.kill_sent = true;
    s.stuck_at = now + st.settings().uninterruptible_timeout;
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

// --health-check's verdict, before a join (INIT): passed, join; failed, stay out and
// watch until it passes, or leave once it has failed for health_check_give_up.
void OnHealthChecked(Stepper& st, bool passed) {
  GroupStatus& s = st.s();
  if (s.state != WorkerState::kInit) return;
  if (passed) {
    s.health_failing_since.reset();
    st.Do(ActionKind::kJoinRendezvous);
    return;
  }
  if (!s.health_failing_since) s.health_failing_since = st.now();
  if (st.now() - *s.health_failing_since >= st.settings().health_check_give_up) {
    return st.ExitHere(ActionKind::kGiveUp, kExitJobFailed);
  }
  st.Do(ActionKind::kRetryHealthCheck).deadline = st.now() + st.settings().health_check_recheck;
}

// Group rank 0 read --progress-file after a failed round: rejoin, or end the job after
// no_progress_restarts failed rounds in a row without progress.
void OnProgressRead(Stepper& st, std::optional<int64_t> progress) {
  GroupStatus& s = st.s();
  if (s.state != WorkerState::kInit) return;
  if (NoteRoundProgress(st.settings().no_progress_restarts, progress, &s.no_progress)) {
    st.EndJob(EndReason::kNoProgress);
  } else {
    st.Do(ActionKind::kJoin);
  }
}

// A worker's FileTimerClient timer expired: while the group runs, its stacks are
// collected (then its timer's signal, then its exit fails the round); a stopping group
// is past caring.
void OnWorkerHung(Stepper& st, int signal, int local_rank) {
  if (st.s().state != WorkerState::kHealthy) return;
  st.Do(signal > 0 ? ActionKind::kCollectStacks : ActionKind::kKeepHungWorker, signal).local_rank = local_rank;
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
                       const SupervisionSettings& settings) {
  Stepper st(status, now, settings);
  GroupStatus& s = st.s();
  if (s.exited) return st.Done();
  switch (event.kind) {
    case EventKind::kRoundReady:
      s.restarts_used = event.restarts_used;
      s.group_rank = event.group_rank;
      s.restart_cause = RestartCause::kMembership;
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
      OnStopTimeout(st);
      break;
    case EventKind::kWorkersStuck:
      OnWorkersStuck(st);
      break;
    case EventKind::kRestartRequired:
      s.restart_cause = event.cause;
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
    case EventKind::kWorkersStarted:
      s.started_at = now;
      break;
    case EventKind::kHealthChecked:
      OnHealthChecked(st, event.passed);
      break;
    case EventKind::kProgressRead:
      OnProgressRead(st, event.progress);
      break;
    case EventKind::kEndJobUnanswered:
      if (s.ending_here != EndReason::kUnknown) st.ExitHere(ActionKind::kEndHere, ExitCodeFor(s.ending_here));
      break;
    case EventKind::kWorkerHung:
      OnWorkerHung(st, event.signal, event.local_rank);
      break;
  }
  return st.Done();
}

}  // namespace elastic
