// The agent's supervision logic as a pure state machine over the local
// WorkerGroup: StepWorkers(status, event, now) -> (status, actions). No I/O, no clock
// reads: the shell (agent.cc) turns events (worker exits, rendezvous callbacks,
// signals, timers) into StepWorkers() calls and carries out the returned actions.
//
// States (torchelastic's WorkerState names) and transitions:
//
//   INIT       no workers; waiting for a rendezvous round.
//     RoundReady            -> HEALTHY    [StartWorkers]
//     RestartRequired       -> INIT       (already rejoining)
//     Terminate(sig)        -> STOPPED    [ShutdownRendezvous, Exit(128+sig)]
//     JobFailed / Fatal     -> FAILED     [Exit]
//     Done                  -> SUCCEEDED  [Exit(0)]  (the job ended while this node stood by)
//   HEALTHY    every worker started, none failed.
//     WorkerExited(ok)      -> HEALTHY, or SUCCEEDED when it was the last one [ReportSucceeded]
//     WorkerExited(failed)  -> UNHEALTHY  [ReportFailure, SignalWorkers(TERM), ArmStopTimer]
//                              (then rejoin: the rendezvous answers the Join with a round,
//                              or with JobFailed when the restarts are used up)
//     RestartRequired       -> UNHEALTHY  [SignalWorkers(TERM), ArmStopTimer]   (then rejoin)
//     Terminate(sig)        -> UNHEALTHY  [ShutdownRendezvous, SignalWorkers(sig), ArmStopTimer]
//     Fatal / JobFailed     -> UNHEALTHY  [SignalWorkers(TERM), ArmStopTimer]   (then fail)
//   UNHEALTHY  the group is being stopped; `after_stop` says what comes next.
//     WorkerExited          -> UNHEALTHY while workers remain, else STOPPED (below)
//     StopTimeout           -> UNHEALTHY  [SignalWorkers(KILL), ArmStopTimer(stuck_at)]  (grace over)
//     StopTimeout (stuck_at) -> UNHEALTHY [CheckKill]  (--uninterruptible-timeout after SIGKILL:
//                              the shell reads /proc, stuck_worker.h)
//     WorkersStuck          -> FAILED     [ShutdownRendezvous, Exit(4)]  (leave with notice; a
//                              job-wide verdict or a signal keeps its own code)
//     RestartRequired / JobFailed / Terminate / Fatal update after_stop.
//   STOPPED    every worker reaped [EndAttempt]; then by after_stop:
//     rejoin                -> INIT       [Join]
//     job failed / fatal    -> FAILED     [Exit(code)]
//     signal                -> STOPPED    [Exit(128+sig)]
//   SUCCEEDED  every local worker exited 0; Done -> [Exit(0)]; Terminate -> [Exit(128+sig)].
//   FAILED     terminal.
//
// A worker in uninterruptible sleep (D) survives SIGKILL: the agent never waits for it
// without a deadline (stuck_worker.h); kExitWorkerStuck says this node left the job.
//
// Exit codes (launcher/exit_codes.h, documented in --help): 0 all workers
// succeeded; 1 restarts used up (the summary names the worker's exit code or
// signal); 128+sig when the agent itself got a terminating signal; for the
// rendezvous's end (JobFailed, Fatal) the code of the reason it gave (ExitCodeFor).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "rendezvous/rendezvous_handler.h"

namespace elastic {

enum class WorkerState { kInit, kHealthy, kUnhealthy, kStopped, kSucceeded, kFailed };
const char* WorkerStateName(WorkerState state);

// What happens once every worker of a stopping group is gone.
// Ordered by strength: a later, stronger verdict overrides a weaker one.
enum class AfterStop { kNone, kRejoin, kFail, kFatal, kExitSignal };

struct GroupStatus {
  WorkerState state = WorkerState::kInit;
  int nproc = 1;                   // workers per attempt on this node
  int alive = 0;                   // started and not yet reaped
  AfterStop after_stop = AfterStop::kNone;
  MonoClock::time_point kill_at{};  // when the grace period of a stop ends
  bool kill_sent = false;
  MonoClock::time_point stuck_at{};  // kill_sent: when unreaped workers count as unkillable
  bool kill_checked = false;         // CheckKill asked (once per stop)
  WorkerFailure failure;           // the failure reported in the summary (first one)
  bool has_failure = false;
  int exit_signal = 0;             // agent's terminating signal
  std::string fatal_message;
  JobEnd fail_end{EndReason::kWorkerFailed, false};  // of the JobFailed
  JobEnd fatal_end = {};                              // of the first Fatal
  bool exited = false;             // an Exit action was issued: nothing happens after it
};

enum class EventKind {
  kRoundReady,       // rendezvous on_round
  kWorkerExited,     // a worker was reaped; `failure` describes it (exit_code/signal)
  kStopTimeout,      // the stop timer fired
  kRestartRequired,  // rendezvous on_restart_required
  kJobFailed,        // rendezvous on_job_failed(failure)
  kDone,             // rendezvous on_done
  kFatal,            // rendezvous on_fatal(message)
  kTerminate,        // agent got SIGTERM/INT/HUP/QUIT (signal)
  kForward,          // agent got SIGUSR1/USR2 (signal): pass it on
  kWorkersStuck,     // CheckKill found workers alive --uninterruptible-timeout after SIGKILL
};

struct Event {
  EventKind kind;
  int signal = 0;
  WorkerFailure failure;
  std::string message;
  JobEnd end = {};  // kJobFailed, kFatal: why the rendezvous ended the job
};

enum class ActionKind {
  kStartWorkers,
  kSignalWorkers,       // signal every worker's process group
  kArmStopTimer,        // deadline: kill_at
  kReportFailure,       // RendezvousHandler::ReportWorkerFailure(failure)
  kReportSucceeded,
  kShutdownRendezvous,
  kEndAttempt,          // every worker reaped: kill stragglers in their groups, drain output
  kJoin,
  kExit,                // exit_code; failure summary printed when has_failure
  kCheckKill,           // read /proc: are the unreaped workers unkillable? (stuck_worker.h)
};

struct Action {
  ActionKind kind;
  int signal = 0;
  MonoClock::time_point deadline{};
  int exit_code = 0;
};

struct Transition {
  GroupStatus status;
  std::vector<Action> actions;
};

bool IsFailure(const WorkerFailure& exit);
// The agent's exit code for a worker failure: its exit code, or 128+signal.
int FailureExitCode(const WorkerFailure& failure);

// A worker whose start completed late (its preloaded interpreter answers as a loop
// event, zygote.h) into a group that is being stopped gets the signal the group
// got (`stop_signal`, 0 if none yet): the group waits for its exit. 0: leave it.
int LateStartSignal(WorkerState state, int stop_signal);

// `uninterruptible_timeout`: from SIGKILL to CheckKill (--uninterruptible-timeout).
Transition StepWorkers(const GroupStatus& status, const Event& event, MonoClock::time_point now,
                Millis shutdown_timeout, Millis uninterruptible_timeout = Millis(60000));

}  // namespace elastic
