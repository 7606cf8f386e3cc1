#include "launcher/grow_keeper.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/log.h"

namespace elastic {

namespace {

ScontrolSpec WithProgram(ScontrolSpec spec, const char* program, const std::string& output_path) {
  spec.scontrol = program;
  spec.label = program;
  spec.output_path = output_path;
  return spec;
}

bool Starts(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

}  // namespace

std::string GrowJobName(const std::string& job_id) { return "elastic-grow-" + job_id; }

std::string GrowSbatchCommandArgs(const GrowPlan& plan) {
  // --exclusive: each helper brings a whole node of its own. Without it two helpers
  // could share one node (the helper asks no GPUs or CPUs of its own) and both agents
  // join as two "nodes" of the same machine (seen on Debian 13's test cluster).
  std::vector<std::string> args = {"--parsable", "-N1", "--exclusive", "--job-name=" + GrowJobName(plan.job_id),
                                   "--elastic-join=" + plan.job_id,
                                   "--output=" + GrowJobName(plan.job_id) + "-%j.out"};
  if (plan.options.partition.empty() && !plan.partition.empty()) args.push_back("--partition=" + plan.partition);
  if (plan.options.account.empty() && !plan.account.empty()) args.push_back("--account=" + plan.account);
  for (auto& a : GrowSbatchArgs(plan.options)) args.push_back(std::move(a));
  std::string script = "exec srun";
  for (const auto& a : plan.srun_args) script += " " + ShellQuote(a);
  args.push_back("--wrap=" + script);
  std::string text;
  for (const auto& a : args) text += (text.empty() ? "" : " ") + ShellQuote(a);
  return text;
}

std::vector<std::string> GrowEnv(const std::vector<std::string>& env) {
  std::vector<std::string> out;
  for (const auto& kv : env) {
    // ELASTIC_TORCH_NO_LIBUV is the user's word about their torch (docs/user.md), not
    // the step's: without it a helper's workers on a torch without libuv fail every
    // round (Debian 13's test cluster: crash loop, exit 2).
    bool users = Starts(kv, "ELASTIC_TORCH_NO_LIBUV=");
    bool drop = (Starts(kv, "SLURM_") && !Starts(kv, "SLURM_CONF=")) || Starts(kv, "SLURMD_") ||
                Starts(kv, "PET_") || Starts(kv, "TORCHELASTIC_") || (Starts(kv, "ELASTIC_") && !users) ||
                Starts(kv, "SPANK_") || Starts(kv, "_SLURM_SPANK_");
    if (!drop) out.push_back(kv);
  }
  return out;
}

GrowKeeper::GrowKeeper(EventLoop& loop, GrowPlan plan, GrowSettings settings, ScontrolSpec spec)
    : loop_(loop),
      plan_(std::move(plan)),
      settings_(settings),
      squeue_(loop, WithProgram(spec, "squeue", spec.log_path + ".squeue")),
      sbatch_(loop, WithProgram(spec, "sbatch", spec.log_path + ".sbatch")),
      scancel_(loop, WithProgram(spec, "scancel", "")) {}

void GrowKeeper::OnEvent(const JobEvent& event) {
  switch (event.kind) {
    case JobEventKind::kJobStart:
      active_ = true;
      max_ = event.max_nodes;
      Log(LogLevel::kInfo, "--elastic-grow: keeping helper jobs ({}) queued while the world is below {} "
          "nodes", GrowJobName(plan_.job_id), max_);
      break;
    case JobEventKind::kRound:
      world_ = event.nodes;
      break;
    case JobEventKind::kNodeJoined:
      ++world_;
      break;
    case JobEventKind::kNodeLost:
      world_ = std::max(0, world_ - 1);
      break;
    case JobEventKind::kEnd:
      ended_ = true;
      break;
    default:
      return;
  }
  // Nothing before the first round: the world's size is not known yet.
  if (active_ && world_ > 0 && !busy_ && !ended_ && !stopping_) {
    next_.Cancel();
    Later(Millis(0));
  }
}

void GrowKeeper::Later(Millis delay) {
  if (ended_ || stopping_) return;
  next_ = loop_.After(delay, [this] { Tick(); });
}

void GrowKeeper::Tick() {
  if (busy_ || ended_ || stopping_ || !active_) return;
  busy_ = true;
  squeue_.Run(fmt::format("-h --name={} --user=\"$(id -un)\" -o '%i %t'", GrowJobName(plan_.job_id)),
              [this](bool ok, std::string out, std::string why) { OnSqueue(ok, out, why); });
}

void GrowKeeper::OnSqueue(bool ok, const std::string& out, const std::string& why) {
  busy_ = false;
  std::string err;
  std::vector<HelperJob> jobs;
  if (ok && !ParseHelperJobs(out, &jobs, &err)) {
    ok = false;
    (void)why;
  }
  if (!ok) {
    if (!squeue_warned_ && !stopping_)
      Log(LogLevel::kWarning, "--elastic-grow: cannot list the helper jobs (squeue): {}; trying again in {} s",
          err.empty() ? why : err, settings_.interval.count() / 1000);
    squeue_warned_ = true;
    if (done_ == nullptr) Later(settings_.interval);
    else Act();
    return;
  }
  jobs_ = std::move(jobs);
  Act();
}

void GrowKeeper::Act() {
  if (done_) {  // Finish came while a command ran
    busy_ = true;
    scancel_.Run(fmt::format("--name={} --user=\"$(id -un)\"", GrowJobName(plan_.job_id)),
                 [this](bool ok, std::string, std::string why) {
                   busy_ = false;
                   if (!ok)
                     Log(LogLevel::kWarning, "--elastic-grow: cannot cancel the helper jobs ({}): {}",
                         GrowJobName(plan_.job_id), why);
                   else
                     Log(LogLevel::kDebug, "--elastic-grow: helper jobs cancelled");
                   loop_.Post(std::move(done_));
                   done_ = nullptr;
                 });
    return;
  }
  if (ended_ || stopping_ || world_ == 0) return;  // a round's event starts it again
  MonoClock::time_point now = loop_.Now();
  GrowView view;
  view.world_nodes = world_;
  view.max_nodes = max_;
  std::vector<std::string> pending;
  std::map<std::string, MonoClock::time_point> running;
  for (const auto& j : jobs_) {
    if (j.state == "PD") pending.push_back(j.id);
    if (j.state == "R" || j.state == "CF") {
      auto it = running_since_.find(j.id);
      running[j.id] = it == running_since_.end() ? now : it->second;
      if (now - running[j.id] < settings_.start_grace) ++view.starting;
    }
  }
  running_since_ = std::move(running);
  view.pending = static_cast<int>(pending.size());
  view.failures = failures_;
  view.last_failure = last_failure_;
  GrowDecision d = DecideGrow(view, now, settings_);
  if (d.cancel > 0) {
    // The newest first: the oldest have waited longest in the queue.
    std::sort(pending.begin(), pending.end(), [](const std::string& a, const std::string& b) {
      return a.size() != b.size() ? a.size() > b.size() : a > b;
    });
    std::string ids;
    for (int i = 0; i < d.cancel; ++i) ids += (ids.empty() ? "" : " ") + pending[i];
    Log(LogLevel::kInfo, "--elastic-grow: the world has {} of {} nodes: cancelling helper job(s) {}", world_, max_,
        ids);
    busy_ = true;
    scancel_.Run(ids, [this](bool ok, std::string, std::string why) {
      busy_ = false;
      if (!ok) Log(LogLevel::kWarning, "--elastic-grow: scancel failed: {}", why);
      if (done_) return Act();
      Later(ok ? Millis(0) : settings_.interval);
    });
    return;
  }
  if (d.submit > 0) {
    busy_ = true;
    sbatch_.Run(GrowSbatchCommandArgs(plan_), [this](bool ok, std::string out, std::string why) {
      busy_ = false;
      std::string id;
      if (ok && ParseSbatchJobId(out, &id)) {
        failures_ = 0;
        last_failure_.reset();
        jobs_.push_back({id, "PD"});
        Log(LogLevel::kInfo, "--elastic-grow: the world has {} of {} nodes: helper job {} queued", world_, max_, id);
        if (done_) return Act();
        return Act();  // another one, if still missing
      }
      ++failures_;
      last_failure_ = loop_.Now();
      Log(LogLevel::kWarning, "--elastic-grow: sbatch failed: {} (output in {}); trying again in {} s", 
          ok ? fmt::format("'{}' is not a job id", out) : why, sbatch_.spec().log_path,
          GrowBackoff(failures_, settings_).count() / 1000);
      if (done_) return Act();
      Later(GrowBackoff(failures_, settings_));
    });
    return;
  }
  Millis delay = settings_.interval;
  if (d.retry_at) delay = std::min(delay, std::chrono::ceil<Millis>(*d.retry_at - now));
  Later(delay);
}

bool GrowKeeper::Finish(std::function<void()> done) {
  if (!active_) return false;
  ended_ = true;
  next_.Cancel();
  done_ = std::move(done);
  if (!busy_) Act();
  return true;
}

std::vector<pid_t> GrowKeeper::pids() const {
  std::vector<pid_t> out;
  for (const Scontrol* s : {&squeue_, &sbatch_, &scancel_})
    if (s->pid() > 0) out.push_back(s->pid());
  return out;
}

}  // namespace elastic
