// CommentUpdater: the shell of the job's live Comment (job_comment.h). The agent
// hosting the rendezvous (from the start, or after a takeover) hands it each event
// of the record; it writes `scontrol update JobId=ID Comment='LINE'` through the one
// scontrol runner (scontrol.h: a child process with a deadline, on the loop, never
// waited for), at most one update per interval (CommentLimiter), and the final
// state at the agent's end.
//
// Where an update fails (not permitted, no scontrol, no answer): one warning, and
// no more updates; nothing else changes. Not warned: a failure while Slurm ends the
// job (Stopping(), or job_ended(): the time limit passed, and the controller says
// "Job has already finished" before this node's SIGTERM came). An agent that never
// hosts never runs it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "common/event_loop.h"
#include "launcher/job_comment.h"
#include "launcher/scontrol.h"

namespace elastic {

class CommentUpdater {
 public:
  // `job_id`: SLURM_JOB_ID; `interval`: --slurm-comment-interval; `job_ended`: whether
  // the job is at its time limit now (slurm_stop.h AtJobEnd; may be empty).
  CommentUpdater(EventLoop& loop, std::string job_id, Millis interval, ScontrolSpec spec,
                 std::function<bool()> job_ended = {});

  void OnEvent(const JobEvent& event);
  // The agent ends with `exit_code`: the final line (the end's, or this agent's
  // exit when the record had no end), then done() once it was written or failed
  // (bounded by the scontrol timeout). False (done not called) when there is
  // nothing to write: this agent never hosted, or updates failed before.
  bool Finish(int exit_code, std::function<void()> done);
  // Slurm is ending the job (a terminating signal reached the agent, and also a
  // running scontrol): no more updates, and a failing one is not warned about.
  void Stopping() { stopping_ = true; }
  pid_t pid() const { return scontrol_.pid(); }
  bool active() const { return active_; }

 private:
  void Pump();

  EventLoop& loop_;
  std::string job_id_;
  Scontrol scontrol_;
  CommentLimiter limiter_;
  std::function<bool()> job_ended_;
  JobCommentState state_;
  bool active_ = false;   // this agent hosts (it saw a host start)
  bool stopping_ = false; // Stopping()
  Timer wait_;            // the interval's end, for a waiting line
  std::function<void()> done_;
};

}  // namespace elastic
