// srun (S_CTX_LOCAL): every check that can fail before the step starts, with a
// message that names the option, the value and what is allowed.
#include <fmt/format.h>

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

void ApplyJobLevelNoKill(SpankApi& api) {
  std::string value, ignored;
  if (!api.GetEnv(kJobLevelElasticVar, &value) || api.GetEnv("SLURM_NO_KILL", &ignored)) return;
  ElasticOptions job;
  std::string err;
  if (!ApplyOption(OptionId::kElastic, value.c_str(), &job, &err) || job.mode != ElasticMode::kOn) {
    return;  // off, or a bad value (the option callback reports it)
  }
  // srun's --no-kill takes [set|off|no]; the variable is read the same way.
  api.SetEnv("SLURM_NO_KILL", "set");
}

bool CmdlineIsHeterogeneous(const std::vector<std::string>& cmdline, const std::string& argv0) {
  static const std::string kOption = "--het-group";
  bool in_command = false;
  for (size_t i = 1; i < cmdline.size(); ++i) {
    const std::string& word = cmdline[i];
    // srun splits its command line into components at a lone ':' (the first
    // component's command comes before it, so look past argv0 too).
    if (word == ":") return true;
    if (!argv0.empty() && word == argv0) in_command = true;
    if (in_command || word == "--") continue;
    std::string name = word.substr(0, word.find('='));
    if (name.size() >= 5 && kOption.starts_with(name)) return true;  // "--het" and longer
  }
  return false;
}

bool NoKillRequested(const std::vector<std::string>& cmdline, const std::string& argv0,
                     const std::string& no_kill_env) {
  if (!no_kill_env.empty() && no_kill_env != "off" && no_kill_env != "no") return true;
  static const std::string kOption = "--no-kill";
  for (size_t i = 1; i < cmdline.size(); ++i) {
    const std::string& word = cmdline[i];
    if (!argv0.empty() && word == argv0) break;  // the step's command starts here
    if (word == "--") break;
    if (word == "-k") return true;
    std::string name = word.substr(0, word.find('='));
    // getopt_long accepts unambiguous prefixes: "--no-k" (not "--no-", which is ambiguous).
    if (name.size() >= 6 && kOption.starts_with(name)) {
      return word.find('=') == std::string::npos || word.substr(word.find('=') + 1) != "off";
    }
  }
  return false;
}

bool IsTorchrunCommand(const std::vector<std::string>& argv) {
  if (argv.empty()) return false;
  std::string program = argv[0].substr(argv[0].rfind('/') + 1);
  if (program == "torchrun") return true;
  if (!program.starts_with("python")) return false;
  for (size_t i = 1; i + 1 < argv.size(); ++i) {
    if (argv[i] == "-m") {
      return argv[i + 1] == "torch.distributed.run" || argv[i + 1] == "torch.distributed.launch";
    }
    if (!argv[i].starts_with("-")) return false;  // the script: its own arguments follow
  }
  return false;
}

// Slurm 24.11 and later give every task SLURM_JOB_END_TIME; 22.05 does not, and
// elasticrun needs it to say "time limit" rather than "cancelled" when Slurm's
// SIGTERM comes at the end (launcher/slurm_stop.h). srun asks the controller
// once per step and the variable reaches the tasks with srun's environment.
void ExportJobEndTime(SpankApi& api) {
  std::string known;
  uint32_t job_id = 0;
  int64_t end_time = 0;
  if (api.GetEnv("SLURM_JOB_END_TIME", &known) || !api.GetItem(Item::kJobId, &job_id) ||
      !api.JobEndTime(job_id, &end_time))
    return;
  api.SetEnv(kJobEndTimeVar, std::to_string(end_time));
}

int SrunLocalUserInit(SpankApi& api, PluginState& state) {
  if (!ElasticActive(state.options, state.config)) return 0;
  ExportJobEndTime(api);
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
  if (CmdlineIsHeterogeneous(api.ProcessCmdline(), argv.empty() ? "" : argv[0])) {
    // Each component would form its own world (one rendezvous per component).
    api.Error("--elastic cannot run a heterogeneous step (components split by ':' or "
              "--het-group): each component would train alone; run one component per srun, or "
              "add --elastic=off");
    return -1;
  }
  if (IsTorchrunCommand(argv)) {
    api.Error("drop torchrun: srun --elastic replaces it (one agent per node, the same worker "
              "environment); its flags become --elastic=MIN:MAX, --elastic-nproc-per-node, "
              "--elastic-max-restarts (docs/user.md): srun --elastic ... train.py");
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
    std::string no_kill_env;
    api.GetEnv("SLURM_NO_KILL", &no_kill_env);
    if (state.options.nnodes && static_cast<uint32_t>(state.options.nnodes->first) < nnodes &&
        !NoKillRequested(api.ProcessCmdline(), argv.empty() ? "" : argv[0], no_kill_env)) {
      auto [lo, hi] = *state.options.nnodes;
      api.Info(fmt::format(
          "warning: --elastic={}:{} on {} nodes without --no-kill: Slurm ends the whole step "
          "when a node is lost, so it cannot go on with the others; add --no-kill",
          lo, hi, nnodes));
    }
  }
  return 0;
}

}  // namespace elastic::spank
