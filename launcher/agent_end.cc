// ElasticAgent: the end of an attempt (its workers' leftovers killed, on the loop) and
// of the agent (what it tells: the failure summary; then the --elastic-grow helper jobs
// and the final Comment, each bounded, before the actions go on).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "common/log.h"
#include "launcher/agent.h"
#include "launcher/child_process.h"
#include "launcher/descendants.h"
#include "launcher/failure_report.h"
#include "launcher/slurm_stop.h"

namespace elastic {

bool ElasticAgent::PastJobEnd() const {
  return AtJobEnd(config_.agent.job_end_time, static_cast<int64_t>(std::time(nullptr)));
}

void ElasticAgent::EndAttempt() {
  stop_timer_.Cancel();
  StopNativeStacks();
  // Leftovers of a worker (its own children) die with its group, if it still holds one
  // of ours (the leaders are reaped: an empty group's id may be someone else's by now).
  for (pid_t pgid : OwnGroups(ReadProcTable(), getpid(), KnownGroups())) SignalGroup(pgid, SIGKILL);
  for (auto& w : workers_) {
    w->hang_kill_timer.Cancel();
    if (w->out) w->out->Close();
    if (w->err) w->err->Close();
  }
  // Every worker has exited: whatever is still below the agent is theirs. They are
  // SIGKILLed and the state machine goes on once they are dead (issue 21: their
  // deaths are pidfd events, the loop does not wait for them).
  auto deadline = loop_.Now() + Millis(std::max(config_.agent.shutdown_timeout_ms, config_.agent.min_kill_wait_ms));
  ending_ = !leftovers_.Start(getpid(), Spared(), deadline, [this](const std::string& err) {
    OnLeftoversKilled(err);
  });
  if (!ending_) ReapOrphans();
}

void ElasticAgent::OnLeftoversKilled(const std::string& err) {
  if (!err.empty()) Log(LogLevel::kWarning, "{}", err);
  ReapOrphans();
  ending_ = false;
  if (!dispatching_) RunQueue();
}

void ElasticAgent::Finish(int exit_code) {
  exit_code_ = exit_code;
  crash_loop_answer_.Cancel();
  if (status_.after_stop == AfterStop::kFail && status_.fail_end.reason == EndReason::kCrashLoop)
    Log(JobEvent(LogLevel::kError), "{}", CrashLoopMessage());
  if (status_.after_stop == AfterStop::kFail && status_.fail_end.reason == EndReason::kNoProgress)
    Log(JobEvent(LogLevel::kError), "{}", NoProgressMessage());
  if (status_.after_stop == AfterStop::kFail && status_.has_failure) {
    int used = std::max(round_.restarts_used, status_.fail_end.restarts_used);
    std::string summary =
        FormatFailureSummary(status_.failure, used, config_.spec.rdzv.max_restarts, status_.fail_end.reason,
                             RestartsFlag());
    // Told by group rank 0; after the host's loss by every survivor (rank 0 may be gone).
    LogLevel level = status_.failure.host_lost ? LogLevel::kError : JobEvent(LogLevel::kError);
    // A node (the host) lost past the job's time limit: Slurm stops every node of the
    // step, in no set order, and this one's SIGTERM may come after the host's end; the
    // time limit's own line tells it (2026-12-07: "the rendezvous host was lost").
    if (status_.failure.global_rank < 0 && PastJobEnd()) level = LogLevel::kDebug;
    Log(level, "{}", summary.substr(0, summary.size() - 1));
  } else if (status_.after_stop == AfterStop::kFatal) {
    Log(LogLevel::kError, "{}", status_.fatal_message);
  }
  // The helper jobs are cancelled first (also after scancel: they must not stay
  // queued), then the final Comment; Resume() once both are done.
  waiting_ = FinishGrow([this] {
    waiting_ = FinishComment();
    if (!waiting_) Resume();
  });
  if (!waiting_) waiting_ = FinishComment();
}

// The actions after the Exit (Requeue) go on; the loop stops after the last (RunQueue).
void ElasticAgent::Resume() {
  waiting_ = false;
  if (!dispatching_) RunQueue();
}

}  // namespace elastic
