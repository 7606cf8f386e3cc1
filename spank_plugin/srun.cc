// srun (S_CTX_LOCAL): every check that can fail before the step starts, with a
// message that names the option, the value and what is allowed.
#include "spank_plugin/plugin.h"
#include "spank_plugin/task_env.h"

namespace elastic::spank {

bool CmdlineHasMultiProg(const std::vector<std::string>& cmdline, const std::string& argv0) {
  static const std::string kOption = "--multi-prog";
  for (size_t i = 1; i < cmdline.size(); ++i) {
    const std::string& word = cmdline[i];
    if (!argv0.empty() && word == argv0) break;  // the step's command starts here
    if (word == "--") break;
    // getopt_long accepts unambiguous prefixes ("--multi").
    if (word.size() >= 4 && word.starts_with("--mu") && kOption.starts_with(word)) return true;
  }
  return false;
}

int SrunLocalUserInit(SpankApi& api, PluginState& state) {
  if (!ElasticActive(state.options, state.config)) return 0;
  // The plugin hands --elastic-rdzv-conf to elasticrun in the task's environment
  // (PET_RDZV_CONF, readable by the user only), never in its argv; but srun's and
  // sbatch's own command lines are readable by every local user.
  for (const auto& [key, value] : state.options.rdzv_conf)
    if (key == "token")
      api.Info("warning: --elastic-rdzv-conf token=... is on srun's (or sbatch's) command line, "
               "which every local user can read (/proc/PID/cmdline): use token_file=PATH (mode "
               "0600, on every node) or export ELASTIC_RDZV_TOKEN_FILE instead");
  std::vector<std::string> argv;
  api.GetArgv(&argv);
  if (CmdlineHasMultiProg(api.ProcessCmdline(), argv.empty() ? "" : argv[0])) {
    api.Error("--elastic cannot run a --multi-prog step (elasticrun starts one program on every "
              "node): drop --multi-prog or add --elastic=off");
    return -1;
  }
  // srun knows the whole step; each slurmstepd checks its node again (task_init).
  uint32_t nnodes = 0, ntasks = 0;
  std::string err;
  if (api.GetItem(Item::kNnodes, &nnodes) && nnodes > 0) {
    if (!api.GetItem(Item::kTotalTaskCount, &ntasks)) ntasks = nnodes;
    if (!ValidateStepLayout(WholeStepLayout(nnodes, ntasks), state.options, state.config, &err)) {
      api.Error(err);
      return -1;
    }
  }
  return 0;
}

}  // namespace elastic::spank
