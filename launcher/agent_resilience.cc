// ElasticAgent: crash loops (crash_loop.h) and the exit codes they end with.
#include <fmt/format.h>

#include "common/log.h"
#include "launcher/agent.h"
#include "launcher/exit_codes.h"
#include "launcher/failure_report.h"
#include "launcher/worker_env.h"
#include "common/log_escape.h"

namespace elastic {

// How long a node in a crash loop waits for the host to end the job for all
// (RendezvousHandler::EndJob) before it ends by itself.

std::string ElasticAgent::CrashLoopMessage() const {
  return fmt::format("crash loop: the workers failed within {} s of their start in {} rounds in a row "
                     "(--crash-loop-window, --crash-loop-count): ending the job instead of restarting "
                     "(exit {}: do not requeue)", config_.agent.crash_loop_window_ms / 1000.0,
                     config_.agent.crash_loop_count, ExitCodeFor(EndReason::kCrashLoop));
}

// Every node reaches the verdict in the same round, the failing one first (its
// workers are gone first): it asks the host to end the job for all, so that no
// other node reads its leaving as a lost node (exit 3: requeue). Every node, this
// one included, then ends through on_job_failed (exit 2); group rank 0 says why.
bool ElasticAgent::EndsInCrashLoop() {
  // The last restart used up: the rendezvous ends the job anyway (restarts exhausted, exit 1).
  if (round_.restarts_used >= config_.spec.rdzv.max_restarts) return false;
  CrashLoopSettings settings{config_.agent.crash_loop_count, Millis(config_.agent.crash_loop_window_ms)};
  auto uptime = std::chrono::duration_cast<Millis>(first_failure_at_ - workers_started_);
  // Only a worker's failure (here, or anywhere: the host says so) counts; churn never does.
  bool worker_failed = status_.has_failure || restart_cause_ == RestartCause::kWorkerFailure;
  if (!NoteFailedRound(settings, uptime, worker_failed, &crash_loop_)) return false;
  Log(LogLevel::kDebug, "{}: asking the rendezvous to end the job", CrashLoopMessage());
  ending_here_ = EndReason::kCrashLoop;
  rendezvous_->EndJob(EndReason::kCrashLoop, status_.has_failure ? status_.failure : WorkerFailure{},
                      CrashLoopMessage());
  crash_loop_answer_ = loop_.After(Millis(config_.agent.crash_loop_answer_timeout_ms), [this] { EndCrashLoopHere(); });
  return true;
}

// Also for no progress (agent_progress.cc): the same wait for the host's answer.
void ElasticAgent::EndCrashLoopHere() {
  if (status_.exited || loop_.stopped()) return;
  EndReason reason = ending_here_;
  Log(LogLevel::kError, "{} (the rendezvous did not end the job within {} s)",
      reason == EndReason::kCrashLoop ? CrashLoopMessage() : NoProgressMessage(),
      config_.agent.crash_loop_answer_timeout_ms / 1000);
  if (status_.has_failure) {
    std::string summary =
        FormatFailureSummary(status_.failure, round_.restarts_used, config_.spec.rdzv.max_restarts,
                             reason,
                             config_.agent.spank_wrapped ? "--elastic-max-restarts" : "--max-restarts");
    LogLine(LogLevel::kError, summary.substr(0, summary.size() - 1));
  }
  rendezvous_->Shutdown(0);
  status_.state = WorkerState::kFailed;
  status_.exited = true;
  exit_code_ = ExitCodeFor(reason);  // do not requeue
  loop_.Stop();
}

void ElasticAgent::JoinRound() {
  if (config_.agent.health_check.empty()) {
    JoinWithNodeState();
    return;
  }
  RunHealthCheck();
}

// Round 0 is joined at once: Slurm has just allocated this node, so it was neither
// drained nor down; later rounds wait for Slurm's answer (asked when the restart
// began: AskSlurm) or reuse one younger than AgentSettings::node_state_min_interval_ms.
void ElasticAgent::JoinWithNodeState() {
  if (!slurm_node_.empty() && had_round_ && !node_asking_) AskSlurm();
  if (node_asking_) {
    join_on_node_state_ = true;  // OnNodeState joins
    return;
  }
  rendezvous_->SetStandBy(node_standby_);
  rendezvous_->Join(config_.spec.nproc);
  standing_by_ = !node_standby_.empty();
  if (standing_by_ && !node_recheck_.armed())
    node_recheck_ = loop_.After(Millis(config_.agent.node_state_recheck_ms), [this] { AskSlurm(); });
}

void ElasticAgent::AskSlurm() {
  Millis min_interval(config_.agent.node_state_min_interval_ms);
  if (slurm_node_.empty() || node_asking_ || !ShouldAskSlurm(node_state_unknown_, node_asked_, loop_.Now(), min_interval))
    return;
  if (!node_reader_) {
    ScontrolSpec spec;
    spec.timeout = Millis(config_.agent.node_state_timeout_ms);
    spec.label = "slurm node state";
    spec.log_path = plan_.log_dir + "/slurm_node_state.log";
    spec.output_path = plan_.log_dir + "/slurm_node_state.out";
    spec.env = SideProgramEnv();
    spec.child_mask = original_mask_;
    spec.default_signals = handled_list_;
    node_reader_ = MakeScontrolNodeReader(loop_, std::move(spec));
  }
  node_asking_ = true;
  node_asked_ = loop_.Now();
  node_reader_->Read(slurm_node_, [this](bool ok, SlurmNodeState node, std::string why) {
    OnNodeState(ok, node, why);
  });
}

void ElasticAgent::OnNodeState(bool ok, const SlurmNodeState& node, const std::string& why) {
  node_asking_ = false;
  if (status_.exited || loop_.stopped()) return;
  std::string before = node_standby_;
  // Unknown from now on (ShouldAskSlurm): one warning, and no later round waits for scontrol.
  if (!ok && !node_state_unknown_)
    Log(LogLevel::kWarning, "cannot read node {}'s state from Slurm: {}: it takes part as if Slurm had "
        "no verdict on it, and Slurm is not asked again in this run", EscapeForLog(slurm_node_), why);
  node_state_unknown_ = node_state_unknown_ || !ok;
  node_standby_ = ok ? StandByReason(node) : std::string();
  if (join_on_node_state_) {
    join_on_node_state_ = false;
    JoinWithNodeState();
    return;
  }
  if (!standing_by_) return;  // a prefetch, or a recheck that a round overtook
  if (!node_standby_.empty()) {
    node_recheck_ = loop_.After(Millis(config_.agent.node_state_recheck_ms), [this] { AskSlurm(); });
    return;
  }
  // Cleared while it stood by, or unknown from now on (the warning above said so): it
  // joins again (a round below MAX grows by it).
  if (ok)
    Log(LogLevel::kInfo, "Slurm's verdict on node {} cleared (was: {}): joining the next round",
        EscapeForLog(slurm_node_), before);
  JoinWithNodeState();
}

void ElasticAgent::OnRoundFormed() {
  node_recheck_.Cancel();
  if (standing_by_ && !node_standby_.empty())
    Log(LogLevel::kWarning, "{}: training all the same: the round needs this node to reach its "
        "minimum (--nnodes MIN)", node_standby_);
  standing_by_ = false;
  had_round_ = true;
}

// The environment of the programs the agent runs beside its workers (health check,
// scontrol): the agent's own, less the agents' secret (PET_RDZV_CONF may hold token=).
std::vector<std::string> ElasticAgent::SideProgramEnv() const {
  EnvMap env = env_;
  env.erase("ELASTIC_RDZV_TOKEN");
  env.erase("PET_RDZV_CONF");
  return EnvToStrings(env);
}

void ElasticAgent::RunHealthCheck() {
  HealthCheck::Spec spec;
  spec.command = config_.agent.health_check;
  spec.timeout = Millis(config_.agent.health_check_timeout_ms);
  spec.log_path = plan_.log_dir + "/health_check.log";
  spec.env = SideProgramEnv();
  spec.child_mask = original_mask_;
  spec.default_signals = handled_list_;
  health_ = std::make_unique<HealthCheck>(loop_, std::move(spec));
  std::string err;
  // The result is posted: OnHealthChecked may then destroy the check.
  bool started = health_->Start([this](const HealthResult& r) { loop_.Post([this, r] { OnHealthChecked(r); }); },
                                &err);
  if (!started) {
    HealthResult r;
    r.error = err;
    loop_.Post([this, r] { OnHealthChecked(r); });
  }
}

AgentEventContext ElasticAgent::EventContext() const {
  return AgentEventContext{config_.spec.rdzv.run_id, config_.spec.rdzv.hostname, round_.round, round_.restarts_used,
                           config_.spec.rdzv.max_restarts};
}

void ElasticAgent::OnHealthChecked(const HealthResult& r) {
  health_.reset();
  if (status_.exited || loop_.stopped()) return;
  const std::string& node = config_.spec.rdzv.hostname;
  std::string log = plan_.log_dir + "/health_check.log";
  auto record = [this](const char* verdict, const std::string& result) {
    RecordVerdict([&](const AgentEventContext& ctx, int64_t ms) {
      return MakeHealthCheckEvent(ctx, verdict, result, ms);
    });
  };
  if (r.passed) {
    if (health_failing_since_) {
      Log(LogLevel::kInfo, "health check passes on node {}: joining the rendezvous", node);
      record("passes", "");
    }
    health_failing_since_.reset();
    JoinWithNodeState();
    return;
  }
  std::string what = DescribeHealthResult(r, Millis(config_.agent.health_check_timeout_ms));
  if (!health_failing_since_) {
    health_failing_since_ = loop_.Now();
    record("kept_out", what);  // once a stretch: the rechecks say the same
  }
  if (loop_.Now() - *health_failing_since_ >= Millis(config_.agent.health_check_give_up_ms)) {
    record("gave_up", what);
    Log(LogLevel::kError, "health check failed on node {}: {} (output in {}); failing for {} s: this node leaves the job",
        node, what, log, config_.agent.health_check_give_up_ms / 1000);
    rendezvous_->Shutdown(0);
    status_.exited = true;
    exit_code_ = kExitJobFailed;
    loop_.Stop();
    return;
  }
  Log(LogLevel::kWarning, "health check failed on node {}: {} (output in {}): this node stays out of the round; "
      "checking again in {} s", node, what, log, config_.agent.health_check_recheck_ms / 1000);
  // Connected as an observer meanwhile: told the job's end, it exits with the others.
  rendezvous_->Watch();
  health_retry_ = loop_.After(Millis(config_.agent.health_check_recheck_ms), [this] { RunHealthCheck(); });
}

}  // namespace elastic

namespace elastic {

bool ElasticAgent::MaybeRequeue() {
  const JobEnd* end = status_.after_stop == AfterStop::kFail    ? &status_.fail_end
                      : status_.after_stop == AfterStop::kFatal ? &status_.fatal_end
                                                                : nullptr;
  if (!end || config_.agent.requeue <= 0) return false;
  SlurmJobInfo job;
  std::string err;
  if (!ReadSlurmJobInfo(env_, &job, &err)) {
    Log(LogLevel::kWarning, "--requeue: not requeueing: {}", err);
    return false;
  }
  RequeueDecision d = DecideRequeue(config_.agent.requeue, *end, job);
  auto record = [this](const char* reason, const std::string& message) {
    RecordVerdict([&](const AgentEventContext& ctx, int64_t ms) {
      return MakeRequeueEvent(ctx, reason, message, ms);
    });
  };
  if (d.verdict != RequeueVerdict::kRequeue) {
    if (!d.message.empty()) Log(LogLevel::kWarning, "{}", d.message);
    // Only the agent acting for the job says why not (the others' verdict is "not this node").
    if (d.verdict == RequeueVerdict::kLimitReached) record("limit_reached", d.message);
    if (d.verdict == RequeueVerdict::kNotBatch) record("not_batch", d.message);
    return false;
  }
  record("requeue", fmt::format("{}: {}", d.message, EndReasonName(end->reason)));
  Log(LogLevel::kWarning, "{}: {} (--requeue={})", d.message, EndReasonName(end->reason), config_.agent.requeue);
  ScontrolSpec spec;
  spec.timeout = Millis(config_.agent.requeue_timeout_ms);
  spec.log_path = plan_.log_dir + "/requeue.log";
  spec.env = SideProgramEnv();
  spec.child_mask = original_mask_;
  spec.default_signals = handled_list_;
  requeuer_ = MakeScontrolRequeuer(loop_, std::move(spec));
  requeuer_->Requeue(job.job_id, [this, id = job.job_id, log = plan_.log_dir + "/requeue.log"](
                                     bool ok, const std::string& what) {
    if (!ok) {
      Log(LogLevel::kError, "scontrol requeue {} failed: {} (output in {})", id, what, log);
      RecordVerdict([&](const AgentEventContext& ctx, int64_t ms) {
        return MakeRequeueEvent(ctx, "requeue_failed", fmt::format("scontrol requeue {} failed: {}", id, what), ms);
      });
    }
    Log(LogLevel::kDebug, "exit {}", exit_code_);
    loop_.Stop();
  });
  return true;
}

}  // namespace elastic
