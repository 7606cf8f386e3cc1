// The one runner of scontrol beside the workers: `scontrol requeue JOB` (requeue.h)
// and `scontrol --oneliner show node NAME` (slurm_node_state.h). elasticrun does
// not link libslurm (its structures change from release to release, and the agent
// runs outside Slurm and in containers without it): it runs the command.
//
// Contracts:
// - `scontrol ARGS` runs through /bin/sh as a HealthCheck (health_check.h): its own
//   process group, the agent's environment (SLURM_CONF), the original signal mask;
//   its stderr (and its stdout unless spec.output_path is set) appended to log_path.
// - Every run has a deadline (spec.timeout): past it the group is SIGKILLed. A
//   controller that does not answer, or scontrol's own retries (it retries a
//   missing slurm.conf for 60 s), never hold the agent longer.
// - When SLURM_CONF names a file that is not there (a container shows the job's
//   environment, not the node's files: tests/containers/test_oci.py), scontrol is
//   not run at all: the run fails at once with kScontrolNoConfig.
// - done(ok, output, why) is called once, from the loop, never from Run itself:
//   `output` is stdout (at most kScontrolMaxOutput bytes) when spec.output_path is
//   set, `why` says what failed (DescribeScontrolResult; the output is in log_path). pid(): the process while
//   it runs (-1: none); its owner must neither reap it nor kill it with the
//   workers' leftovers (agent.h: Spared, ReapOrphans).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "launcher/health_check.h"

namespace elastic {

constexpr int kScontrolNoConfig = 78;            // EX_CONFIG: SLURM_CONF names no file here
constexpr size_t kScontrolMaxOutput = 64 * 1024;  // of its stdout, read

struct ScontrolSpec {
  std::string scontrol = "scontrol";
  // Required, positive (a run without one fails at once): from AgentSettings
  // (node_state_timeout_ms, requeue_timeout_ms, slurm_comment_timeout_ms).
  std::chrono::milliseconds timeout{};
  std::string label = "scontrol";  // the log's header line
  std::string log_path;
  std::string output_path;  // "": stdout to the log; else this file (private, truncated), read once it exited
  std::vector<std::string> env;  // KEY=VALUE
  sigset_t child_mask{};
  std::vector<int> default_signals;
  HostRunnerClient* host = nullptr;  // on the host for an agent in an image (health_check.h)
};

// The shell command for `scontrol ARGS` (ARGS already checked by the caller: they
// pass through /bin/sh), with the SLURM_CONF check before it.
std::string ScontrolCommand(const std::string& scontrol, const std::string& args);

// "no answer within 10 s (killed)", "'scontrol' not found on PATH", "SLURM_CONF names
// no file here (...)", "exit code 1", ... ("" when it passed).
std::string DescribeScontrolResult(const HealthResult& r, std::chrono::milliseconds timeout,
                                   const std::string& scontrol);

class Scontrol {
 public:
  Scontrol(EventLoop& loop, ScontrolSpec spec);
  void Run(const std::string& args, std::function<void(bool ok, std::string output, std::string why)> done);
  pid_t pid() const { return run_ && run_->running() ? run_->pid() : -1; }
  const ScontrolSpec& spec() const { return spec_; }

 private:
  EventLoop& loop_;
  ScontrolSpec spec_;
  std::unique_ptr<HealthCheck> run_;
};

}  // namespace elastic
