// ElasticAgent: the shell around the pure supervision logic (worker_state.h).
// It owns the event loop, the rendezvous, the worker processes and their output,
// turns what happens (pidfd readable, signalfd readable, timer, rendezvous
// callback) into Events, and carries out the Actions that Step() returns.
//
// Signals: the terminating ones (--signals-to-handle) and SIGUSR1/SIGUSR2 are
// blocked from the start and read through a signalfd; workers exec with the
// original mask. Worker exits come through pidfds. Nothing polls.
//
// Containment: the agent is a child subreaper, so a process that leaves its worker's
// group (setsid, double fork) is reparented to the agent, not to init. SIGCHLD (on the
// same signalfd) reaps such orphans; a stop signals them with the groups, and the end
// of an attempt and the destructor SIGKILL every descendant left (descendants.h).
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/log.h"
#include "launcher/child_process.h"
#include "launcher/launch_config.h"
#include "launcher/worker_output.h"
#include "launcher/worker_state.h"
#include "rendezvous/rendezvous_handler.h"

namespace elastic {

// What every worker of an attempt runs, and where its files go.
struct WorkerSpec {
  std::string path;                 // resolved executable
  std::vector<std::string> argv;
  std::string log_dir;              // LOG_DIR/attempt_N/LOCAL_RANK/...
  std::vector<std::string> cpus;    // per local rank, for binding ("" = unbound)
  std::vector<int> cores;           // per local rank (OMP_NUM_THREADS); 0 = unbound
  // Binds the calling process as local rank N: runs in the worker before exec,
  // sharing the agent's memory, so it only makes system calls. Returns 0 or an
  // errno value and the failed call's name (a static string). May be empty.
  std::function<int(int local_rank, const char** call)> bind;
};

struct Worker {
  int local_rank = 0;
  int global_rank = 0;
  ChildHandle child;
  bool alive = false;
  std::string error_file;
  std::unique_ptr<WorkerOutput> out;
  std::unique_ptr<WorkerOutput> err;
};

class ElasticAgent {
 public:
  ElasticAgent(const LaunchConfig& config, const EnvMap& env, WorkerSpec spec);
  ~ElasticAgent();

  // Runs the job; returns the exit code (see worker_state.h).
  int Run(std::unique_ptr<RendezvousHandler> rendezvous);
  EventLoop& loop() { return loop_; }

 private:
  bool SetUpSignals(std::string* err);
  void OnSignal();
  void SetCallbacks();
  LogLevel JobEvent(LogLevel level) const;
  void Dispatch(Event event);
  void Execute(const Action& action);

  void StartWorkers();
  bool StartWorker(Worker* w, std::string* err);
  void OnWorkerExit(Worker* w);
  void SignalWorkers(int sig);
  void ReapOrphans();
  void KillLeftovers();
  void ArmStopTimer(MonoClock::time_point deadline);
  void EndAttempt();
  void Finish(int exit_code);

  const LaunchConfig& config_;
  const EnvMap& env_;
  WorkerSpec spec_;
  EventLoop loop_;
  std::unique_ptr<RendezvousHandler> rendezvous_;
  GroupStatus status_;
  RoundInfo round_;
  std::string python_shim_dir_;  // ELASTIC_TORCH_NO_LIBUV=1 (worker_env.h)
  std::string gloo_ifname_;  // GLOO_SOCKET_IFNAME for this round's workers (gloo_interface.h)
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<pid_t> old_groups_;   // groups of earlier attempts: killed at exit if still there
  UniqueFd signal_fd_;
  sigset_t handled_{};
  sigset_t original_mask_{};
  std::vector<int> handled_list_;
  Timer stop_timer_;
  std::deque<Event> queue_;
  bool dispatching_ = false;
  int exit_code_ = 1;
};

}  // namespace elastic
