// --elastic-join=JOBID (issue 24): the nodes of this job join the running elastic
// step of job JOBID. Everything is found through Slurm: the shell reads the target
// job and its steps (slurm_load_job / slurm_get_job_steps) into TargetJob, and this
// pure core decides whether the join is allowed and where the target's rendezvous
// is: the first node of its elastic step, the port the plugin derived for that step
// (ChooseRdzvPort, as the target's own plugin did) and its run id JOBID.STEPID.
// No Slurm calls here: table-tested in join_target_test.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spank_plugin/options.h"
#include "spank_plugin/spank_api.h"

namespace elastic::spank {

// A refused join ends the joining job's tasks with this status: distinct from
// elasticrun's 0-3 (launcher/exit_codes.h) and from a bad option (2), so that a
// script (or --elastic-grow) can tell "the target cannot be joined" apart.
inline constexpr int kJoinRefusedExit = 4;

// Slurm's job states as the join sees them (JOB_STATE_BASE of job_info_t).
enum class TargetState { kPending, kRunning, kSuspended, kFinished };

struct TargetStep {
  uint32_t step_id = 0;
  std::string nodelist;     // the step's nodes ("n[1-2]")
  std::string resv_ports;   // srun --resv-ports ("12000-12001"), "" if none
  std::string submit_line;  // "srun -N2 --elastic=2:4 python3 train.py" ("" if unknown)
};

struct TargetJob {
  bool found = false;       // false: Slurm knows no such job (or has purged it)
  uint32_t job_id = 0;
  uint32_t user_id = 0;
  TargetState state = TargetState::kPending;
  std::string state_name;   // Slurm's ("COMPLETED", "CANCELLED"), for messages
  bool job_elastic = false; // job-level --elastic (sbatch/salloc): every srun step is elastic
  std::vector<TargetStep> steps;  // its running steps (batch/extern/interactive left out)
};

enum class JoinRefusal { kNone, kNoSuchJob, kFinished, kNotRunning, kAnotherUser, kNotElastic };

struct JoinPlan {
  uint32_t step_id = 0;
  std::string first_node;   // the target step's first node: its rendezvous host
  int port = 0;
  std::string port_source;
  std::string rdzv_id;      // "JOBID.STEPID"
};

// Whether an srun command line asks for an elastic step: --elastic[=X] other than
// off (the last one wins, as in options.cc); --elastic-join alone does not.
bool SubmitLineIsElastic(const std::string& submit_line);

// The target's rendezvous, or a refusal with a message naming the job and why.
// Order: no such job, finished, not running (pending, suspended), another user,
// no elastic step running. The first running elastic step (lowest step id) is joined;
// its first node comes from `nodes` (libslurm's host list). The target's own
// --elastic-rdzv-port and --elastic-rdzv-id are read from its srun line.
JoinRefusal PlanJoin(const TargetJob& job, uint32_t joiner_uid, const PluginConfig& config,
                     NodeDirectory& nodes, JoinPlan* plan, std::string* err);

}  // namespace elastic::spank
