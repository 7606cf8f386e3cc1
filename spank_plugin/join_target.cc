#include "spank_plugin/join_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

#include "common/endpoint.h"
#include "common/node_range.h"
#include "common/parse.h"
#include "spank_plugin/task_env.h"

namespace elastic::spank {
namespace {

const char* StateWord(TargetState state) {
  switch (state) {
    case TargetState::kPending: return "pending";
    case TargetState::kRunning: return "running";
    case TargetState::kSuspended: return "suspended";
    case TargetState::kFinished: return "finished";
  }
  return "?";
}

}  // namespace

JoinRefusal PlanJoin(const TargetJob& job, uint32_t joiner_uid, const PluginConfig& config,
                     NodeDirectory& nodes, JoinPlan* plan, std::string* err) {
  if (!job.found) {
    *err = fmt::format("--elastic-join={}: no such job (Slurm knows no job {}, or it ended long ago)",
                       job.job_id, job.job_id);
    return JoinRefusal::kNoSuchJob;
  }
  std::string state = job.state_name.empty() ? StateWord(job.state) : job.state_name;
  if (job.state == TargetState::kFinished) {
    *err = fmt::format("--elastic-join={}: job {} has finished ({}): there is no training to join",
                       job.job_id, job.job_id, state);
    return JoinRefusal::kFinished;
  }
  if (job.state != TargetState::kRunning) {
    *err = fmt::format("--elastic-join={}: job {} is not running ({}): join it once it runs",
                       job.job_id, job.job_id, state);
    return JoinRefusal::kNotRunning;
  }
  if (job.user_id != joiner_uid) {
    // Nothing of the target (its nodes, ports) is said to another user.
    *err = fmt::format("--elastic-join={}: job {} belongs to another user: only its owner may join it",
                       job.job_id, job.job_id);
    return JoinRefusal::kAnotherUser;
  }
  const TargetStep* target = nullptr;
  for (const TargetStep& step : job.steps) {
    // Under a job-level --elastic every srun step is elastic, unless it says --elastic=off.
    bool said = LastLongOption(step.submit_line, "elastic").has_value();
    bool elastic = said ? SubmitLineIsElastic(step.submit_line) : job.job_elastic;
    if (!elastic) continue;
    if (target == nullptr || step.step_id < target->step_id) target = &step;
  }
  if (target == nullptr) {
    // Slurm before 26.05 keeps no job submit line: a job-level --elastic with plain
    // srun steps cannot be seen (spank_api_slurm.cc, LoadJob).
    *err = fmt::format("--elastic-join={}: job {} runs no elastic step (srun --elastic=MIN:MAX) to "
                       "join (a job-level sbatch --elastic shows to Slurm 26.05 and later only: "
                       "give its srun --elastic=MIN:MAX)",
                       job.job_id, job.job_id);
    return JoinRefusal::kNotElastic;
  }
  JoinPlan out;
  out.step_id = target->step_id;
  if (!nodes.FirstHost(target->nodelist, &out.first_node)) {
    *err = fmt::format("--elastic-join={}: cannot read the first node of step {}.{}'s nodes '{}'",
                       job.job_id, job.job_id, target->step_id, target->nodelist);
    return JoinRefusal::kNotElastic;
  }
  ElasticOptions options;
  // A target started with its own --elastic-rdzv-endpoint is hosted there (task_env.cc).
  if (std::optional<std::string> text = LastLongOption(target->submit_line, "elastic-rdzv-endpoint")) {
    Endpoint endpoint;
    std::string ignored;
    if (ParseEndpoint("--elastic-rdzv-endpoint", *text, &endpoint, &ignored)) {
      out.first_node = endpoint.host;
      options.endpoint = std::move(endpoint);
    }
  }
  if (std::optional<std::string> port = LastLongOption(target->submit_line, "elastic-rdzv-port")) {
    long long value = 0;
    if (ParseInt(*port, 1, 65535, &value)) options.rdzv_port = static_cast<int>(value);
  }
  StepInfo step;
  step.job_id = job.job_id;
  step.step_id = target->step_id;
  step.resv_ports = target->resv_ports;
  out.port = ChooseRdzvPort(step, options, config, &out.port_source);
  // The target's MIN:MAX, as its own plugin read it.
  std::optional<std::string> range = LastLongOption(target->submit_line, "elastic");
  std::string range_text = range ? *range : job.job_elastic_value;
  ElasticOptions target_options;
  std::string range_err;
  if (!range_text.empty() &&
      ApplyOption(OptionId::kElastic, range_text.c_str(), &target_options, &range_err) &&
      target_options.nnodes) {
    out.nnodes = *target_options.nnodes;
  } else {
    // A bare --elastic: exactly the step's nodes.
    std::string hosts;
    int count = 0;
    if (nodes.FirstHosts(target->nodelist, kMaxNodes, &hosts))
      count = static_cast<int>(std::count(hosts.begin(), hosts.end(), ',')) + 1;
    out.nnodes = {count, count};
  }
  if (out.nnodes.first < 1) {
    *err = fmt::format("--elastic-join={}: cannot tell the node count of step {}.{} ('{}')",
                       job.job_id, job.job_id, target->step_id, target->nodelist);
    return JoinRefusal::kNotElastic;
  }
  out.nodelist = target->nodelist;
  std::optional<std::string> id = LastLongOption(target->submit_line, "elastic-rdzv-id");
  out.rdzv_id = id && !id->empty() ? *id : fmt::format("{}.{}", job.job_id, target->step_id);
  *plan = std::move(out);
  return JoinRefusal::kNone;
}

}  // namespace elastic::spank
