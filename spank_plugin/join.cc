// --elastic-join=JOBID (issue 24), the shell over join_target.h's PlanJoin:
// srun asks Slurm about the target before it allocates anything and hands the
// plan to its tasks in srun's environment (as ExportJobEndTime does); each
// slurmstepd turns the plan into the options of docs/user.md's manual recipe
// (--elastic-rdzv-endpoint, --elastic-rdzv-id, the target's MIN:MAX) plus
// --elastic-rdzv-conf guest=1, so the agents join exactly as that recipe's do.
#include <fmt/format.h>

#include "common/endpoint.h"
#include "common/node_range.h"
#include "spank_plugin/join_target.h"
#include "spank_plugin/plugin.h"

namespace elastic::spank {

int SrunPlanJoin(SpankApi& api, NodeDirectory& nodes, PluginState& state) {
  // srun that allocates runs init_post_opt more than once: ask Slurm once.
  if (!state.options.join || state.join_planned) return 0;
  state.join_planned = true;
  uint32_t job_id = *state.options.join;
  TargetJob job;
  std::string err;
  if (!api.LoadJob(job_id, &job, &err)) {
    api.Error(fmt::format("--elastic-join={}: cannot ask Slurm about job {} ({}): try again",
                          job_id, job_id, err));
    api.ExitSrun(1);
    return -1;
  }
  JoinPlan plan;
  if (PlanJoin(job, api.UserId(), state.config, nodes, &plan, &err) != JoinRefusal::kNone) {
    // Nothing is allocated or started yet. A failing callback would end srun
    // with 1 (or not at all under `optional`): the distinct status says "cannot
    // be joined" to a script or to --elastic-grow.
    api.Error(err);
    api.ExitSrun(kJoinRefusedExit);
    return -1;
  }
  std::pair<int, int> range = state.options.nnodes ? *state.options.nnodes : plan.nnodes;
  const std::pair<const char*, std::string> vars[] = {
      {kJoinEndpointVar, FormatEndpoint(plan.first_node, plan.port)},
      {kJoinRdzvIdVar, plan.rdzv_id},
      {kJoinNnodesVar, FormatNodeRange(NodeRange{range.first, range.second})},
      {kJoinNodesVar, plan.nodelist},
  };
  for (const auto& [name, value] : vars) {
    if (!api.SetEnv(name, value)) {
      api.Error(fmt::format("--elastic-join={}: cannot set {} in srun's environment", job_id, name));
      api.ExitSrun(1);
      return -1;
    }
  }
  api.Info(fmt::format("joining job {}'s step {}.{}: run {} at {}:{} (port {}), --elastic={}",
                       job_id, job_id, plan.step_id, plan.rdzv_id, plan.first_node, plan.port,
                       plan.port_source, FormatNodeRange(NodeRange{range.first, range.second})));
  return 0;
}

bool ApplyJoinPlan(SpankApi& api, ElasticOptions* options, std::string* target_nodes,
                   std::string* err) {
  if (!options->join) return true;
  std::string endpoint, id, range;
  if (!api.GetEnv(kJoinEndpointVar, &endpoint) || !api.GetEnv(kJoinRdzvIdVar, &id) ||
      !api.GetEnv(kJoinNnodesVar, &range)) {
    *err = fmt::format(
        "--elastic-join={}: the task has no join plan from srun ({} and the others are missing "
        "from the step's environment: srun --export=NONE, or srun without the plugin?); keep "
        "srun's environment (--export=ALL)",
        *options->join, kJoinEndpointVar);
    return false;
  }
  std::string why;
  if (!ApplyOption(OptionId::kRdzvEndpoint, endpoint.c_str(), options, &why) ||
      !ApplyOption(OptionId::kRdzvId, id.c_str(), options, &why) ||
      (!options->nnodes && !ApplyOption(OptionId::kElastic, range.c_str(), options, &why))) {
    *err = fmt::format("--elastic-join={}: bad join plan from srun: {}", *options->join, why);
    return false;
  }
  bool guest_given = false;
  for (const auto& [key, value] : options->rdzv_conf) guest_given |= key == "guest";
  if (!guest_given) options->rdzv_conf.emplace_back("guest", "1");
  api.GetEnv(kJoinNodesVar, target_nodes);
  return true;
}

}  // namespace elastic::spank
