// The job's live Comment under Slurm (comment_updater.h): the agent owns the
// updater (its scontrol is a process below the agent: spared, reaped through its
// pidfd) and hands it the record's events while it hosts the rendezvous.
#include <fmt/format.h>

#include "launcher/agent.h"

namespace elastic {

void ElasticAgent::StartComment(EventWriter* events) {
  if (!events || config_.agent.slurm_comment_interval_ms <= 0) return;
  SlurmJobInfo job;
  std::string err;
  if (!ReadSlurmJobInfo(env_, &job, &err) || job.job_id.empty()) return;  // outside Slurm
  ScontrolSpec spec;
  spec.timeout = Millis(config_.agent.slurm_comment_timeout_ms);
  spec.label = "slurm comment";
  spec.log_path = plan_.log_dir + "/slurm_comment.log";
  spec.env = SideProgramEnv();
  spec.child_mask = original_mask_;
  spec.default_signals = handled_list_;
  spec.host = host_;
  comment_ = std::make_unique<CommentUpdater>(
      loop_, job.job_id, Millis(config_.agent.slurm_comment_interval_ms), std::move(spec),
      [this] { return PastJobEnd(); });
}

// The record's events, while this agent hosts, to the live Comment and --grow.
void ElasticAgent::ListenToEvents(EventWriter* events) {
  if (!events || (!comment_ && !grow_)) return;
  comment_source_ = events;
  events->SetListener([this](const ::elastic::JobEvent& e) {
    if (comment_) comment_->OnEvent(e);
    if (grow_) grow_->OnEvent(e);
  });
}

// Not after scancel, the time limit or preemption: Slurm is ending the job, an
// update would only fail (and delay the agent's exit).
bool ElasticAgent::FinishComment() {
  if (!comment_ || terminated_) return false;
  return comment_->Finish(exit_code_, [this] { Resume(); });
}

}  // namespace elastic
