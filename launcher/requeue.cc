#include "launcher/requeue.h"

#include <fmt/format.h>

#include <cstdint>

#include "common/parse.h"
#include "launcher/health_check.h"

namespace elastic {

bool ReadSlurmJobInfo(const EnvMap& env, SlurmJobInfo* out, std::string* err) {
  *out = SlurmJobInfo{};
  auto get = [&](const char* key) {
    auto it = env.find(key);
    return it == env.end() ? std::string() : it->second;
  };
  out->job_id = get("SLURM_JOB_ID");
  long long id = 0;
  if (!out->job_id.empty() && !ParseInt(out->job_id, 1, INT32_MAX, &id)) {
    *err = fmt::format("SLURM_JOB_ID='{}' is not a job id", out->job_id);
    return false;
  }
  out->batch = !out->job_id.empty() && get("ENVIRONMENT") == "BATCH";
  std::string count = get("SLURM_RESTART_COUNT");
  long long n = 0;
  if (!count.empty() && !ParseIntNamed("SLURM_RESTART_COUNT", count, 0, INT32_MAX, &n, err))
    return false;
  out->restart_count = static_cast<int>(n);
  return true;
}

bool EndMayRequeue(EndReason reason) {
  return reason == EndReason::kTooFewNodes || reason == EndReason::kNodesLost;
}

RequeueDecision DecideRequeue(int max_requeues, const JobEnd& end, const SlurmJobInfo& job) {
  using V = RequeueVerdict;
  if (max_requeues <= 0) return {V::kOff, ""};
  if (!EndMayRequeue(end.reason)) return {V::kNotThisEnd, ""};
  if (!end.acts_for_job) return {V::kNotThisNode, ""};
  if (!job.batch)
    return {V::kNotBatch, fmt::format("--requeue: not requeueing: Slurm requeues batch jobs only "
                                      "(sbatch), and {} runs under plain srun or salloc",
                                      job.job_id.empty() ? std::string("this run")
                                                         : "job " + job.job_id)};
  if (job.restart_count >= max_requeues)
    return {V::kLimitReached,
            fmt::format("not requeueing job {}: it was requeued {} time(s), the most --requeue={} "
                        "allows", job.job_id, job.restart_count, max_requeues)};
  return {V::kRequeue, fmt::format("requeueing job {} (requeue {} of {})", job.job_id,
                                   job.restart_count + 1, max_requeues)};
}

namespace {

class ScontrolRequeuer : public JobRequeuer {
 public:
  ScontrolRequeuer(EventLoop& loop, ScontrolSpec spec) : loop_(loop), spec_(std::move(spec)) {}

  void Requeue(const std::string& job_id, std::function<void(bool, std::string)> done) override {
    HealthCheck::Spec run;
    run.command = fmt::format("{} requeue {}", spec_.scontrol, job_id);
    run.timeout = spec_.timeout;
    run.log_path = spec_.log_path;
    run.env = spec_.env;
    run.child_mask = spec_.child_mask;
    run.default_signals = spec_.default_signals;
    run.label = "requeue";
    check_ = std::make_unique<HealthCheck>(loop_, std::move(run));
    std::string err;
    auto finish = [this, done](const HealthResult& r) {
      std::string what = r.passed ? std::string()
                         : r.timed_out ? fmt::format("killed after {} s", spec_.timeout.count() / 1000.0)
                                       : DescribeHealthResult(r, spec_.timeout);
      loop_.Post([done, ok = r.passed, what] { done(ok, what); });
    };
    if (!check_->Start(finish, &err)) loop_.Post([done, err] { done(false, "cannot start: " + err); });
  }
  pid_t pid() const override { return check_ ? check_->pid() : -1; }

 private:
  EventLoop& loop_;
  ScontrolSpec spec_;
  std::unique_ptr<HealthCheck> check_;
};

}  // namespace

std::unique_ptr<JobRequeuer> MakeScontrolRequeuer(EventLoop& loop, ScontrolSpec spec) {
  return std::make_unique<ScontrolRequeuer>(loop, std::move(spec));
}

}  // namespace elastic
