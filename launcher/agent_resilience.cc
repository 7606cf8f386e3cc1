// ElasticAgent: crash loops (crash_loop.h) and the exit codes they end with.
#include <fmt/format.h>

#include "common/log.h"
#include "launcher/agent.h"
#include "launcher/exit_codes.h"
#include "launcher/failure_report.h"
#include "launcher/worker_env.h"
#include "common/log_escape.h"

namespace elastic {

std::string ElasticAgent::CrashLoopMessage() const {
  return fmt::format("crash loop: the workers failed within {} s of their start in {} rounds in a row "
                     "(--crash-loop-window, --crash-loop-count): ending the job instead of restarting "
                     "(exit {}: do not requeue)", config_.agent.crash_loop_window_ms / 1000.0,
                     config_.agent.crash_loop_count, ExitCodeFor(EndReason::kCrashLoop));
}

// The verdict is the state machine's (worker_state.h: a crash loop after a failed
// round, or no progress). Every node reaches a crash loop in the same round, the failing
// one first (its workers are gone first): it asks the host to end the job for all, so
// that no other node reads its leaving as a lost node (exit 3: requeue). Every node,
// this one included, then ends through on_job_failed (exit 2); group rank 0 says why.
void ElasticAgent::EndJob(EndReason reason, MonoClock::time_point answer_due) {
  std::string message = reason == EndReason::kCrashLoop ? CrashLoopMessage() : NoProgressMessage();
  Log(LogLevel::kDebug, "{}: asking the rendezvous to end the job", message);
  rendezvous_->EndJob(reason, status_.has_failure ? status_.failure : WorkerFailure{}, message);
  crash_loop_answer_ = loop_.After(std::chrono::ceil<Millis>(answer_due - loop_.Now()),
                                   [this] { Dispatch(Event{EventKind::kEndJobUnanswered}); });
}

// The host did not end the job (EndJobUnanswered): this node ends it here.
void ElasticAgent::EndHere(EndReason reason, int exit_code) {
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
  exit_code_ = exit_code;  // do not requeue
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
    spec.host = host_;
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
  spec.host = host_;
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
  if (r.passed && status_.health_failing_since) {
    Log(LogLevel::kInfo, "health check passes on node {}: joining the rendezvous", config_.spec.rdzv.hostname);
    RecordHealth("passes", "");
  }
  // The first failure of a stretch (the state machine counts from it): the rechecks say the same.
  if (!r.passed && !status_.health_failing_since)
    RecordHealth("kept_out", DescribeHealthResult(r, Millis(config_.agent.health_check_timeout_ms)));
  last_health_ = r;
  Event e{EventKind::kHealthChecked};
  e.passed = r.passed;
  Dispatch(std::move(e));  // JoinRendezvous, RetryHealthCheck or GiveUp
}

void ElasticAgent::RecordHealth(const char* verdict, const std::string& result) {
  RecordVerdict([&](const AgentEventContext& ctx, int64_t ms) { return MakeHealthCheckEvent(ctx, verdict, result, ms); });
}

void ElasticAgent::RetryHealthCheck(MonoClock::time_point at) {
  Log(LogLevel::kWarning, "health check failed on node {}: {} (output in {}): this node stays out of the round; "
      "checking again in {} s", config_.spec.rdzv.hostname,
      DescribeHealthResult(last_health_, Millis(config_.agent.health_check_timeout_ms)),
      plan_.log_dir + "/health_check.log", config_.agent.health_check_recheck_ms / 1000);
  // Connected as an observer meanwhile: told the job's end, it exits with the others.
  rendezvous_->Watch();
  health_retry_ = loop_.After(std::chrono::ceil<Millis>(at - loop_.Now()), [this] { RunHealthCheck(); });
}

void ElasticAgent::GiveUpHealthCheck(int exit_code) {
  std::string what = DescribeHealthResult(last_health_, Millis(config_.agent.health_check_timeout_ms));
  RecordHealth("gave_up", what);
  Log(LogLevel::kError, "health check failed on node {}: {} (output in {}); failing for {} s: this node leaves the job",
      config_.spec.rdzv.hostname, what, plan_.log_dir + "/health_check.log",
      config_.agent.health_check_give_up_ms / 1000);
  exit_code_ = exit_code;
  loop_.Stop();
}

}  // namespace elastic

namespace elastic {

// The state machine asks (the Requeue action) for an end the rendezvous gave; the
// decision is DecideRequeue's.
bool ElasticAgent::MaybeRequeue(const JobEnd& end) {
  SlurmJobInfo job;
  std::string err;
  if (!ReadSlurmJobInfo(env_, &job, &err)) {
    Log(LogLevel::kWarning, "--requeue: not requeueing: {}", err);
    return false;
  }
  RequeueDecision d = DecideRequeue(config_.agent.requeue, end, job);
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
  record("requeue", fmt::format("{}: {}", d.message, EndReasonName(end.reason)));
  Log(LogLevel::kWarning, "{}: {} (--requeue={})", d.message, EndReasonName(end.reason), config_.agent.requeue);
  ScontrolSpec spec;
  spec.timeout = Millis(config_.agent.requeue_timeout_ms);
  spec.log_path = plan_.log_dir + "/requeue.log";
  spec.env = SideProgramEnv();
  spec.child_mask = original_mask_;
  spec.default_signals = handled_list_;
  spec.host = host_;
  requeuer_ = MakeScontrolRequeuer(loop_, std::move(spec));
  requeuer_->Requeue(job.job_id, [this, id = job.job_id, log = plan_.log_dir + "/requeue.log"](
                                     bool ok, const std::string& what) {
    if (!ok) {
      Log(LogLevel::kError, "scontrol requeue {} failed: {} (output in {})", id, what, log);
      RecordVerdict([&](const AgentEventContext& ctx, int64_t ms) {
        return MakeRequeueEvent(ctx, "requeue_failed", fmt::format("scontrol requeue {} failed: {}", id, what), ms);
      });
    }
    Resume();
  });
  return true;
}

}  // namespace elastic
