#include "launcher/requeue.h"

#include <fmt/format.h>

#include <cstdint>

#include "common/parse.h"

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
  ScontrolRequeuer(EventLoop& loop, ScontrolSpec spec) : scontrol_(loop, std::move(spec)) {}

  void Requeue(const std::string& job_id, std::function<void(bool, std::string)> done) override {
    scontrol_.Run("requeue " + job_id, [done](bool ok, const std::string&, const std::string& why) {
      done(ok, why);
    });
  }
  pid_t pid() const override { return scontrol_.pid(); }

 private:
  Scontrol scontrol_;
};

}  // namespace

std::unique_ptr<JobRequeuer> MakeScontrolRequeuer(EventLoop& loop, ScontrolSpec spec) {
  return std::make_unique<ScontrolRequeuer>(loop, std::move(spec));
}

}  // namespace elastic
