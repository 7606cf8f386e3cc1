// The agent's supervision logic as a pure state machine over the local
// WorkerGroup: StepWorkers(status, event, now) -> (status, actions). No I/O, no clock
// reads: the shell (agent.cc) turns events (worker exits, rendezvous callbacks,
// signals, timers) into StepWorkers() calls and carries out the returned actions.
//
// States (torchelastic's WorkerState names) and transitions:
//
//   INIT       no workers; waiting for a rendezvous round (or for what comes before the
//              join: --health-check's verdict, --progress-file's read, the host's answer
//              to an EndJob).
//     RoundReady            -> HEALTHY    [StartWorkers]
//     RestartRequired       -> INIT       (already rejoining)
//     Terminate(sig)        -> STOPPED    [ShutdownRendezvous, Exit(128+sig)]
//     JobFailed / Fatal     -> FAILED     [Exit]
//     Done                  -> SUCCEEDED  [Exit(0)]  (the job ended while this node stood by)
//     HealthChecked(passed) -> INIT       [JoinRendezvous]
//     HealthChecked(failed) -> INIT       [RetryHealthCheck(now+recheck)]  (stays out, watching)
//                              or, failing for health_check_give_up:
//                           -> FAILED     [ShutdownRendezvous, GiveUp(1)]
//     ProgressRead          -> INIT       [Join], or after no_progress_restarts rounds without
//                              progress [EndJob(kNoProgress, now+answer timeout)]
//     EndJobUnanswered      -> FAILED     [ShutdownRendezvous, EndHere(ExitCodeFor(reason))]
//   HEALTHY    every worker started, none failed.
//     WorkersStarted        -> HEALTHY    (the crash-loop window counts from now)
//     WorkerExited(ok)      -> HEALTHY, or SUCCEEDED when it was the last one [ReportSucceeded]
//     WorkerExited(failed)  -> UNHEALTHY  [ReportFailure, SignalWorkers(TERM), ArmStopTimer]
//                              (then rejoin: the rendezvous answers the Join with a round,
//                              or with JobFailed when the restarts are used up)
//     WorkerHung(sig > 0)   -> HEALTHY    [CollectStacks]  (its stacks, then its exit: a failure)
//     WorkerHung(sig <= 0)  -> HEALTHY    [KeepHungWorker]  (its timer asked for no signal)
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
//     WorkerHung            -> UNHEALTHY  (already stopping: nothing)
//   STOPPED    every worker reaped [EndAttempt]; then by after_stop:
//     rejoin                -> INIT       then, in this order (Rejoin below):
//                              a crash loop (crash_loop.h)   [EndJob(kCrashLoop, now+answer timeout)]
//                              rank 0 with --progress-file    [ReadProgress]
//                              else                           [Join]
//     job failed / fatal    -> FAILED     [Exit(code), Requeue(end) with --requeue]
//     signal                -> STOPPED    [Exit(128+sig)]
//   SUCCEEDED  every local worker exited 0; Done -> [Exit(0)]; Terminate -> [Exit(128+sig)].
//   FAILED     terminal.
//
// The resilience rules are rows here too: the crash loop (NoteFailedRound) and no
// progress (NoteRoundProgress) after a failed round, the health check's verdict, a hung
// worker's FileTimerClient timer, the EndJob that got no answer, and --requeue's ask
// (the shell runs DecideRequeue, requeue.h, on the end the Requeue action carries).
//
// A worker in uninterruptible sleep (D) survives SIGKILL: the agent never waits for it
// without a deadline (stuck_worker.h); kExitWorkerStuck says this node left the job.
//
// Exit codes (launcher/exit_codes.h, documented in --help): 0 all workers
// succeeded; 1 restarts used up (the summary names the worker's exit code or
// signal); 128+sig when the agent itself got a terminating signal; for the
// rendezvous's end (JobFailed, Fatal) the code of the reason it gave (ExitCodeFor);
// 2 a crash loop and 5 no progress that the host did not end for all (EndHere);
// 1 a health check that kept failing (GiveUp).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "launcher/crash_loop.h"
#include "launcher/no_progress.h"
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
  // For the rules after a failed round (crash_loop.h, no_progress.h):
  MonoClock::time_point started_at{};        // WorkersStarted of this round
  MonoClock::time_point first_failure_at{};  // this round's HEALTHY -> UNHEALTHY
  RestartCause restart_cause = RestartCause::kMembership;  // of the last restart asked this round
  int restarts_used = 0;           // the last round's (RoundInfo)
  int group_rank = 0;              // the last round's
  CrashLoopState crash_loop;
  NoProgressState no_progress;
  EndReason ending_here = EndReason::kUnknown;  // EndJob sent for it (kUnknown: none)
  // --health-check: failing since (nullopt: passing, or not run yet).
  std::optional<MonoClock::time_point> health_failing_since;
};

// The deadlines and limits the rules read: the agent's settings (AgentSettings and the
// WorkerSpec's, launch_config.h), passed in; nothing is hard-wired here.
struct SupervisionSettings {
  Millis shutdown_timeout{};         // --shutdown-timeout: SIGTERM to SIGKILL
  Millis uninterruptible_timeout{};  // --uninterruptible-timeout: SIGKILL to CheckKill
  int max_restarts = 0;              // --max-restarts: once used up, the rendezvous ends the job
  CrashLoopSettings crash_loop;      // --crash-loop-count, --crash-loop-window
  Millis crash_loop_answer_timeout{};  // EndJob sent: the host's end of the job is due
  bool progress_file = false;        // --progress-file given
  int no_progress_restarts = 0;      // --no-progress-restarts
  Millis health_check_recheck{};     // a failed --health-check runs again after this...
  Millis health_check_give_up{};     // ...until its checks have failed this long
  int max_requeues = 0;              // --requeue
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
  kWorkersStarted,   // this attempt's workers were started (with --preload: once it was ready)
  kHealthChecked,    // --health-check ended (`passed`)
  kProgressRead,     // --progress-file read after a failed round (`progress`)
  kEndJobUnanswered, // an EndJob got no end of the job within crash_loop_answer_timeout
  kWorkerHung,       // a worker's FileTimerClient timer expired (`local_rank`, its `signal`)
};

struct Event {
  EventKind kind;
  int signal = 0;
  WorkerFailure failure = {};
  std::string message = {};
  JobEnd end = {};  // kJobFailed, kFatal: why the rendezvous ended the job
  RestartCause cause = RestartCause::kMembership;  // kRestartRequired
  int restarts_used = 0;  // kRoundReady: the round's (RoundInfo)
  int group_rank = 0;     // kRoundReady
  bool passed = false;    // kHealthChecked
  std::optional<int64_t> progress = std::nullopt;  // kProgressRead (nullopt: none known)
  int local_rank = -1;    // kWorkerHung
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
  kRequeue,             // after Exit: --requeue asks DecideRequeue (requeue.h) about `end`
  kEndJob,              // ask the rendezvous to end the job for `reason`; its answer is due
                        // by `deadline` (else EndJobUnanswered)
  kReadProgress,        // read --progress-file (ProgressRead follows)
  kEndHere,             // the EndJob was not answered: say why (`reason`), exit_code, stop now
  kJoinRendezvous,      // the health check passed: join (with Slurm's verdict on the node)
  kRetryHealthCheck,    // it failed: stay out, watch the rendezvous, check again at `deadline`
  kGiveUp,              // it kept failing: say so, exit_code, stop now
  kCollectStacks,       // a hung worker (`local_rank`): its stacks, then its timer's signal
  kKeepHungWorker,      // a hung worker whose timer asked for no signal: say so, nothing else
};

struct Action {
  ActionKind kind;
  int signal = 0;
  MonoClock::time_point deadline{};
  int exit_code = 0;
  EndReason reason = EndReason::kUnknown;  // kEndJob, kEndHere
  JobEnd end = {};                         // kRequeue
  int local_rank = -1;                     // kCollectStacks, kKeepHungWorker
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

Transition StepWorkers(const GroupStatus& status, const Event& event, MonoClock::time_point now,
                       const SupervisionSettings& settings);

}  // namespace elastic
