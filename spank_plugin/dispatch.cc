// The only switch on the SPANK context.
#include <fmt/format.h>

#include "spank_plugin/plugin.h"

#ifndef ELASTIC_DEFAULT_LAUNCHER
#define ELASTIC_DEFAULT_LAUNCHER "/usr/bin/elasticrun"
#endif

namespace elastic::spank {

PluginState& State() {
  static PluginState state;
  return state;
}

void ResetState() { State() = PluginState{}; }

std::string DefaultLauncher() { return ELASTIC_DEFAULT_LAUNCHER; }

int Init(SpankApi& api, const std::vector<std::string>& plugstack_args) {
  PluginState& state = State();
  state.context = api.GetContext();
  switch (state.context) {
    case Context::kLocal:
    case Context::kAllocator:
    case Context::kRemote:
      break;
    default:
      return 0;  // slurmd itself, prolog/epilog: nothing to do
  }
  if (state.context == Context::kLocal) ApplyJobLevelNoKill(api);
  std::string err;
  if (!ParsePluginArgs(plugstack_args, DefaultLauncher(), &state.config, &err)) {
    // Reported only to an elastic step (InitPostOpt in srun/sbatch, task_init in
    // slurmstepd): a plain srun has no use for the plugin, and an error here
    // would be printed by every srun of the cluster (once per context srun
    // runs, three times for an srun that allocates). slurmstepd never fails
    // init either way (22.05 may drain the node).
    state.config_error = err;
  }
  // Opened for every step (an O_PATH open is cheap): the options that say whether
  // the step is elastic arrive after init, and by task_init a container plugin
  // may have moved the task into the image, where the bundle's path is not.
  if (state.context == Context::kRemote && !state.config.agent_bundle.empty()) {
    state.agent_bundle_fd = api.OpenAgentBundle(state.config.agent_bundle, &state.agent_bundle_error);
  }
  return 0;
}

int OptionCallback(OptionId id, const char* value, bool remote) {
  PluginState& state = State();
  std::string err;
  if (ApplyOption(id, value, &state.options, &err)) return 0;
  if (remote) {
    if (state.option_error.empty()) state.option_error = err;
    return 0;
  }
  state.option_error = err;
  return -1;  // the caller prints err: srun fails before anything is allocated
}

// srun (before allocation) and sbatch/salloc (before submission: the job
// exports the options to every srun in it) check the same: the options together.
int InitPostOpt(SpankApi& api) {
  PluginState& state = State();
  if (state.context != Context::kLocal && state.context != Context::kAllocator) return 0;
  std::string err;
  if (!state.config_error.empty()) {
    if (!AsksElastic(state.options)) return 0;
    // With `optional` Slurm ignores this -1 and srun goes on: each node's
    // task_init then ends the task with the same message (exit 2).
    if (!state.config_error_reported) {
      api.Error(fmt::format("{}: the plugin is misconfigured (ask the administrator to fix "
                            "plugstack.conf); this step cannot run elastic (--elastic=off "
                            "runs it without elasticrun)",
                            state.config_error));
      state.config_error_reported = true;
    }
    return -1;
  }
  if (!ValidateCombination(state.options, state.config, &err)) {
    api.Error(err);
    return -1;
  }
  return 0;
}

int InitPostOpt(SpankApi& api, NodeDirectory& nodes) {
  int rc = InitPostOpt(api);
  if (rc != 0 || State().context != Context::kLocal) return rc;
  return SrunPlanJoin(api, nodes, State());
}

int LocalUserInit(SpankApi& api) {
  PluginState& state = State();
  if (state.context != Context::kLocal) return 0;
  if (!state.config_error.empty()) return AsksElastic(state.options) ? -1 : 0;
  return SrunLocalUserInit(api, state);
}

int RemoteInitPostOpt(SpankApi& api, NodeDirectory& nodes) {
  PluginState& state = State();
  if (state.context != Context::kRemote) return 0;
  CachingNodes cached(nodes, state.node_answers);
  StepdPostOpt(api, cached, state);
  return 0;
}

int TaskInit(SpankApi& api, NodeDirectory& nodes) {
  PluginState& state = State();
  if (state.context != Context::kRemote) return 0;
  CachingNodes cached(nodes, state.node_answers);
  int rc = StepdTaskInit(api, cached, state);
  // Every failure here is an elastic step that must not run unwrapped (the
  // message is out already). With `optional` on the plugstack line Slurm would
  // ignore -1 and exec the command without elasticrun: end the task ourselves,
  // with elasticrun's "bad configuration, do not requeue" status.
  if (rc != 0) api.ExitTask(kTaskInitFailedExit);
  return rc;
}

int TaskInitPrivileged(SpankApi& api) {
  PluginState& state = State();
  if (state.context == Context::kRemote) StepdTaskInitPrivileged(api, state);
  return 0;
}

// srun's exit, however the step ended: the second net of --elastic-grow (the
// step's rendezvous host cancels its helper jobs itself; an agent that was
// SIGKILLed, or whose scancel Slurm's signals cut short, leaves them queued).
int SrunExit(SpankApi& api) {
  PluginState& state = State();
  if (state.context != Context::kLocal || !state.options.grow || !ElasticActive(state.options, state.config))
    return 0;
  uint32_t job_id = 0;
  if (!api.GetItem(Item::kJobId, &job_id) || job_id == 0) return 0;  // nothing was allocated
  std::string name = fmt::format("elastic-grow-{}", job_id), err;
  if (!api.CancelJobsNamed(name, &err))
    api.Error(fmt::format("--elastic-grow: cannot cancel the helper jobs named {} ({}): scancel --name={} "
                          "removes them", name, err, name));
  return 0;
}

}  // namespace elastic::spank
