#include "launcher/comment_updater.h"

#include <fmt/format.h>

#include "common/log.h"

namespace elastic {

CommentUpdater::CommentUpdater(EventLoop& loop, std::string job_id, Millis interval, ScontrolSpec spec,
                               std::function<bool()> job_ended)
    : loop_(loop),
      job_id_(std::move(job_id)),
      scontrol_(loop, std::move(spec)),
      limiter_(interval),
      job_ended_(std::move(job_ended)) {}

void CommentUpdater::OnEvent(const JobEvent& event) {
  if (event.kind == JobEventKind::kJobStart) active_ = true;
  if (!active_ || stopping_) return;
  ApplyToComment(event, &state_);
  limiter_.Update(FormatJobComment(state_));
  Pump();
}

bool CommentUpdater::Finish(int exit_code, std::function<void()> done) {
  if (!active_ || limiter_.failed()) return false;
  if (state_.phase != JobCommentState::Phase::kEnded) {
    state_.phase = JobCommentState::Phase::kEnded;
    state_.end_reason = exit_code == 0 ? "done" : fmt::format("exit {}", exit_code);
  }
  limiter_.End(FormatJobComment(state_));
  done_ = std::move(done);
  Pump();
  return true;
}

void CommentUpdater::Pump() {
  CommentLimiter::Next next = limiter_.Poll(loop_.Now());
  using W = CommentLimiter::Next::What;
  if (next.what == W::kWait) {
    if (!wait_.armed())
      wait_ = loop_.After(std::chrono::ceil<Millis>(next.at - loop_.Now()), [this] { Pump(); });
    return;
  }
  if (next.what == W::kSend) {
    wait_.Cancel();
    // JobId is digits (ReadSlurmJobInfo); the line has no quote (FormatJobComment).
    scontrol_.Run(fmt::format("update JobId={} Comment='{}'", job_id_, next.text),
                  [this](bool ok, const std::string&, const std::string& why) {
                    limiter_.Sent(ok);
                    if (!ok && !done_ && !stopping_ && !(job_ended_ && job_ended_()))
                      Log(LogLevel::kWarning, "cannot write the job's live status to Slurm's Comment "
                          "(scontrol update JobId={}): {} (output in {}): not updating it again",
                          job_id_, why, scontrol_.spec().log_path);
                    else if (!ok)
                      Log(LogLevel::kDebug, "the job's Comment: scontrol update failed while the job "
                          "ends: {}", why);
                    Pump();
                  });
    return;
  }
  if (done_ && limiter_.idle()) {
    loop_.Post(std::move(done_));  // never from inside Finish
    done_ = nullptr;
  }
}

}  // namespace elastic
