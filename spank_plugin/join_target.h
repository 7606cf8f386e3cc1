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
#include <utility>
#include <vector>

#include "common/parse.h"
#include "spank_plugin/options.h"
#include "spank_plugin/spank_api.h"

namespace elastic::spank {

// A refused join ends srun with this status: distinct from every status of elasticrun
// (0-5, launcher/exit_codes.h; 4 is "this node left the job") and from a bad option (2),
// so that a script (or --elastic-grow) can tell "the target cannot be joined" apart.
inline constexpr int kJoinRefusedExit = 6;

// TargetState, TargetStep and TargetJob (what Slurm says of the target) are in
// spank_api.h, beside SpankApi::LoadJob that fills them.

enum class JoinRefusal { kNone, kNoSuchJob, kFinished, kNotRunning, kAnotherUser, kNotElastic };

struct JoinPlan {
  uint32_t step_id = 0;
  std::string first_node;   // the target step's first node: its rendezvous host
  int port = 0;
  std::string port_source;
  std::string rdzv_id;      // "JOBID.STEPID"
  // The target's MIN:MAX (its srun line's --elastic=MIN:MAX, else the job-level
  // one; a bare --elastic: its step's node count N:N). The joiners run with the same.
  std::pair<int, int> nnodes = {0, 0};
  std::string nodelist;     // the target step's nodes: where its host may be after a failover
};

// SubmitLineIsElastic (an srun line asks for an elastic step) is in common/parse.h.

// The target's rendezvous, or a refusal with a message naming the job and why.
// Order: no such job, finished, not running (pending, suspended), another user,
// no elastic step running. The first running elastic step (lowest step id) is joined;
// its first node comes from `nodes` (libslurm's host list). The target's own
// --elastic-rdzv-endpoint (its host then replaces the first node), --elastic-rdzv-port
// and --elastic-rdzv-id are read from its srun line, and its
// MIN:MAX from that line's --elastic (else the job-level --elastic).
JoinRefusal PlanJoin(const TargetJob& job, uint32_t joiner_uid, const PluginConfig& config,
                     NodeDirectory& nodes, JoinPlan* plan, std::string* err);

}  // namespace elastic::spank
