// --health-check PROG: a site's or user's check (GPUs visible, file systems
// mounted, ...) run on this node before it joins each rendezvous round. A
// non-zero exit or running past --health-check-timeout (the check's process
// group is then SIGKILLed) keeps the node out of that round; the agent checks
// again every AgentSettings::health_check_recheck_ms (10 s) and joins as a
// latecomer once a check passes, and gives up (exit 1) when the checks have
// failed for AgentSettings::health_check_give_up_ms (10 min). Meanwhile it watches the rendezvous (RendezvousHandler::Watch): the job's end reaches
// it and it exits with the other nodes.
//
// Contracts:
// - PROG runs as `/bin/sh -c PROG` in its own process group, with the agent's
//   environment and the original signal mask; its stdout and stderr are
//   appended to `log_path` (LOG_DIR/health_check.log) after a header line.
// - Everything happens on the event loop: a pidfd says the check exited, a
//   timer enforces the timeout; `done` is called once, from the loop.
// - The owner must not reap pid() itself; destroying a running check SIGKILLs
//   its group and reaps it (cancels it, when it runs on the host).
// - With Spec::host (an agent in a container image) the command runs on the
//   node's host instead (host_runner.h): same shell, files, deadline and result.
#pragma once

#include <signal.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "launcher/child_process.h"
#include "launcher/host_runner.h"

namespace elastic {


struct HealthResult {
  bool passed = false;
  int exit_code = 0;      // when it exited
  int signal = 0;         // when a signal ended it
  bool timed_out = false;
  std::string error;      // it could not be started
};

// "exit code 3", "killed after the 60 s timeout", "signal SIGSEGV (11)", "cannot start: ...".
std::string DescribeHealthResult(const HealthResult& r, std::chrono::milliseconds timeout);

class HealthCheck {
 public:
  struct Spec {
    std::string command;
    // No default: each caller names its setting (AgentSettings: --health-check-timeout,
    // the scontrol and stack-collection timeouts); Start refuses a run without a deadline.
    std::chrono::milliseconds timeout{0};
    std::string log_path;
    std::vector<std::string> env;  // KEY=VALUE
    sigset_t child_mask{};
    std::vector<int> default_signals;
    std::string label = "health check";  // the log's header line (requeue.h runs scontrol too)
    std::string stdout_path;  // "": stdout to the log too; else this file, truncated (slurm_node_state.h)
    // Not null and alive: the command runs on the host (host_runner.h) with the
    // same files and deadline; pid() is then -1. Else (or once the runner is
    // gone) it runs here.
    HostRunnerClient* host = nullptr;
  };
  HealthCheck(EventLoop& loop, Spec spec);
  ~HealthCheck();
  HealthCheck(const HealthCheck&) = delete;
  HealthCheck& operator=(const HealthCheck&) = delete;

  // Starts one run. Returns false (and calls nothing) only when it could not start.
  bool Start(std::function<void(const HealthResult&)> done, std::string* err);
  pid_t pid() const { return child_.pid; }
  bool running() const { return running_; }

 private:
  void OnExit();
  void OnTimeout();
  void OnHostDone(const HostRunResult& r);

  EventLoop& loop_;
  Spec spec_;
  ChildHandle child_;
  bool running_ = false;
  bool timed_out_ = false;
  uint64_t host_run_ = 0;  // the run on the host (spec_.host), 0: none
  Timer timeout_;
  std::function<void(const HealthResult&)> done_;
};

}  // namespace elastic
