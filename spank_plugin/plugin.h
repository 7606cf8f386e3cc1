// The plugin's callbacks in Slurm-free form: plugin.cc (the .so's only
// extern "C" file) wraps each in a catch-all and calls these; unit tests call
// them with a FakeSpank. One dispatch on the context (dispatch.cc) hands off to
// one file per context: srun.cc, slurmstepd.cc (sbatch/salloc only check the
// options, in dispatch.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "spank_plugin/node_cache.h"
#include "spank_plugin/options.h"
#include "spank_plugin/spank_api.h"

namespace elastic::spank {

// Everything the plugin remembers between callbacks of one process (srun,
// sbatch, or one slurmstepd). Option callbacks have no spank handle, hence global.
struct PluginState {
  PluginConfig config;
  std::string config_error;   // bad plugstack.conf argument
  bool config_error_reported = false;  // srun: said once, whatever the contexts
  ElasticOptions options;
  std::string option_error;   // remote: a bad option value, reported in task_init
  Context context = Context::kError;
  // slurmstepd: the agent bundle (agent_bundle=DIR), opened in init on the host,
  // before a container plugin's task_init_privileged (pyxis) enters the image's
  // mount namespace; -1 with agent_bundle_error when it could not be opened.
  int agent_bundle_fd = -1;
  std::string agent_bundle_error;
  // slurmstepd: the node directory's answers from init_post_opt (node_cache.h).
  NodeAnswers node_answers;
  // slurmstepd: the job's end time asked in init_post_opt when neither Slurm nor
  // srun put one in the job's environment (RememberJobEndTime); task_init exports it.
  std::optional<int64_t> job_end_time;
  // slurmstepd: the per-step token (token_key=PATH; step_token.h), derived in
  // init_post_opt as root; or why it could not be (task_init fails the step).
  std::string step_token;
  std::string step_token_error;
  // slurmstepd, the task's process: the host runner's socket (launcher/host_runner.h)
  // from task_init_privileged, handed to the task in task_init; -1: none.
  int host_runner_fd = -1;
  // The same for Slurm's OCI containers: the runner's abstract socket name ("@..."); "": none.
  std::string host_runner_socket;
  // srun: --elastic-join's target was asked about (once per srun; join.cc).
  bool join_planned = false;
};

PluginState& State();
void ResetState();  // tests

// The task's exit status when task_init refuses an elastic step (elasticrun's
// kExitDoNotRequeue: a configuration error).
inline constexpr int kTaskInitFailedExit = 2;

// Return values are SPANK's: 0 = success, -1 = error (message already shown).
int Init(SpankApi& api, const std::vector<std::string>& plugstack_args);
int OptionCallback(OptionId id, const char* value, bool remote);
int InitPostOpt(SpankApi& api);
int LocalUserInit(SpankApi& api);
// slurmstepd's init_post_opt, on the host, as root, before any task: asks the
// node directory what task_init will need (node_cache.h). Never fails the step
// (task_init reports). Not user_init: slurmstepd runs user_init between
// drop_privileges() and reclaim_privileges(), which hold Slurm's auth lock
// (23.11+: auth_setuid_lock), so a Slurm RPC there is fatal to slurmstepd
// ("auth_g_create: pthread_rwlock_rdlock(): Resource deadlock avoided").
int RemoteInitPostOpt(SpankApi& api, NodeDirectory& nodes);
int TaskInit(SpankApi& api, NodeDirectory& nodes);
// slurmstepd's task_init_privileged: the host runner for an elastic step whose
// task runs through the agent bundle (a container image's; docs/containers.md,
// "Side programs on the host"). Never fails the step: without a runner the
// agent runs scontrol and health checks where it is.
int TaskInitPrivileged(SpankApi& api);
// srun's exit (slurm_spank_exit, local context): --elastic-grow's helper jobs
// (elastic-grow-JOBID) cancelled, a second net behind the rendezvous host's own scancel.
int SrunExit(SpankApi& api);

// Per-context handlers (one file each).
int SrunLocalUserInit(SpankApi& api, PluginState& state);
int StepdTaskInit(SpankApi& api, NodeDirectory& nodes, PluginState& state);
void StepdTaskInitPrivileged(SpankApi& api, PluginState& state);
inline constexpr const char* kHostRunnerFdVar = "ELASTIC_HOST_RUNNER_FD";  // launcher/host_runner.h
inline constexpr const char* kHostRunnerSocketVar = "ELASTIC_HOST_RUNNER_SOCKET";  // launcher/host_runner.h
void StepdPostOpt(SpankApi& api, NodeDirectory& nodes, PluginState& state);

// --elastic-join (join.cc). srun's init_post_opt, after InitPostOpt, before srun
// allocates anything: loads the target job, plans the join (join_target.h) and
// exports the plan for the tasks (the variables below). A refusal prints its
// message and ends srun with kJoinRefusedExit (6); Slurm unreachable: 1.
int SrunPlanJoin(SpankApi& api, NodeDirectory& nodes, PluginState& state);
// slurmstepd: the plan srun exported, as the options of the manual recipe
// (--elastic-rdzv-endpoint, --elastic-rdzv-id, the target's MIN:MAX unless the user
// gave one, --elastic-rdzv-conf guest=1) on `options`; `target_nodes` gets the
// target step's nodes (the peers asked after a failover). No-op without --elastic-join.
bool ApplyJoinPlan(SpankApi& api, ElasticOptions* options, std::string* target_nodes,
                   std::string* err);
inline constexpr const char* kJoinEndpointVar = "ELASTIC_SPANK_JOIN_ENDPOINT";  // NODE:PORT
inline constexpr const char* kJoinRdzvIdVar = "ELASTIC_SPANK_JOIN_RDZV_ID";
inline constexpr const char* kJoinNnodesVar = "ELASTIC_SPANK_JOIN_NNODES";     // MIN:MAX
inline constexpr const char* kJoinNodesVar = "ELASTIC_SPANK_JOIN_NODES";       // Slurm host list
// srun's init_post_opt: InitPostOpt, then (local context) SrunPlanJoin.
int InitPostOpt(SpankApi& api, NodeDirectory& nodes);

// The installed elasticrun (set by the build).
std::string DefaultLauncher();

// "AuthInfo=socket=/run/x.sock,ttl=60" in slurm.conf's text -> "/run/x.sock"; "" if none.
std::string MungeSocketFromSlurmConf(const std::string& conf_text);

// The variable through which a job-level --elastic (sbatch/salloc) reaches the
// job's sruns (OptionEnvNames()).
// The job's end time srun exports for elasticrun where Slurm (22.05) does not
// (srun.cc, ExportJobEndTime; read by launcher/launch_convert.cc).
inline constexpr const char* kJobEndTimeVar = "ELASTIC_JOB_END_TIME";
inline constexpr const char* kJobLevelElasticVar = "SLURM_SPANK__SLURM_SPANK_OPTION_elastic_elastic";

// srun's init (before srun reads its options and environment): a job-level
// --elastic (other than off) makes the step --no-kill (SLURM_NO_KILL=set, which
// srun reads as -k) unless the user set SLURM_NO_KILL: `#SBATCH --no-kill` does
// not reach the job's steps, and without it Slurm ends the whole step at the
// first lost node, which --elastic=MIN:MAX promises to survive.
void ApplyJobLevelNoKill(SpankApi& api);

// True when srun was asked for --no-kill: -k or --no-kill (getopt abbreviations
// included) before the step's command `argv0`, or SLURM_NO_KILL in the environment.
bool NoKillRequested(const std::vector<std::string>& cmdline, const std::string& argv0,
                     const std::string& no_kill_env);

// True when the step's command is torchrun (or python -m torch.distributed.run /
// .launch): a migration leftover that srun --elastic replaces.
bool IsTorchrunCommand(const std::vector<std::string>& argv);

// True when srun's command line asks for --multi-prog (getopt abbreviations included)
// before the step's command `argv0`.
bool CmdlineHasMultiProg(const std::vector<std::string>& cmdline, const std::string& argv0);

// True when srun's command line asks for a heterogeneous step: a lone ':' between
// components (anywhere), or --het-group (abbreviations included) before `argv0`.
bool CmdlineIsHeterogeneous(const std::vector<std::string>& cmdline, const std::string& argv0);

}  // namespace elastic::spank
