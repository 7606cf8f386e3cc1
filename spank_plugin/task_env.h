// What the plugin hands elasticrun on each node (docs/design.md, "Wrapping
// under Slurm"): pure functions from the step's facts and the settings to the
// PET_* environment. No Slurm calls here; the node directory is injected.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "spank_plugin/options.h"
#include "spank_plugin/spank_api.h"

namespace elastic::spank {

// The facts of one node of the step, read in task_init.
struct StepInfo {
  uint32_t job_id = 0;
  uint32_t step_id = 0;
  uint32_t node_id = 0;         // S_JOB_NODEID
  uint32_t nnodes = 0;          // S_JOB_NNODES: the step's node count
  uint32_t local_tasks = 0;     // S_JOB_LOCAL_TASK_COUNT
  uint32_t local_task_id = 0;   // S_TASK_ID: this task among the node's
  long stepd_pid = 0;           // the step's slurmstepd (the tasks' parent): one per step and node
  std::string step_nodelist;    // SLURM_STEP_NODELIST
  std::string job_nodelist;     // SLURM_JOB_NODELIST, "" if unset
  std::string resv_ports;       // SLURM_STEP_RESV_PORTS ("12000-12001"), "" if none
  bool pmix = false;            // the task has a PMIx server (--mpi=pmix)
  std::string munge_socket;     // from slurm.conf AuthInfo=socket=..., "" if default
  std::string node_name;        // SLURMD_NODENAME, "" if unset
  bool output_files_chosen = false;  // PET_TEE or PET_REDIRECTS already in the environment
};

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The rendezvous port, first that applies: --elastic-rdzv-port; the port of
// --elastic-rdzv-endpoint; the first of SLURM_STEP_RESV_PORTS (srun --resv-ports);
// plugstack port=N; else derived: LO + (JOBID * 32 + STEPID) mod (HI - LO + 1)
// over plugstack port=LO-HI (default 61000-65535, outside Linux's ephemeral ports),
// so steps 0..31 of a job and consecutive jobs get distinct ports.
// The step's rendezvous run id (PET_RDZV_ID): --elastic-rdzv-id, else JOBID.STEPID.
std::string RdzvRunId(const StepInfo& step, const ElasticOptions& options);

// ELASTIC_RDZV_PEERS for a step meant to be joined or joining (an explicit
// --elastic-rdzv-endpoint or --elastic-rdzv-id): the addresses of the job's first
// kRdzvPeerNodes nodes (the step's own first when the job's are unknown), each by name
// resolution, else Slurm's NodeAddr; a node neither knows is left out. The agent asks
// them where the run's host is now (rendezvous/host_discovery.h). "" otherwise.
inline constexpr size_t kRdzvPeerNodes = 16;
std::string ChooseRdzvPeers(const StepInfo& step, const ElasticOptions& options,
                            NodeDirectory& nodes);

int ChooseRdzvPort(const StepInfo& step, const ElasticOptions& options, const PluginConfig& config,
                   std::string* source);

// The rendezvous host's address. Order: --elastic-rdzv-endpoint (resolved if it can be,
// else as given); name resolution of the step's first node; Slurm's NodeAddr of it.
// With PMIx in the step a failure here is not fatal: elasticrun asks PMIx
// (*deferred_to_pmix). Otherwise the error lists what was tried.
bool ChooseRdzvHost(const StepInfo& step, const ElasticOptions& options, NodeDirectory& nodes,
                    std::string* host, std::string* source, bool* deferred_to_pmix,
                    std::string* err);

// --elastic-max-restarts, else plugstack max_restarts, else the node losses the
// step promises to survive: its node count minus MIN (0 for exactly the step's nodes).
int DefaultMaxRestarts(uint32_t nnodes, const ElasticOptions& options, const PluginConfig& config);

// The whole PET_* set for this node, including ELASTIC_SPANK_* markers (not
// ELASTIC_SPANK_ARGV0, which the wrapping step adds). PET_NPROC_PER_NODE only
// where there is a count to forward (--elastic-nproc-per-node as typed, or one
// task per GPU); else the task must not inherit one (kInheritedNprocVar) and
// elasticrun decides: the step's GPUs, else 1 (launcher/step_gpus.h).
inline constexpr const char* kInheritedNprocVar = "PET_NPROC_PER_NODE";
bool BuildTaskEnv(const StepInfo& step, const ElasticOptions& options, const PluginConfig& config,
                  NodeDirectory& nodes, EnvList* env, std::string* err);

// The layout one check sees: srun the whole step (every task on every node), each
// slurmstepd its own node (task_init: its tasks on its one node).
struct StepLayout {
  uint32_t nnodes = 0;      // the step's node count
  uint32_t tasks = 0;       // tasks on the nodes seen
  uint32_t nodes_seen = 0;  // nodes those tasks run on: nnodes (srun) or 1 (slurmstepd)
  std::string where;        // "3 nodes" / "node 2", for the message
};
StepLayout WholeStepLayout(uint32_t nnodes, uint32_t ntasks);
StepLayout NodeLayout(const StepInfo& step);

// Several tasks per node (one per GPU) are one worker each: not with
// --elastic-nproc-per-node. And a node multiple (--elastic-node-multiple, plugstack
// node_multiple) that MIN:MAX (or the step's node count) holds. More nodes than
// MAX are allowed: the extra ones stand by as spares.
bool ValidateStepLayout(const StepLayout& layout, const ElasticOptions& options,
                        const PluginConfig& config, std::string* err);
// At least MIN nodes in the step (a running step never gains nodes), unless
// agents of another step may join (--elastic-rdzv-id or --elastic-rdzv-endpoint).
bool ValidateMinNodes(const StepLayout& layout, const ElasticOptions& options, std::string* err);
bool ValidateNodeMultiple(const StepLayout& layout, const ElasticOptions& options,
                          const PluginConfig& config, std::string* err);

}  // namespace elastic::spank
