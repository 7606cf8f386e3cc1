// ElasticAgent: the shell around the pure supervision logic (worker_state.h).
// It runs on the caller's event loop (RunElasticrun owns it, and builds the
// rendezvous on it first) and owns the rendezvous, the worker processes and their output,
// turns what happens (pidfd readable, signalfd readable, timer, rendezvous
// callback) into Events, and carries out the Actions that StepWorkers() returns.
//
// Signals: the terminating ones (--signals-to-handle) and SIGUSR1/SIGUSR2 are
// blocked from the start and read through a signalfd; workers exec with the
// original mask. Worker exits come through pidfds. Nothing polls.
//
// Containment: the agent is a child subreaper, so a process that leaves its worker's
// group (setsid, double fork) is reparented to the agent, not to init. SIGCHLD (on the
// same signalfd) reaps such orphans; a stop signals them with the groups, and the end
// of an attempt (LeftoverKiller: on the loop, the state machine goes on from their
// deaths) and the destructor SIGKILL every descendant left (descendants.h).
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/log.h"
#include "launcher/child_process.h"
#include "launcher/comment_updater.h"
#include "launcher/event_writer.h"
#include "launcher/console.h"
#include "launcher/descendants.h"
#include "launcher/crash_loop.h"
#include "launcher/file_timer_server.h"
#include "launcher/grow_keeper.h"
#include "launcher/health_check.h"
#include "launcher/hung_worker.h"
#include "launcher/launch_config.h"
#include "launcher/task_group.h"
#include "launcher/native_stacks.h"
#include "launcher/no_progress.h"
#include "launcher/requeue.h"
#include "launcher/slurm_node_state.h"
#include "launcher/worker_output.h"
#include "launcher/worker_state.h"
#include "launcher/zygote.h"
#include "rendezvous/rendezvous_handler.h"

namespace elastic {

// What every worker of an attempt runs, and where its files go: the WorkerSpec
// (launch_config.h) resolved by run.cc (executable, argv, binding per local rank).
struct WorkerPlan {
  std::string path;                 // resolved executable
  std::vector<std::string> argv;
  std::string log_dir;              // LOG_DIR/attempt_N/LOCAL_RANK/...
  std::vector<std::string> cpus;    // per local rank, for binding ("" = unbound)
  std::vector<int> cores;           // per local rank (OMP_NUM_THREADS); 0 = unbound
  // Binds the calling process as local rank N: runs in the worker before exec,
  // sharing the agent's memory, so it only makes system calls. Returns 0 or an
  // errno value and the failed call's name (a static string). May be empty.
  std::function<int(int local_rank, const char** call)> bind;
  // The same binding as data, per local rank, for workers forked from the
  // preloaded interpreter (zygote.h), which apply it themselves. May be null.
  std::shared_ptr<const std::vector<KernelBinding>> kernel_binding;
  // One task per GPU (task_group.h): worker K's Slurm task; empty otherwise.
  std::vector<TaskRecord> tasks;
};

struct Worker {
  int local_rank = 0;
  int global_rank = 0;
  ChildHandle child;
  bool alive = false;
  bool spawning = false;  // the preloaded interpreter has not answered its request yet
  std::string error_file;
  std::unique_ptr<WorkerOutput> out;
  std::unique_ptr<WorkerOutput> err;
  std::optional<ExpiredTimer> expired;               // its FileTimerClient timer, told to the state machine
  std::optional<HangInfo> hang;                      // its stacks are collected (CollectStacks)
  Timer hang_kill_timer;              // AgentSettings::stack_dump_grace_ms after SIGABRT
  std::unique_ptr<HealthCheck> native_stacks;  // --native-stacks tool run on it (native_stacks.h)
  bool native_running = false;                 // that tool has not ended yet
  bool stuck = false;  // alive --uninterruptible-timeout after SIGKILL: never waited for again
};

class ElasticAgent {
 public:
  // `loop` must outlive the agent; `rendezvous` (given to Run) runs on it too.
  ElasticAgent(EventLoop& loop, const LaunchConfig& config, const EnvMap& env, WorkerPlan plan);
  ~ElasticAgent();

  // Runs the job; returns the exit code (see worker_state.h). `events` (may be
  // null): the event record's writer, whose events, while this agent hosts the
  // rendezvous, make the job's live Comment (agent_comment.cc).
  int Run(std::unique_ptr<RendezvousHandler> rendezvous, EventWriter* events = nullptr);
  // The host runner (host_runner.h) for the node's side programs (scontrol, the
  // health check, grow's sbatch) of an agent in a container image; null: here.
  void SetHostRunner(HostRunnerClient* host) { host_ = host; }

 private:
  bool SetUpSignals(std::string* err);
  void OnSignal();
  void OnJobControl(int sig);  // SIGTSTP / SIGCONT
  void SetCallbacks();
  LogLevel JobEvent(LogLevel level) const;
  // The restart budget's option as the user typed it (--elastic-max-restarts under srun).
  const char* RestartsFlag() const;
  // The job is at or past its time limit (slurm_stop.h AtJobEnd, this node's wall clock).
  bool PastJobEnd() const;
  void Dispatch(Event event);
  void Execute(const Action& action);

  void StartWorkers();
  void StartWorkersNow();
  bool StartWorker(Worker* w, std::string* err);
  void StartZygote(bool subreaper);
  // A worker's start through the zygote completes from its reply (a loop event).
  void StartFromZygote(Worker* w, const ChildSpec& child);
  void OnZygoteSpawned(uint64_t attempt, int local_rank, const ChildSpec& child, bool ok, ChildHandle handle,
                       const std::string& why);
  bool Started(Worker* w, std::string* err);  // watches its exit
  void StartFailed(Worker* w, const std::string& err);
  std::vector<pid_t> Spared() const;
  void OnWorkerExit(Worker* w);
  void SignalWorkers(int sig);
  void ReapOrphans();
  void KillLeftovers();  // waits (with a deadline): for the destructor, off the loop
  std::vector<pid_t> StuckPids() const;  // never waited for (agent_stuck.cc)
  void ArmStopTimer(MonoClock::time_point deadline);
  void EndAttempt();
  void OnLeftoversKilled(const std::string& err);
  void RunQueue();
  void Finish(int exit_code);
  void LogToConsole(const std::string& line);
  // At exit: the queued console text, written within --console-drain-timeout.
  void DrainConsoles();

  // TORCHELASTIC_ENABLE_FILE_TIMER=1: PyTorch's watchdog (agent_file_timer.cc).
  bool StartFileTimer(std::string* err);
  void StopFileTimer();
  void OnTimerExpired(const ExpiredTimer& timer);
  void CollectStacks(int local_rank);   // the state machine's CollectStacks
  void KeepHungWorker(int local_rank);  // its KeepHungWorker
  Worker* WorkerOfPid(pid_t pid);
  void DescribeHang(Worker* w, WorkerFailure* f);
  void ChooseNativeTool();
  bool StartNativeStacks(Worker* w);
  void OnNativeStacksDone(Worker* w, const HealthResult& result);
  void CollectPythonStacks(Worker* w);
  void StopNativeStacks();
  // A crash loop or no progress (the state machine's EndJob): asks the host to end the
  // job; EndJobUnanswered past `answer_due` (agent_resilience.cc).
  void EndJob(EndReason reason, MonoClock::time_point answer_due);
  std::string CrashLoopMessage() const;
  void EndHere(EndReason reason, int exit_code);  // the host did not answer EndJob
  // After a failed round, with --progress-file: reads it (a child process, on the loop);
  // ProgressRead follows (agent_progress.cc).
  void ReadProgress();
  void OnProgressRead(const std::string& out, const HealthResult& r);
  std::string NoProgressMessage() const;
  void Rejoin();  // the rejoin line, then JoinRound
  // --uninterruptible-timeout after SIGKILL: reads /proc for workers that cannot be
  // killed, reports them and, if any, makes this node leave (agent_stuck.cc).
  void CheckKill();
  // Joins the next round, after --health-check passes (agent_resilience.cc).
  void JoinRound();
  // At the end of the job: --requeue (requeue.h) for `end`. True when scontrol runs (the
  // actions wait until it is done: Resume).
  bool MaybeRequeue(const JobEnd& end);
  // The job's live Comment under Slurm (comment_updater.h, agent_comment.cc): made at
  // the start; at the end, true when its final update runs (Resume follows it).
  void StartComment(EventWriter* events);
  bool FinishComment();
  // --grow (grow_keeper.h, agent_grow.cc): made at the start; at the end, true when its
  // scancel of the helper jobs runs (`then` follows it).
  void StartGrow(EventWriter* events);
  void ListenToEvents(EventWriter* events);  // after StartComment and StartGrow
  bool FinishGrow(std::function<void()> then);
  void Resume();  // the final Comment or scontrol requeue is done: the actions go on
  std::vector<std::string> SideProgramEnv() const;
  void RunHealthCheck();
  void OnHealthChecked(const HealthResult& result);
  // This agent's verdicts on its own node into the event record (job_events.h:
  // worker_hung, health_check, requeue); nothing without one.
  AgentEventContext EventContext() const;
  template <typename Make>
  void RecordVerdict(Make make) {
    if (events_) events_->Record(make(EventContext(), events_->NowUnixMillis()));
  }
  void RetryHealthCheck(MonoClock::time_point at);  // the state machine's RetryHealthCheck
  void GiveUpHealthCheck(int exit_code);            // its GiveUp
  void RecordHealth(const char* verdict, const std::string& result);  // health_check event
  // Slurm's verdict on this node (slurm_node_state.h, agent_resilience.cc): asked before
  // a round forms (rate-limited), then the join carries it.
  void JoinWithNodeState();
  void AskSlurm();  // no-op while a question is in flight or within the rate limit
  void OnNodeState(bool ok, const SlurmNodeState& node, const std::string& why);
  void OnRoundFormed();

  const LaunchConfig& config_;
  const EnvMap& env_;
  WorkerPlan plan_;
  EventLoop& loop_;
  HostRunnerClient* host_ = nullptr;
  std::unique_ptr<RendezvousHandler> rendezvous_;
  GroupStatus status_;
  SupervisionSettings supervision_;  // from config_ (SupervisionSettingsOf)
  RoundInfo round_;
  std::string python_shim_dir_;  // ELASTIC_TORCH_NO_LIBUV=1 (worker_env.h)
  bool hostname_resolves_ = false;  // HostnameResolvesUsably, asked before the loop runs
  std::string gloo_ifname_;  // GLOO_SOCKET_IFNAME for this round's workers (gloo_interface.h)
  // The workers' lines and the agent's log go through these, never waiting on the
  // loop (console.h); declared before workers_, whose outputs use them.
  Console stdout_console_;
  Console stderr_console_;
  // This attempt's --duplicate-std{out,err}-filters files (null: no filter).
  std::shared_ptr<DuplicateSink> duplicate_out_, duplicate_err_;
  int log_source_ = 0;            // the agent's own log lines on stderr_console_
  size_t log_lines_dropped_ = 0;  // while stderr_console_ held too much of them
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<pid_t> old_groups_;   // groups of earlier attempts that still held one of our
                                    // processes when the next attempt started (OwnGroups)
  std::vector<pid_t> KnownGroups() const;
  UniqueFd signal_fd_;
  sigset_t handled_{};
  sigset_t original_mask_{};
  std::vector<int> handled_list_;
  Timer stop_timer_;
  std::deque<Event> queue_;
  std::deque<Action> actions_;      // of the transitions stepped, not yet carried out
  bool dispatching_ = false;
  bool ending_ = false;             // EndAttempt's leftovers are being killed (leftovers_)
  bool waiting_ = false;            // the final Comment or scontrol requeue runs (Resume)
  LeftoverKiller leftovers_{loop_};
  bool job_stopped_ = false;
  bool terminated_ = false;         // a terminating signal came (scancel...): no final Comment
  bool cancel_told_ = false;        // Slurm's SIGTERM was told (it comes more than once)        // stopped itself on SIGTSTP: the next SIGCONT resumes it
  int exit_code_ = 1;
  std::unique_ptr<Zygote> zygote_;  // --preload; null when not used
  bool start_pending_ = false;      // StartWorkers waits for the zygote's ready (zygote.h)
  bool zygote_warned_ = false;      // its unusability was told
  bool zygote_failed_told_ = false; // a failed spawn request was told (once: all fail then)
  uint64_t start_attempt_ = 0;      // StartWorkersNow's count: a late reply of an older one is stale
  int stop_signal_ = 0;             // what this attempt's stopping group got last (LateStartSignal)
  bool reap_deferred_ = false;      // ReapOrphans waited for the zygote's pending replies
  PythonCommand python_command_;    // what the zygote's workers run
  std::unique_ptr<HealthCheck> progress_reader_;  // reads --progress-file
  Timer crash_loop_answer_;  // EndJob sent: the host's job_failed is due
  std::unique_ptr<HealthCheck> health_;
  HealthResult last_health_;  // the verdict the state machine acts on (for its lines)
  Timer health_retry_;
  std::unique_ptr<FileTimerServer> file_timer_;
  std::string timer_dir_;  // private directory of the FIFO when the user named none
  NativeStackTool native_tool_;  // --native-stacks, found on PATH by StartFileTimer; name "" = none
  std::unique_ptr<CommentUpdater> comment_;  // null: off, or outside Slurm
  EventWriter* comment_source_ = nullptr;    // told to stop telling at the end of Run
  std::unique_ptr<GrowKeeper> grow_;         // --grow; null: off, or outside Slurm
  EventWriter* events_ = nullptr;            // the event record (Run's; null: none)
  std::unique_ptr<JobRequeuer> requeuer_;  // --requeue: scontrol requeue, while it runs
  std::string slurm_node_;                    // SLURMD_NODENAME: "" = not asked (outside Slurm)
  std::unique_ptr<SlurmNodeReader> node_reader_;
  bool node_asking_ = false;                  // a question is in flight
  std::optional<MonoClock::time_point> node_asked_;  // the last question (the rate limit)
  std::string node_standby_;                  // StandByReason of the last answer ("": may train)
  bool join_on_node_state_ = false;           // the join waits for the answer in flight
  bool standing_by_ = false;                  // joined with a verdict, no round since
  bool node_state_unknown_ = false;           // a question failed: never asked again (one warning)
  bool had_round_ = false;                    // a round formed since the start
  Timer node_recheck_;                        // AgentSettings::node_state_recheck_ms while standing by
};

}  // namespace elastic
