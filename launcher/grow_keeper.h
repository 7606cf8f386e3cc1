// GrowKeeper: the shell of --grow (grow_rule.h). The agent hosting the rendezvous
// (from the start, or after a takeover: it saw a job_start event) keeps one-node
// helper jobs queued for the nodes its world misses below MAX. Each helper job is
//   sbatch --parsable -N1 --job-name=elastic-grow-JOBID --elastic-join=JOBID
//          [--partition/--account of the main job] [the user's OPTIONS]
//          --wrap='srun PROGRAM ARGS'
// so its node runs the step's own command and joins the run (spank_plugin/join.cc).
// Every interval it asks `squeue --name=elastic-grow-JOBID` (its helpers, whoever
// submitted them: a successor after a failover finds its predecessor's), decides
// (DecideGrow) and runs at most one sbatch or scancel. At the end of the step
// (Finish; however it ends) `scancel --name=elastic-grow-JOBID` removes them all,
// queued or running; the plugin does the same in srun as a second net
// (spank_plugin/srun.cc), for an agent that was SIGKILLed.
//
// Every command is a child process on the loop with a deadline (scontrol.h); none
// is waited for. A failing squeue is retried at the next interval; a failing sbatch
// backs off (GrowBackoff). Outside Slurm, or on an agent that never hosts, nothing runs.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/grow_options.h"
#include "launcher/grow_rule.h"
#include "launcher/job_events.h"
#include "launcher/native_stacks.h"  // ShellQuote
#include "launcher/scontrol.h"

namespace elastic {

// What a helper job runs and is submitted as.
struct GrowPlan {
  std::string job_id;     // the main job (SLURM_JOB_ID)
  std::string partition;  // the main job's (SLURM_JOB_PARTITION), unless OPTIONS name one
  std::string account;    // the main job's (SLURM_JOB_ACCOUNT), unless OPTIONS name one
  GrowOptions options;
  std::vector<std::string> srun_args;  // after "srun": the step's options and command
};

// The helper jobs' name: what squeue and scancel select them by.
std::string GrowJobName(const std::string& job_id);
// sbatch's arguments (for /bin/sh) for one helper job.
std::string GrowSbatchCommandArgs(const GrowPlan& plan);
// The environment sbatch runs with (and its job inherits): `env` less the step's
// Slurm variables (SLURM_*, but SLURM_CONF), the plugin's and elasticrun's own
// (PET_*, TORCHELASTIC_*, ELASTIC_* but the user's ELASTIC_TORCH_NO_LIBUV, SPANK_*,
// _SLURM_SPANK_*): the helper's srun must see its own job, not the main step
// (SLURM_NTASKS would be its -n).
std::vector<std::string> GrowEnv(const std::vector<std::string>& env);

class GrowKeeper {
 public:
  // `spec`: the deadline, log path, environment and signal mask of the children
  // (spec.scontrol is replaced by squeue, sbatch and scancel).
  GrowKeeper(EventLoop& loop, GrowPlan plan, GrowSettings settings, ScontrolSpec spec);

  void OnEvent(const JobEvent& event);
  // The step ends: cancels every helper job (scancel --name), then done() from the
  // loop. False (done not called) when this agent never hosted.
  bool Finish(std::function<void()> done);
  // A terminating signal came: no more submissions (Finish still cancels).
  void Stopping() { stopping_ = true; }
  std::vector<pid_t> pids() const;

 private:
  void Tick();
  void OnSqueue(bool ok, const std::string& out, const std::string& why);
  void Act();
  void Later(Millis delay);

  EventLoop& loop_;
  GrowPlan plan_;
  GrowSettings settings_;
  Scontrol squeue_, sbatch_, scancel_;
  bool active_ = false;
  bool stopping_ = false;
  bool ended_ = false;
  bool busy_ = false;  // a squeue, sbatch or scancel of the keeping runs
  int world_ = 0;
  int max_ = 0;
  std::vector<HelperJob> jobs_;  // the last squeue
  std::map<std::string, MonoClock::time_point> running_since_;
  int failures_ = 0;
  std::optional<MonoClock::time_point> last_failure_;
  bool squeue_warned_ = false;
  Timer next_;
  std::function<void()> done_;
};

}  // namespace elastic
