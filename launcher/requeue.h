// --requeue N (srun/sbatch --elastic-requeue=N): when the job cannot go on in-job
// (fewer than MIN nodes left, or the restarts used up by node losses), one agent
// asks Slurm to run the batch job again (`scontrol requeue $SLURM_JOB_ID`), at
// most N times in the job's life. Slurm counts the requeues in
// SLURM_RESTART_COUNT (absent before the first). The agent acting for the job
// is the host's (or, after the host's loss, the survivor that would have taken
// over: JobEnd::acts_for_job), so one node asks once. The decision is a pure
// function (table-tested); running scontrol is behind JobRequeuer.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "launcher/launch_config.h"
#include "launcher/scontrol.h"
#include "rendezvous/rendezvous_handler.h"

namespace elastic {

// What Slurm's environment says about the job this agent runs in.
struct SlurmJobInfo {
  std::string job_id;     // SLURM_JOB_ID ("" outside Slurm)
  bool batch = false;     // ENVIRONMENT=BATCH: the step runs inside an sbatch job script
  int restart_count = 0;  // SLURM_RESTART_COUNT: how many times the job was requeued
};

// The one parser of these variables: false with *err naming the bad value.
bool ReadSlurmJobInfo(const EnvMap& env, SlurmJobInfo* out, std::string* err);

enum class RequeueVerdict {
  kOff,           // --requeue 0 (the default)
  kNotThisEnd,    // the job ended otherwise (done, a worker's failure, a crash loop, ...)
  kNotThisNode,   // another agent acts for the job
  kNotBatch,      // plain srun (or salloc): nothing Slurm could requeue
  kLimitReached,  // requeued N times already
  kRequeue,
};

struct RequeueDecision {
  RequeueVerdict verdict = RequeueVerdict::kOff;
  std::string message;  // the console line ("" when there is nothing to say)
};

// True for the ends that requeueing may help: nodes were lost.
bool EndMayRequeue(EndReason reason);

RequeueDecision DecideRequeue(int max_requeues, const JobEnd& end, const SlurmJobInfo& job);

// Asks Slurm to requeue a job. done(ok, what) is called once, from the loop;
// `what` describes a failure. pid(): the process it runs (-1: none), which its
// owner must not reap (the agent reaps orphans: agent.h).
class JobRequeuer {
 public:
  virtual ~JobRequeuer() = default;
  virtual void Requeue(const std::string& job_id, std::function<void(bool ok, std::string what)> done) = 0;
  virtual pid_t pid() const = 0;
};

// The real one: `scontrol requeue JOB` through the one scontrol runner
// (scontrol.h: its output appended to spec.log_path, killed past spec.timeout).
std::unique_ptr<JobRequeuer> MakeScontrolRequeuer(EventLoop& loop, ScontrolSpec spec);

}  // namespace elastic
