// ElasticAgent: crash loops (crash_loop.h) and the exit codes they end with.
#include <fmt/format.h>

#include "common/log.h"
#include "launcher/agent.h"
#include "launcher/exit_codes.h"
#include "launcher/failure_report.h"

namespace elastic {

bool ElasticAgent::EndsInCrashLoop() {
  // The last restart used up: the rendezvous ends the job anyway (restarts exhausted, exit 1).
  if (round_.restarts_used >= config_.rdzv.max_restarts) return false;
  CrashLoopSettings settings{config_.crash_loop_count, Millis(config_.crash_loop_window_ms)};
  auto uptime = std::chrono::duration_cast<Millis>(first_failure_at_ - workers_started_);
  if (!NoteFailedRound(settings, uptime, &crash_loop_)) return false;
  Log(LogLevel::kError,
      "crash loop: the workers failed within {} s of their start in {} rounds in a row "
      "(--crash-loop-window, --crash-loop-count): ending the job instead of restarting (exit {}: do not requeue)",
      config_.crash_loop_window_ms / 1000.0, crash_loop_.quick_failures, static_cast<int>(kExitDoNotRequeue));
  if (status_.has_failure) {
    std::string summary =
        FormatFailureSummary(status_.failure, round_.restarts_used, config_.rdzv.max_restarts);
    LogLine(LogLevel::kError, summary.substr(0, summary.size() - 1));
  }
  rendezvous_->Shutdown();
  status_.state = WorkerState::kFailed;
  status_.exited = true;
  exit_code_ = kExitDoNotRequeue;
  loop_.Stop();
  return true;
}

}  // namespace elastic
