// --grow (grow_keeper.h): the agent owns the keeper (its squeue, sbatch and scancel
// are processes below the agent: spared, reaped through their pidfds) and hands it
// the record's events; it acts only once this agent hosts the rendezvous.
#include <fmt/format.h>

#include "launcher/agent.h"

namespace elastic {

void ElasticAgent::StartGrow(EventWriter* events) {
  if (!events || !config_.agent.grow) return;
  SlurmJobInfo job;
  std::string err;
  if (!ReadSlurmJobInfo(env_, &job, &err) || job.job_id.empty()) {
    Log(LogLevel::kWarning, "--grow: not in a Slurm job (no SLURM_JOB_ID): no helper jobs");
    return;
  }
  GrowPlan plan;
  plan.job_id = job.job_id;
  auto get = [this](const char* name) {
    auto it = env_.find(name);
    return it == env_.end() ? std::string() : it->second;
  };
  plan.partition = get("SLURM_JOB_PARTITION");
  plan.account = get("SLURM_JOB_ACCOUNT");
  plan.options = *config_.agent.grow;
  // The helper's srun runs the step's command as the user typed it (WorkerSpec::program:
  // under srun, ELASTIC_SPANK_ARGV0), with the options that change what it runs.
  // As many workers per node as this node runs: a helper (--exclusive) holds the whole
  // node, whose GPUs would otherwise all get a worker.
  plan.srun_args.push_back("--elastic-nproc-per-node=" + std::to_string(config_.spec.nproc));
  if (config_.spec.no_python) plan.srun_args.push_back("--elastic-no-python");
  if (config_.spec.python != "python3") plan.srun_args.push_back("--elastic-python=" + config_.spec.python);
  if (config_.spec.module) {
    plan.srun_args.push_back(config_.spec.python);
    plan.srun_args.push_back("-m");
  }
  plan.srun_args.push_back(config_.spec.program);
  plan.srun_args.insert(plan.srun_args.end(), config_.spec.args.begin(), config_.spec.args.end());
  GrowSettings settings;
  settings.interval = Millis(plan.options.interval_s * 1000LL);
  ScontrolSpec spec;
  spec.timeout = Millis(config_.agent.grow_timeout_ms);
  spec.log_path = plan_.log_dir + "/grow.log";
  spec.env = GrowEnv(SideProgramEnv());
  spec.child_mask = original_mask_;
  spec.default_signals = handled_list_;
  spec.host = host_;
  grow_ = std::make_unique<GrowKeeper>(loop_, std::move(plan), settings, std::move(spec));
}

// However the step ends (scancel too: the helper jobs must not stay queued).
bool ElasticAgent::FinishGrow(std::function<void()> then) {
  return grow_ && grow_->Finish(std::move(then));
}

}  // namespace elastic
