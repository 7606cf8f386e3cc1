#include "launcher/agent.h"

#include "launcher/gloo_interface.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/log.h"
#include "launcher/descendants.h"
#include "launcher/failure_report.h"
#include "launcher/log_prefix.h"
#include "launcher/self_exe.h"
#include "launcher/slurm_stop.h"
#include "launcher/worker_env.h"

namespace elastic {
namespace {

int64_t UnixMillisNow() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

UniqueFd OpenLog(const std::string& path) {
  return UniqueFd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
}

// torchrun's attempt_N/filtered_std*.log: every worker of the attempt appends to it.
std::shared_ptr<DuplicateSink> OpenDuplicateSink(const std::vector<std::string>& filters, const std::string& path) {
  if (filters.empty()) return nullptr;
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
  if (!fd) Log(LogLevel::kWarning, "cannot write {}: {}", path, strerror(errno));
  return std::make_shared<DuplicateSink>(filters, std::move(fd));
}

// The state machine's deadlines and limits, from the settings (one place: AgentSettings).
SupervisionSettings SupervisionSettingsOf(const LaunchConfig& config) {
  const AgentSettings& a = config.agent;
  SupervisionSettings s;
  s.shutdown_timeout = Millis(a.shutdown_timeout_ms);
  s.uninterruptible_timeout = Millis(a.uninterruptible_timeout_ms);
  s.max_restarts = config.spec.rdzv.max_restarts;
  s.crash_loop = CrashLoopSettings{a.crash_loop_count, Millis(a.crash_loop_window_ms)};
  s.crash_loop_answer_timeout = Millis(a.crash_loop_answer_timeout_ms);
  s.progress_file = !a.progress_file.empty();
  s.no_progress_restarts = a.no_progress_restarts;
  s.health_check_recheck = Millis(a.health_check_recheck_ms);
  s.health_check_give_up = Millis(a.health_check_give_up_ms);
  s.max_requeues = a.requeue;
  return s;
}

}  // namespace

ElasticAgent::ElasticAgent(EventLoop& loop, const LaunchConfig& config, const EnvMap& env, WorkerPlan plan)
    : config_(config),
      env_(env),
      plan_(std::move(plan)),
      loop_(loop),
      stdout_console_(loop, STDOUT_FILENO),
      stderr_console_(loop, STDERR_FILENO) {
  status_.nproc = config.spec.nproc;
  supervision_ = SupervisionSettingsOf(config);
  log_source_ = stderr_console_.AddSource(nullptr);
  SetLogSink([this](const std::string& line) { LogToConsole(line); });
  std::string warning;
  python_shim_dir_ = TorchShimDir(env_, AgentExePath(), &warning);
  if (!warning.empty()) Log(LogLevel::kWarning, "{}", warning);
}

ElasticAgent::~ElasticAgent() {
  // No orphans: whatever is left of any worker group goes with the agent.
  for (pid_t pgid : OwnGroups(ReadProcTable(), getpid(), KnownGroups())) SignalGroup(pgid, SIGKILL);
  for (auto& w : workers_) {
    if (w->alive && !w->stuck) waitpid(w->child.pid, nullptr, 0);
  }
  KillLeftovers();  // what left the groups (setsid, double fork) came back to us
                    // (not the unkillable ones: SIGKILLed, never waited for)
  ReapExited(Spared());  // the zygote is reaped by its own destructor
  StopFileTimer();
  if (signal_fd_) loop_.Remove(signal_fd_.get());
  sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
  workers_.clear();  // their outputs go before the consoles they write to
  DrainConsoles();   // what was logged since Run's drain
  SetLogSink(nullptr);
}

// The agent's own lines share stderr with its workers' (one queue: the order
// stays that of the events). Past the source's limit they are counted, not kept.
void ElasticAgent::LogToConsole(const std::string& line) {
  if (stderr_console_.over_limit(log_source_)) {
    ++log_lines_dropped_;
    return;
  }
  if (log_lines_dropped_ > 0) {
    stderr_console_.Write(log_source_, fmt::format("elasticrun: warning: {} log line(s) dropped: stderr "
                                                   "did not take them\n", log_lines_dropped_));
    log_lines_dropped_ = 0;
  }
  stderr_console_.Write(log_source_, line);
}

void ElasticAgent::DrainConsoles() {
  auto deadline = loop_.Now() + Millis(config_.agent.console_drain_timeout_ms);
  size_t dropped_out = stdout_console_.DrainUntil(deadline, loop_.clock());
  size_t dropped_err = stderr_console_.DrainUntil(deadline, loop_.clock());
  if (dropped_out + dropped_err == 0) return;
  // Said straight to stderr (best effort: it may be what did not take the text).
  SetLogSink(nullptr);
  Log(LogLevel::kWarning, "{} byte(s) of output to stdout and {} to stderr not written: the console took "
      "nothing for --console-drain-timeout={}s at exit", dropped_out, dropped_err,
      config_.agent.console_drain_timeout_ms / 1000.0);
  SetLogSink([this](const std::string& line) { LogToConsole(line); });
}

bool ElasticAgent::SetUpSignals(std::string* err) {
  sigemptyset(&handled_);
  handled_list_ = config_.spec.signals_to_handle;
  for (int sig : {SIGUSR1, SIGUSR2}) {
    if (std::find(handled_list_.begin(), handled_list_.end(), sig) == handled_list_.end()) {
      handled_list_.push_back(sig);
    }
  }
  for (int sig : handled_list_) sigaddset(&handled_, sig);
  // Orphans of the workers are reparented to us (subreaper): SIGCHLD says one exited.
  sigaddset(&handled_, SIGCHLD);
  // Job control (Ctrl-Z, Slurm's suspend): the workers are in groups of their own,
  // which neither a terminal nor proctrack/pgid reaches (OnJobControl).
  sigaddset(&handled_, SIGTSTP);
  sigaddset(&handled_, SIGCONT);
  if (sigprocmask(SIG_BLOCK, &handled_, &original_mask_) != 0) {
    *err = fmt::format("sigprocmask: {}", strerror(errno));
    return false;
  }
  // A closed console must not kill the agent; workers get SIGPIPE back (child_process.cc).
  signal(SIGPIPE, SIG_IGN);
  // An inherited SIG_IGN for SIGCHLD would make the kernel reap workers before we can.
  signal(SIGCHLD, SIG_DFL);
  signal_fd_.Reset(signalfd(-1, &handled_, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signal_fd_) {
    *err = fmt::format("signalfd: {}", strerror(errno));
    return false;
  }
  return loop_.Add(signal_fd_.get(), EPOLLIN, [this](uint32_t) { OnSignal(); }, err);
}

void ElasticAgent::OnSignal() {
  signalfd_siginfo info;
  while (read(signal_fd_.get(), &info, sizeof(info)) == sizeof(info)) {
    int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) {
      ReapOrphans();
      continue;
    }
    if (sig == SIGTSTP || sig == SIGCONT) {
      OnJobControl(sig);
      continue;
    }
    bool terminating = std::find(config_.spec.signals_to_handle.begin(), config_.spec.signals_to_handle.end(),
                                 sig) != config_.spec.signals_to_handle.end();
    if (terminating && sig == SIGTERM && config_.agent.spank_wrapped) {
      // Slurm ends a step with SIGTERM (scancel, the time limit, preemption), to
      // every process of the step and more than once: one plain line from node 0,
      // not a warning per signal and node.
      Log(cancel_told_ ? LogLevel::kDebug : JobEvent(LogLevel::kInfo), "{}",
          SlurmStopLine(config_.agent.job_end_time, static_cast<int64_t>(std::time(nullptr))));
      cancel_told_ = true;
    } else {
      Log(JobEvent(terminating ? LogLevel::kWarning : LogLevel::kInfo), "got {}: {}", SignalName(sig),
          terminating ? "stopping the workers" : "forwarding it to every worker");
    }
    terminated_ = terminated_ || terminating;
    if (terminating) {
      // The same signal reaches the preloaded interpreter and a running scontrol
      // (Slurm signals every process of the step): their end is expected, not news.
      if (zygote_) zygote_->Stopping();
      if (comment_) comment_->Stopping();
      if (grow_) grow_->Stopping();
    }
    Dispatch(Event{terminating ? EventKind::kTerminate : EventKind::kForward, sig, {}, {}});
  }
}

// SIGTSTP (a terminal's Ctrl-Z, forwarded by the guardian; the first signal of
// Slurm's suspend): passed to every worker group, whose default action stops
// them (a worker's own handler runs, as under a shell), then the agent stops
// itself, as a process in a stopped job does. SIGCONT (fg/bg, Slurm's resume)
// continued the agent; it is passed on so the workers continue too.
void ElasticAgent::OnJobControl(int sig) {
  if (sig == SIGTSTP) {
    Log(LogLevel::kInfo, "got SIGTSTP: stopping every worker and this agent until SIGCONT");
    Dispatch(Event{EventKind::kForward, SIGTSTP, {}, {}});
    job_stopped_ = true;
    raise(SIGSTOP);
    return;  // continued: the SIGCONT that did it is read next
  }
  // Slurm sends SIGCONT before every SIGTERM it ends a step with (scancel, time
  // limit): worth a line only when it resumes a stopped job.
  Log(job_stopped_ ? LogLevel::kInfo : LogLevel::kDebug, "got SIGCONT: continuing every worker");
  job_stopped_ = false;
  Dispatch(Event{EventKind::kForward, SIGCONT, {}, {}});
}

// Job-level events (a worker failure and the restart it causes, the failure
// summary, a signal Slurm sends every node) are told once, by the node of group
// rank 0, like srun's own messages; the other nodes log them only at -v. Before
// the first round every node counts as rank 0.
LogLevel ElasticAgent::JobEvent(LogLevel level) const {
  // A node kept out by its health check is no teller of the job's events.
  return round_.group_rank == 0 && !status_.health_failing_since ? level : LogLevel::kDebug;
}

const char* ElasticAgent::RestartsFlag() const {
  return config_.agent.spank_wrapped ? "--elastic-max-restarts" : "--max-restarts";
}

void ElasticAgent::SetCallbacks() {
  RendezvousHandler::Callbacks cb;
  cb.on_round = [this](const RoundInfo& info) {
    round_ = info;
    gloo_ifname_ = ChooseGlooInterface(hostname_resolves_, info.store_addr, info.group_world_size);
    OnRoundFormed();
    Event e{EventKind::kRoundReady};
    e.restarts_used = info.restarts_used;
    e.group_rank = info.group_rank;
    Dispatch(std::move(e));
  };
  cb.on_restart_required = [this](const std::string& reason, RestartCause cause) {
    // A node whose workers all finished never restarts them (a failure crossing its
    // success: the host ends the job next, rendezvous/late_success.h).
    if (status_.state == WorkerState::kSucceeded)
      Log(LogLevel::kDebug, "the rendezvous asks for a restart ({}); this node's workers have "
          "finished", reason);
    else
      Log(JobEvent(LogLevel::kInfo), "the rendezvous asks for a restart: {}", reason);
    AskSlurm();  // a round is about to form: Slurm answers while the workers stop
    Event e{EventKind::kRestartRequired, 0, {}, reason};
    e.cause = cause;
    Dispatch(std::move(e));
  };
  cb.on_job_failed = [this](const WorkerFailure& f, const JobEnd& end) {
    Dispatch(Event{EventKind::kJobFailed, 0, f, {}, end});
  };
  cb.on_done = [this] {
    if (status_.state == WorkerState::kInit && status_.health_failing_since)
      Log(LogLevel::kInfo, "the job finished while this node was kept out by its health check");
    else if (status_.state == WorkerState::kInit)
      Log(LogLevel::kInfo, "the job finished while this node stood by (no round needed its workers)");
    Dispatch(Event{EventKind::kDone, 0, {}, {}});
  };
  cb.on_fatal = [this](const JobEnd& end, const std::string& message) {
    Dispatch(Event{EventKind::kFatal, 0, {}, message, end});
  };
  rendezvous_->SetCallbacks(std::move(cb));
}

int ElasticAgent::Run(std::unique_ptr<RendezvousHandler> rendezvous, EventWriter* events) {
  rendezvous_ = std::move(rendezvous);
  events_ = events;
  std::string err;
  // Whatever the workers start, setsid() and double forks included, stays below us:
  // orphans are reparented to the agent, which kills them when the group stops.
  bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  if (!subreaper) {
    Log(LogLevel::kWarning, "prctl(PR_SET_CHILD_SUBREAPER): {}: processes that leave a worker's "
        "process group may outlive it", strerror(errno));
  }
  if (!SetUpSignals(&err) || !StartFileTimer(&err)) {
    Log(LogLevel::kError, "{}", err);
    return 1;
  }
  StartZygote(subreaper);  // imports while the rendezvous runs
  // A name lookup (may wait on DNS): once, here, never on the loop (gloo_interface.h).
  if (!config_.spec.rdzv.standalone && config_.spec.rdzv.max_nodes > 1)  // else one node: no gloo choice
    hostname_resolves_ = HostnameResolvesUsably(config_.spec.rdzv.hostname);
  SetCallbacks();
  StartComment(events);
  StartGrow(events);
  ListenToEvents(events);
  // Slurm's verdict on this node before each later round (slurm_node_state.h).
  auto node = env_.find("SLURMD_NODENAME");
  if (!config_.spec.rdzv.standalone && node != env_.end() && env_.count("SLURM_JOB_ID")) slurm_node_ = node->second;
  Log(LogLevel::kDebug, "rendezvous: {}; {} worker(s): {}", rendezvous_->Describe(), config_.spec.nproc,
      fmt::join(plan_.argv, " "));
  JoinRound();
  loop_.Run();
  if (comment_source_) comment_source_->SetListener(nullptr);
  DrainConsoles();
  return exit_code_;
}

void ElasticAgent::Dispatch(Event event) {
  // The state machine has started the workers: anything that happens meanwhile
  // (a signal, the rendezvous) finds them started, without the zygote if need be.
  if (start_pending_) {
    Log(LogLevel::kDebug, "an event came before the preloaded interpreter was ready: starting the "
        "workers normally");
    StartWorkersNow();
  }
  queue_.push_back(std::move(event));
  // The outer Dispatch handles it next (no re-entrance), or the end of the attempt
  // once its leftovers are dead (OnLeftoversKilled).
  if (dispatching_ || ending_) return;
  RunQueue();
}

// The transitions' actions in order, then the next event's; paused while the
// leftovers of an attempt are being killed (their deaths are loop events), and at
// the end while the final Comment or scontrol requeue runs (Resume).
void ElasticAgent::RunQueue() {
  dispatching_ = true;
  while (!ending_ && !waiting_ && (!actions_.empty() || !queue_.empty())) {
    if (!actions_.empty()) {
      Action action = actions_.front();
      actions_.pop_front();
      Execute(action);
      continue;
    }
    Event e = std::move(queue_.front());
    queue_.pop_front();
    WorkerState before = status_.state;
    Transition t = StepWorkers(status_, e, loop_.Now(), supervision_);
    status_ = std::move(t.status);
    if (before != status_.state) {
      Log(LogLevel::kDebug, "state {} -> {}", WorkerStateName(before), WorkerStateName(status_.state));
    }
    actions_.insert(actions_.end(), t.actions.begin(), t.actions.end());
  }
  dispatching_ = false;
  // The Exit and what follows it (the final Comment, --requeue) are done.
  if (status_.exited && actions_.empty() && !ending_ && !waiting_ && !loop_.stopped()) {
    Log(LogLevel::kDebug, "exit {}", exit_code_);
    loop_.Stop();
  }
}

void ElasticAgent::Execute(const Action& action) {
  switch (action.kind) {
    case ActionKind::kStartWorkers:
      StartWorkers();
      break;
    case ActionKind::kSignalWorkers:
      SignalWorkers(action.signal);
      break;
    case ActionKind::kArmStopTimer:
      ArmStopTimer(action.deadline);
      break;
    case ActionKind::kReportFailure:
      rendezvous_->ReportWorkerFailure(status_.failure);
      AskSlurm();  // as on_restart_required
      break;
    case ActionKind::kReportSucceeded:
      rendezvous_->ReportSucceeded();
      break;
    case ActionKind::kShutdownRendezvous:
      rendezvous_->Shutdown(action.signal);  // the signal that stops this agent, if one did
      break;
    case ActionKind::kEndAttempt:
      EndAttempt();
      break;
    case ActionKind::kJoin:
      Rejoin();
      break;
    case ActionKind::kExit:
      Finish(action.exit_code);
      break;
    case ActionKind::kCheckKill:
      CheckKill();
      break;
    case ActionKind::kRequeue:
      waiting_ = MaybeRequeue(action.end);
      break;
    case ActionKind::kEndJob:
      EndJob(action.reason, action.deadline);
      break;
    case ActionKind::kReadProgress:
      ReadProgress();
      break;
    case ActionKind::kEndHere:
      EndHere(action.reason, action.exit_code);
      break;
    case ActionKind::kJoinRendezvous:
      JoinWithNodeState();
      break;
    case ActionKind::kRetryHealthCheck:
      RetryHealthCheck(action.deadline);
      break;
    case ActionKind::kGiveUp:
      GiveUpHealthCheck(action.exit_code);
      break;
    case ActionKind::kCollectStacks:
      CollectStacks(action.local_rank);
      break;
    case ActionKind::kKeepHungWorker:
      KeepHungWorker(action.local_rank);
      break;
  }
}

void ElasticAgent::Rejoin() {
  if (status_.has_failure) {
    Log(JobEvent(LogLevel::kInfo), "{}",
        FormatRejoinLine(status_.failure, round_.restarts_used, config_.spec.rdzv.max_restarts, RestartsFlag()));
  } else {
    Log(LogLevel::kDebug, "restarting the workers");
  }
  JoinRound();
}

// With --preload the workers wait for the zygote's import (its "ready" is a loop
// event): the loop goes on serving the rendezvous, the store and the consoles.
void ElasticAgent::StartWorkers() {
  if (zygote_ && zygote_->starting()) {
    Log(LogLevel::kDebug, "waiting for the preloaded interpreter before starting the workers");
    start_pending_ = true;
    zygote_->WhenSettled([this] {
      if (start_pending_) StartWorkersNow();
    });
    return;
  }
  StartWorkersNow();
}

// Every group id this agent gave its workers, this attempt's and earlier ones'.
std::vector<pid_t> ElasticAgent::KnownGroups() const {
  std::vector<pid_t> groups = old_groups_;
  for (const auto& w : workers_)
    if (w->child.pid > 0) groups.push_back(w->child.pid);
  return groups;
}

void ElasticAgent::StartWorkersNow() {
  start_pending_ = false;
  // Earlier groups that still hold one of our processes; the others are forgotten (an
  // empty group's id may be reused by an unrelated group: never signal it).
  old_groups_ = OwnGroups(ReadProcTable(), getpid(), KnownGroups());
  workers_.clear();
  ++start_attempt_;
  stop_signal_ = 0;
  Dispatch(Event{EventKind::kWorkersStarted});  // the crash-loop window starts now
  if (file_timer_) file_timer_->Clear();  // the timers of the last attempt's pids
  std::string attempt_dir = fmt::format("{}/attempt_{}", plan_.log_dir, round_.round);
  if (!config_.agent.duplicate_stdout_filters.empty() || !config_.agent.duplicate_stderr_filters.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(attempt_dir, ec);
  }
  duplicate_out_ = OpenDuplicateSink(config_.agent.duplicate_stdout_filters, attempt_dir + "/filtered_stdout.log");
  duplicate_err_ = OpenDuplicateSink(config_.agent.duplicate_stderr_filters, attempt_dir + "/filtered_stderr.log");
  Log(LogLevel::kDebug, "starting {} worker(s), restart count {}, world size {}, master {}:{}",
      config_.spec.nproc, round_.round, round_.world_size, round_.store_addr, round_.store_port);
  if (zygote_ && !zygote_->ready() && !zygote_->why().empty() && !zygote_warned_) {
    zygote_warned_ = true;
    Log(LogLevel::kWarning, "--preload: the preloaded interpreter cannot be used: {}: workers start "
        "normally", zygote_->why());
  }
  std::vector<std::pair<int, std::string>> failed;
  for (int local_rank = 0; local_rank < config_.spec.nproc; ++local_rank) {
    auto w = std::make_unique<Worker>();
    w->local_rank = local_rank;
    w->global_rank = round_.rank_offset + local_rank;
    std::string dir = fmt::format("{}/{}", attempt_dir, local_rank);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    w->error_file = dir + "/error.json";
    unlink(w->error_file.c_str());
    std::string err;
    if (!StartWorker(w.get(), &err)) failed.emplace_back(local_rank, err);
    workers_.push_back(std::move(w));
  }
  for (auto& [lr, err] : failed) StartFailed(workers_[lr].get(), err);
}

bool ElasticAgent::StartWorker(Worker* w, std::string* err) {
  int lr = w->local_rank;
  std::string dir = fmt::format("{}/attempt_{}/{}", plan_.log_dir, round_.round, lr);
  std::string prefix = LogLinePrefix(config_.agent.log_line_prefix_template,
                                     {config_.spec.role, w->global_rank, lr, config_.spec.rdzv.hostname});
  bool on_console = config_.agent.local_ranks_filter.empty() ||
                    std::count(config_.agent.local_ranks_filter.begin(), config_.agent.local_ranks_filter.end(), lr);
  int redirect = config_.agent.redirects.For(lr);
  int to_file = redirect | config_.agent.tee.For(lr);
  auto make = [&](int mask, Console* console, const char* name) {
    UniqueFd file;
    if (to_file & mask) file = OpenLog(dir + "/" + name);
    Console* to = (on_console && !(redirect & mask)) ? console : nullptr;
    return std::make_unique<WorkerOutput>(loop_, prefix, to, std::move(file),
                                          mask == kStdOut ? duplicate_out_ : duplicate_err_);
  };
  w->out = make(kStdOut, &stdout_console_, "stdout.log");
  w->err = make(kStdErr, &stderr_console_, "stderr.log");
  if (!w->out->Open(err) || !w->err->Open(err)) return false;

  WorkerEnvInput in;
  in.base = &env_;
  in.config = &config_;
  in.round = round_;
  in.local_rank = lr;
  in.error_file = w->error_file;
  in.bound_cores = lr < static_cast<int>(plan_.cores.size()) ? plan_.cores[lr] : 0;
  in.gloo_ifname = gloo_ifname_;
  in.python_shim_dir = python_shim_dir_;
  in.timer_file = file_timer_ ? file_timer_->path() : std::string();
  in.task = lr < static_cast<int>(plan_.tasks.size()) ? &plan_.tasks[lr] : nullptr;
  ChildSpec child;
  child.path = plan_.path;
  child.argv = plan_.argv;
  child.env = EnvToStrings(BuildWorkerEnv(in));
  child.stdout_fd = w->out->child_fd();
  child.stderr_fd = w->err->child_fd();
  child.child_mask = original_mask_;
  child.default_signals = handled_list_;
  if (plan_.bind) {
    child.in_child = [this, lr](const char** call) { return plan_.bind(lr, call); };
    child.in_child_what = fmt::format("binding local rank {} (cpus {})", lr,
                                      lr < static_cast<int>(plan_.cpus.size()) ? plan_.cpus[lr] : "?");
  }
  if (zygote_ && zygote_->ready()) {
    StartFromZygote(w, child);
    return true;  // completes from the zygote's reply
  }
  bool ok = SpawnChild(child, &w->child, err);
  w->out->CloseChildEnd();
  w->err->CloseChildEnd();
  return ok && Started(w, err);
}

bool ElasticAgent::Started(Worker* w, std::string* err) {
  w->alive = true;
  return loop_.Add(w->child.pidfd.get(), EPOLLIN, [this, w](uint32_t) { OnWorkerExit(w); }, err);
}

// Counted as an exit (127) by the state machine, as a worker that failed at once.
void ElasticAgent::StartFailed(Worker* w, const std::string& err) {
  Log(LogLevel::kError, "cannot start local rank {}: {}", w->local_rank, err);
  WorkerFailure f;
  f.global_rank = w->global_rank;
  f.local_rank = w->local_rank;
  f.host = config_.spec.rdzv.hostname;
  f.exit_code = 127;
  f.time_unix_ms = UnixMillisNow();
  f.message = "cannot start worker: " + err;
  Dispatch(Event{EventKind::kWorkerExited, 0, f, {}});
}

void ElasticAgent::StartZygote(bool subreaper) {
  if (config_.spec.preload.empty()) return;
  std::string script = ZygoteScript(AgentExePath());
  std::string why;
  if (!ParsePythonCommand(plan_.argv, config_.spec.python, &python_command_)) {
    why = "the program does not run in Python (not PYTHON [-u] script or -m module)";
  } else if (!subreaper) {
    why = "the agent is not a child subreaper";
  } else if (script.empty()) {
    why = "zygote.py (share/slurm-elastic/python) is not installed next to elasticrun";
  } else {
    // What every worker gets, from local rank 0's environment: the per-rank values
    // are replaced in each worker (docs/elasticrun.md, "Preloading").
    WorkerEnvInput in;
    in.base = &env_;
    in.config = &config_;
    in.bound_cores = plan_.cores.empty() ? 0 : plan_.cores[0];
    in.python_shim_dir = python_shim_dir_;
    ZygoteOptions o;
    o.python = plan_.path;
    o.script = script;
    o.unbuffered = python_command_.unbuffered;
    o.modules = config_.spec.preload;
    o.env = EnvToStrings(BuildWorkerEnv(in));
    o.child_mask = original_mask_;
    o.default_signals = handled_list_;
    o.ready_timeout = Millis(config_.agent.zygote_ready_timeout_ms);
    o.spawn_timeout = Millis(config_.agent.zygote_spawn_timeout_ms);
    zygote_ = std::make_unique<Zygote>(loop_);
    if (zygote_->Start(o, &why)) {
      Log(LogLevel::kDebug, "preloading {} in pid {}", fmt::join(config_.spec.preload, ","), zygote_->pid());
      return;
    }
    zygote_.reset();
  }
  Log(LogLevel::kWarning, "--preload: {}: workers start normally", why);
}

// The loop goes on while the zygote forks (issue 21): the worker counts as alive
// for the state machine meanwhile, and a stop that came first reaches it on arrival.
void ElasticAgent::StartFromZygote(Worker* w, const ChildSpec& child) {
  int lr = w->local_rank;
  const KernelBinding* binding = nullptr;
  if (plan_.kernel_binding && lr < static_cast<int>(plan_.kernel_binding->size())) {
    binding = &(*plan_.kernel_binding)[lr];
  }
  SpawnRequest r = MakeSpawnRequest(python_command_, child.env, child.default_signals, binding);
  auto kept = std::make_shared<ChildSpec>(child);  // for a normal start if it fails
  uint64_t attempt = start_attempt_;
  w->spawning = true;
  zygote_->Spawn(r, child.stdout_fd, child.stderr_fd,
                 [this, attempt, lr, kept](bool ok, ChildHandle handle, const std::string& why) {
                   OnZygoteSpawned(attempt, lr, *kept, ok, std::move(handle), why);
                 });
}

void ElasticAgent::OnZygoteSpawned(uint64_t attempt, int lr, const ChildSpec& child, bool ok,
                                   ChildHandle handle, const std::string& why) {
  Worker* w = attempt == start_attempt_ && lr < static_cast<int>(workers_.size()) ? workers_[lr].get() : nullptr;
  if (w == nullptr || !w->spawning) {  // its attempt is over: nothing waits for it
    if (ok) SignalGroup(handle.pid, SIGKILL);  // reaped by ReapOrphans
  } else {
    w->spawning = false;
    std::string err;
    bool started = ok;
    if (ok) {
      w->child = std::move(handle);
    } else {
      if (!zygote_failed_told_) {
        Log(LogLevel::kWarning, "the preloaded interpreter cannot start local rank {}: {}: workers start "
            "normally from now on", lr, why);
      }
      zygote_failed_told_ = true;
      started = SpawnChild(child, &w->child, &err);
    }
    w->out->CloseChildEnd();
    w->err->CloseChildEnd();
    if (started) started = Started(w, &err);
    if (!started) {
      StartFailed(w, err);
    } else if (int sig = LateStartSignal(status_.state, stop_signal_); sig != 0) {
      SignalGroup(w->child.pid, sig);
    }
  }
  if (reap_deferred_ && !(zygote_ && zygote_->spawning())) {
    reap_deferred_ = false;
    ReapOrphans();
  }
}

// Processes below the agent that are not the workers' (their stop and leftovers
// spare them): the zygote, and scontrol asking Slurm about this node (it runs
// while the workers stop: AskSlurm).
std::vector<pid_t> ElasticAgent::Spared() const {
  std::vector<pid_t> spared;
  if (zygote_ && zygote_->pid() > 0) spared.push_back(zygote_->pid());
  if (node_reader_ && node_reader_->pid() > 0) spared.push_back(node_reader_->pid());
  if (comment_ && comment_->pid() > 0) spared.push_back(comment_->pid());
  if (grow_)
    for (pid_t pid : grow_->pids()) spared.push_back(pid);
  return spared;
}

void ElasticAgent::OnWorkerExit(Worker* w) {
  WorkerFailure f;
  if (!ReapChild(w->child.pid, &f.exit_code, &f.signal)) return;
  loop_.Remove(w->child.pidfd.get());
  w->child.pidfd.Reset();
  w->alive = false;
  // Everything the worker wrote is in its pipes now: print it before reacting.
  w->out->Drain();
  w->err->Drain();
  f.global_rank = w->global_rank;
  f.local_rank = w->local_rank;
  f.host = config_.spec.rdzv.hostname;
  f.time_unix_ms = UnixMillisNow();
  if (IsFailure(f)) {
    ReadErrorFile(w->error_file, &f.message, &f.traceback);
    if (w->hang) DescribeHang(w, &f);
    if (status_.state == WorkerState::kHealthy) {
      Log(JobEvent(LogLevel::kWarning), "rank {} (local rank {}) failed: {}", f.global_rank,
          f.local_rank, DescribeExit(f));
    }
  }
  Log(LogLevel::kDebug, "rank {} exited: {}", f.global_rank, DescribeExit(f));
  Dispatch(Event{EventKind::kWorkerExited, 0, f, {}});
}

void ElasticAgent::SignalWorkers(int sig) {
  if (sig == SIGKILL) {
    Log(LogLevel::kWarning, "workers still running after --shutdown-timeout={}s: sending SIGKILL",
        config_.agent.shutdown_timeout_ms / 1000.0);
  }
  if (status_.state == WorkerState::kUnhealthy) stop_signal_ = sig;  // for a late start
  std::vector<pid_t> groups = Spared();  // the zygote leads its own group
  for (auto& w : workers_) {
    if (w->child.pid > 0 && SignalGroup(w->child.pid, sig)) groups.push_back(w->child.pid);
    // A --native-stacks tool reading a hung worker ends by itself or at its timeout.
    if (w->native_running) groups.push_back(w->native_stacks->pid());
  }
  // Stopping (not forwarding), or job control: the ones that left their worker's
  // group get it too. A setsid() escape leads an orphaned group, where the kernel
  // discards SIGTSTP: it gets SIGSTOP.
  bool job_control = sig == SIGTSTP || sig == SIGCONT;
  if (status_.state == WorkerState::kUnhealthy || job_control) {
    int n = SignalDescendants(getpid(), sig == SIGTSTP ? SIGSTOP : sig, groups);
    if (n > 0) Log(LogLevel::kDebug, "sent {} to {} process(es) outside the worker groups", SignalName(sig), n);
  }
}

void ElasticAgent::ReapOrphans() {
  if (zygote_ && zygote_->spawning()) {  // a worker that died at once has no known pid yet
    reap_deferred_ = true;
    return;
  }
  std::vector<pid_t> workers;
  for (auto& w : workers_) {
    if (w->alive) workers.push_back(w->child.pid);  // reaped through their pidfd
    if (w->native_running) workers.push_back(w->native_stacks->pid());  // reaped by its HealthCheck
  }
  for (pid_t pid : Spared()) workers.push_back(pid);  // reaped through its pidfd (zygote.h, HealthCheck)
  if (health_ && health_->pid() > 0) workers.push_back(health_->pid());  // reaped by HealthCheck
  if (progress_reader_ && progress_reader_->pid() > 0) workers.push_back(progress_reader_->pid());  // too
  if (requeuer_ && requeuer_->pid() > 0) workers.push_back(requeuer_->pid());  // and scontrol
  ReapExited(workers);
}

void ElasticAgent::KillLeftovers() {
  std::string err;
  auto deadline = MonoClock::now() + Millis(std::max(config_.agent.shutdown_timeout_ms, config_.agent.min_kill_wait_ms));
  if (!KillDescendants(getpid(), deadline, &err, StuckPids())) Log(LogLevel::kWarning, "{}", err);
}

void ElasticAgent::ArmStopTimer(MonoClock::time_point deadline) {
  auto delay = std::chrono::ceil<Millis>(deadline - loop_.Now());
  stop_timer_ = loop_.After(delay, [this] { Dispatch(Event{EventKind::kStopTimeout, 0, {}, {}}); });
}

}  // namespace elastic
