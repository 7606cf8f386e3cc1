// slurmstepd (S_CTX_REMOTE), task_init: runs as the user in the task's child
// just before exec, GPU variables already set. Every failure here fails the
// step (not the node) with a message on the task's stderr.
#include <string.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/parse.h"
#include "spank_plugin/plugin.h"
#include "spank_plugin/step_token.h"
#include "spank_plugin/task_env.h"

namespace elastic::spank {
namespace {

// The descriptor oci.conf's runtime line gives the container: the agent bundle
// directory opened on the host (docs/containers.md, "Slurm's OCI containers").
constexpr int kOciAgentFd = 3;
constexpr SlurmRelease kOciFinalArgvSince = {23, 2};

std::string GetEnvOr(SpankApi& api, const std::string& name) {
  std::string value;
  return api.GetEnv(name, &value) ? value : std::string();
}

// task_context: false in init_post_opt, where Slurm has no task yet (no local
// task id): what the step's first node is does not depend on the task.
bool ReadStepInfo(SpankApi& api, StepInfo* step, std::string* err, bool task_context = true) {
  struct {
    Item item;
    uint32_t* out;
    const char* name;
  } items[] = {{Item::kJobId, &step->job_id, "job id"},
               {Item::kStepId, &step->step_id, "step id"},
               {Item::kNodeId, &step->node_id, "node id"},
               {Item::kNnodes, &step->nnodes, "node count"},
               {Item::kLocalTaskCount, &step->local_tasks, "local task count"},
               {Item::kLocalTaskId, &step->local_task_id, "task's local id"}};
  for (const auto& entry : items) {
    if (!task_context && entry.item == Item::kLocalTaskId) continue;
    if (!api.GetItem(entry.item, entry.out)) {
      *err = fmt::format("Slurm did not give the step's {}", entry.name);
      return false;
    }
  }
  step->step_nodelist = GetEnvOr(api, "SLURM_STEP_NODELIST");
  if (step->step_nodelist.empty()) step->step_nodelist = GetEnvOr(api, "SLURM_NODELIST");
  step->job_nodelist = GetEnvOr(api, "SLURM_JOB_NODELIST");
  step->resv_ports = GetEnvOr(api, "SLURM_STEP_RESV_PORTS");
  step->node_name = GetEnvOr(api, "SLURMD_NODENAME");
  step->stepd_pid = api.ParentPid();
  step->output_files_chosen =
      !GetEnvOr(api, "PET_TEE").empty() || !GetEnvOr(api, "PET_REDIRECTS").empty();
  std::string mpi = GetEnvOr(api, "SLURM_MPI_TYPE");
  step->pmix = !GetEnvOr(api, "PMIX_RANK").empty() || !GetEnvOr(api, "PMIX_NAMESPACE").empty() ||
               mpi.starts_with("pmix");
  std::string conf_path = GetEnvOr(api, "SLURM_CONF");
  if (conf_path.empty()) conf_path = "/etc/slurm/slurm.conf";
  std::ifstream conf(conf_path);
  if (conf) {
    std::stringstream text;
    text << conf.rdbuf();
    step->munge_socket = MungeSocketFromSlurmConf(text.str());
    // libmunge finds the default socket by itself: say nothing then.
    if (step->munge_socket == "/run/munge/munge.socket.2" ||
        step->munge_socket == "/var/run/munge/munge.socket.2") {
      step->munge_socket.clear();
    }
  }
  return true;
}

std::string BundleUnusable(const PluginState& state) {
  return fmt::format("the agent bundle '{}' cannot be used on this node ({}): install the "
                     "package's agent bundle there, or remove agent_bundle= from plugstack.conf",
                     state.config.agent_bundle, state.agent_bundle_error);
}

// The program the task runs. With agent_bundle=DIR: the bundle's entry point
// through the descriptor slurmstepd opened on the host (/proc/self/fd/N is a
// magic link: it reaches the host's bundle from the image's mount namespace
// too; docs/containers.md). Else launcher=PATH, which must exist where the
// task runs.
bool LauncherPath(SpankApi& api, const PluginState& state, std::string* launcher,
                  std::string* err) {
  if (!state.config.agent_bundle.empty()) {
    if (state.agent_bundle_fd < 0) {
      *err = BundleUnusable(state);
      return false;
    }
    if (!api.KeepAcrossExec(state.agent_bundle_fd)) {
      *err = fmt::format("cannot pass the agent bundle '{}' to the task (fcntl)",
                         state.config.agent_bundle);
      return false;
    }
    *launcher = fmt::format("/proc/self/fd/{}/elasticrun", state.agent_bundle_fd);
    return true;
  }
  if (!api.IsExecutable(state.config.launcher)) {
    *err = fmt::format("the launcher '{}' is not an executable file on this node: install "
                       "elasticrun or set launcher=PATH in plugstack.conf (in a container image, "
                       "set agent_bundle=DIR: docs/containers.md)",
                       state.config.launcher);
    return false;
  }
  *launcher = state.config.launcher;
  return true;
}

// Slurm's OCI containers (srun --container=BUNDLE; docs/containers.md). From
// 23.02 on, slurmstepd moves the task's final argv and environment, ours
// included, into the bundle's config.json after task_init (container.c,
// container_run); 22.05 writes config.json when the step starts, before any
// plugin runs, so elasticrun could never start there. The runtime starts the
// command inside the bundle's rootfs, where our files are not: the agent bundle
// comes in as descriptor kOciAgentFd, which oci.conf's runtime line opens on the
// host and passes in (`exec 3<DIR; runc ... run --preserve-fds=1 ...`).
bool OciLauncherPath(SpankApi& api, const PluginState& state, const std::string& container,
                     std::string* launcher, std::string* err) {
  SlurmRelease release = api.Release();
  if (release < kOciFinalArgvSince) {
    *err = fmt::format(
        "--elastic cannot run in the OCI container '{}' on Slurm {}.{:02}: before 23.02 slurmstepd "
        "writes the container's command line when the step starts, before any plugin, so "
        "elasticrun would never start in it; drop --container, add --elastic=off to run the "
        "command without elasticrun, or use Slurm 23.02 or later (docs/containers.md)",
        container, release.major, release.minor);
    return false;
  }
  if (state.config.agent_bundle.empty()) {
    *err = fmt::format("--elastic in the OCI container '{}' needs the agent bundle: set "
                       "agent_bundle=DIR in plugstack.conf and pass DIR to the runtime as "
                       "descriptor {} in oci.conf (docs/containers.md)",
                       container, kOciAgentFd);
    return false;
  }
  if (state.agent_bundle_fd < 0) {
    *err = BundleUnusable(state);
    return false;
  }
  *launcher = fmt::format("/proc/self/fd/{}/elasticrun", kOciAgentFd);
  return true;
}

}  // namespace

std::string MungeSocketFromSlurmConf(const std::string& conf_text) {
  std::string socket;
  for (std::string line : Split(conf_text, '\n')) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos) continue;
    line = line.substr(start);
    // Keys are case-insensitive in slurm.conf.
    std::string lower;
    for (char c : line.substr(0, 9)) lower += static_cast<char>(std::tolower(c));
    if (lower != "authinfo=") continue;
    std::string value = line.substr(9);
    value = value.substr(0, value.find_first_of(" \t\r"));
    for (const std::string& item : Split(value, ',')) {
      if (item.starts_with("socket=")) socket = item.substr(7);
    }
  }
  return socket;
}

// elasticrun tells the time limit's SIGTERM by the job's end time
// (launcher/slurm_stop.h). Slurm 24.11+ gives SLURM_JOB_END_TIME and srun exports
// ELASTIC_JOB_END_TIME (srun.cc) where its environment reaches the job's; else it
// is asked here, on the host where the RPC works (not in user_init, not in an
// image), and task_init exports it.
void RememberJobEndTime(SpankApi& api, PluginState& state) {
  std::string known;
  uint32_t job_id = 0;
  int64_t end_time = 0;
  if (api.GetEnv("SLURM_JOB_END_TIME", &known) || api.GetEnv(kJobEndTimeVar, &known)) return;
  if (api.GetItem(Item::kJobId, &job_id) && api.JobEndTime(job_id, &end_time))
    state.job_end_time = end_time;
}

// token_key=PATH: the per-step token, here (init_post_opt: slurmstepd as root,
// before privileges drop, on the host before a container plugin moves the task),
// the only place the key is readable. A bad key or no libcrypto fails the
// elastic step in task_init with the message; the node and plain steps never notice.
namespace {

void DeriveTokenForStep(SpankApi& api, PluginState& state, const StepInfo& step,
                        const ElasticOptions& options) {
  if (state.config.token_key.empty()) return;
  uint32_t uid = 0;
  std::string key, err;
  DlopenHmac hmac;
  if (!api.GetItem(Item::kJobUid, &uid)) {
    state.step_token_error = "Slurm did not give the job's user id (for the per-step token)";
  } else if (!api.ReadTokenKey(state.config.token_key, &key, &err) ||
             !DeriveStepToken(hmac, key, uid, RdzvRunId(step, options), &state.step_token, &err)) {
    state.step_token_error = err;
    state.step_token.clear();
  }
  explicit_bzero(key.data(), key.size());  // the key lives on only in the file
}

// task_init: the token to the task as a sealed memfd named by
// ELASTIC_RDZV_TOKEN_FILE=/proc/self/fd/N (works in any mount namespace with a
// /proc: pyxis has entered the image's by now). Not for Slurm's OCI containers:
// the runtime passes the container only the descriptors oci.conf names
// (docs/containers.md); their agents keep munge (or none).
// A key slurmstepd could not use fails the elastic step (checked first in task_init).
bool TokenKeyUsable(const PluginState& state, std::string* err) {
  if (state.config.token_key.empty() || state.step_token_error.empty()) return true;
  *err = fmt::format("the per-step token: {}; this step cannot run elastic (ask the "
                     "administrator; --elastic=off runs it without elasticrun)",
                     state.step_token_error);
  return false;
}

bool HandTokenToTask(SpankApi& api, PluginState& state, bool oci, std::string* err) {
  if (state.config.token_key.empty() || oci) return true;
  if (state.step_token.empty()) {
    *err = "the per-step token was not derived (slurmstepd's init_post_opt did not run for this step)";
    return false;
  }
  int fd = api.HandToTask(state.step_token, err);
  if (fd < 0) return false;
  if (!api.SetEnv(kTokenFileVar, fmt::format("/proc/self/fd/{}", fd))) {
    *err = fmt::format("cannot set {} in the task's environment", kTokenFileVar);
    return false;
  }
  return true;
}

}  // namespace

// task_init_privileged: the host runner (launcher/host_runner.h) for an elastic
// step whose task runs through the agent bundle, which is how it runs in a
// container image: pyxis then moves the task into the image (0.10+: in its
// task_init; older: in its task_init_privileged, after this plugin's in plugstack
// order: docs/containers.md), where the node's scontrol, slurm.conf and health
// checks are not. Slurm's OCI containers (23.02+; 22.05 refuses the step in
// task_init): the runtime passes the container only the descriptors oci.conf
// names, so there the runner listens on an abstract socket in the node's network
// namespace, which a container with host networking shares.
void StepdTaskInitPrivileged(SpankApi& api, PluginState& state) {
  uint32_t step_id = 0, job_id = 0;
  if (!api.GetItem(Item::kStepId, &step_id) || step_id == kBatchStep || step_id == kExternStep ||
      step_id == kInteractiveStep) {
    return;
  }
  if (!state.config_error.empty() || !state.option_error.empty() ||
      !ElasticActive(state.options, state.config) || state.config.agent_bundle.empty() ||
      state.agent_bundle_fd < 0) {
    return;
  }
  std::string err, program = state.config.agent_bundle + "/elasticrun";
  if (GetEnvOr(api, "SLURM_CONTAINER").empty()) {
    int fd = api.StartHostRunner(program, &err);
    if (fd >= 0) state.host_runner_fd = fd;
  } else if (!(api.Release() < kOciFinalArgvSince)) {
    api.GetItem(Item::kJobId, &job_id);
    std::string name;
    if (api.StartListeningHostRunner(program, fmt::format("slurm-elastic-host-runner.{}.{}", job_id, step_id),
                                     &name, &err)) {
      state.host_runner_socket = name;
    }
  }
  if (!err.empty())
    api.Info(fmt::format("no host runner ({}): scontrol and health checks run where the task runs", err));
}

void StepdPostOpt(SpankApi& api, NodeDirectory& nodes, PluginState& state) {
  uint32_t step_id = 0;
  if (!api.GetItem(Item::kStepId, &step_id) || step_id == kBatchStep || step_id == kExternStep ||
      step_id == kInteractiveStep) {
    return;
  }
  if (!state.config_error.empty() || !state.option_error.empty() ||
      !ElasticActive(state.options, state.config)) {
    return;
  }
  RememberJobEndTime(api, state);
  StepInfo step;
  std::string host, source, err, target_nodes;
  bool deferred = false;
  ElasticOptions options = state.options;  // a joining step's as task_init makes them
  if (ApplyJoinPlan(api, &options, &target_nodes, &err) &&
      ReadStepInfo(api, &step, &err, /*task_context=*/false)) {
    if (!target_nodes.empty()) step.job_nodelist = target_nodes;
    ChooseRdzvHost(step, options, nodes, &host, &source, &deferred, &err);
    ChooseRdzvPeers(step, options, nodes);  // asked here, replayed in task_init
    DeriveTokenForStep(api, state, step, options);
  } else if (!state.config.token_key.empty()) {
    state.step_token_error = err;  // task_init fails the same way
  }
}

int StepdTaskInit(SpankApi& api, NodeDirectory& nodes, PluginState& state) {
  uint32_t step_id = 0;
  if (!api.GetItem(Item::kStepId, &step_id)) {
    // Cannot tell which step this is; only an elastic step needs it.
    if (!AsksElastic(state.options)) return 0;
    api.Error("Slurm did not give the step id");
    return -1;
  }
  if (step_id == kBatchStep || step_id == kExternStep || step_id == kInteractiveStep) return 0;
  // A broken plugstack line fails the steps that ask for --elastic; a plain step
  // runs (under `optional` srun let it start; default=on is unknown then).
  if (!state.config_error.empty() && AsksElastic(state.options)) {
    api.Error(state.config_error);
    return -1;
  }
  if (!state.option_error.empty()) {
    api.Error(state.option_error);
    return -1;
  }
  if (!ElasticActive(state.options, state.config)) return 0;

  std::string err, target_nodes;
  if (!TokenKeyUsable(state, &err)) {
    api.Error(err);
    return -1;
  }
  StepInfo step;
  EnvList env;
  std::vector<std::string> argv;
  // A joining step runs with the target's rendezvous (join.cc): checked as the
  // user gave it, then completed.
  ElasticOptions options = state.options;
  if (!ValidateCombination(state.options, state.config, &err) ||
      !ApplyJoinPlan(api, &options, &target_nodes, &err) || !ReadStepInfo(api, &step, &err) ||
      !ValidateStepLayout(NodeLayout(step), options, state.config, &err)) {
    api.Error(err);
    return -1;
  }
  if (!target_nodes.empty()) step.job_nodelist = target_nodes;
  if (!api.GetArgv(&argv) || argv.empty() || argv[0].empty()) {
    api.Error("Slurm did not give the task's command line");
    return -1;
  }
  std::string launcher;
  std::string container = GetEnvOr(api, "SLURM_CONTAINER");
  if (container.empty() ? !LauncherPath(api, state, &launcher, &err)
                        : !OciLauncherPath(api, state, container, &launcher, &err)) {
    api.Error(err);
    return -1;
  }
  if (!BuildTaskEnv(step, options, state.config, nodes, &env, &err)) {
    api.Error(err);
    return -1;
  }
  // No count to forward: an exported PET_NPROC_PER_NODE must not decide for
  // elasticrun either (the step's GPUs do, as the plugin's default says).
  bool nproc_set = std::any_of(env.begin(), env.end(), [](const auto& kv) { return kv.first == kInheritedNprocVar; });
  if (!nproc_set && !api.UnsetEnv(kInheritedNprocVar)) {
    api.Error(fmt::format("cannot remove {} from the task's environment", kInheritedNprocVar));
    return -1;
  }
  for (const auto& [name, value] : env) {
    if (!api.SetEnv(name, value)) {
      api.Error(fmt::format("cannot set {} in the task's environment", name));
      return -1;
    }
  }
  // A job-level --elastic (sbatch/salloc) reaches every srun of the job through
  // these variables; an srun started by a worker must not become an elastic
  // step of its own (it would wait for MIN nodes it can never get). The task
  // (elasticrun and its workers) has its options as PET_* already.
  for (const std::string& name : OptionEnvNames()) {
    if (!api.UnsetEnv(name)) {
      api.Error(fmt::format("cannot remove {} from the task's environment", name));
      return -1;
    }
  }
  // Best effort: without it the time limit reads as "cancelled by Slurm".
  if (state.job_end_time) api.SetEnv(kJobEndTimeVar, std::to_string(*state.job_end_time));
  if (!api.SetEnv("ELASTIC_SPANK_ARGV0", argv[0])) {
    api.Error("cannot set ELASTIC_SPANK_ARGV0 in the task's environment");
    return -1;
  }
  if (!HandTokenToTask(api, state, !container.empty(), &err)) {
    api.Error(err);
    return -1;
  }
  // The host runner's socket (task_init_privileged) to elasticrun, which adopts it.
  if (state.host_runner_fd >= 0 &&
      (!api.KeepAcrossExec(state.host_runner_fd) ||
       !api.SetEnv(kHostRunnerFdVar, std::to_string(state.host_runner_fd)))) {
    api.Info("cannot hand the host runner to the task: scontrol and health checks run where the task runs");
  }
  if (!state.host_runner_socket.empty() && !api.SetEnv(kHostRunnerSocketVar, state.host_runner_socket))
    api.Info("cannot name the host runner to the task: scontrol and health checks run where the task runs");
  bool prepended = false;
  if (!api.WrapTask(launcher, &prepended, &err)) {
    api.Error(err);
    return -1;
  }
  // Slurm >= 23.11 prepends: argv[1] is then the original argv[0] again.
  if (prepended && !api.SetEnv("ELASTIC_SPANK_ARGV_PREPENDED", "1")) {
    api.Error("cannot set ELASTIC_SPANK_ARGV_PREPENDED in the task's environment");
    return -1;
  }
  return 0;
}

}  // namespace elastic::spank
