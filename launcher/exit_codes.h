// elasticrun's exit status, chosen so that a batch script can act on it
// (docs/user.md, "Exit status"; elasticrun --help):
//   0        every worker succeeded
//   1        the job failed: a worker failed and the restarts are used up (the summary
//            names it and its exit code or signal), or another agent error
//   2        do not requeue: a bad option or value (nothing started), or a crash loop
//            (the workers failed soon after their start round after round)
//   3        nodes were lost: fewer than MIN nodes are left, the restarts were used up
//            by node losses, no strict majority came back, or the rendezvous host was
//            lost or refused this agent before authenticating (another run id,
//            protocol version or token: nothing said before the welcome is proven,
//            so it cannot be a verdict on the job): requeueing may help
//   4        this node left the job: a worker could not be killed (uninterruptible sleep,
//            state D, --uninterruptible-timeout after SIGKILL); the others go on without it
//   5        no progress, do not requeue: --no-progress-restarts failed rounds in a row
//            without the iteration in --progress-file growing
//   128+N    elasticrun got terminating signal N (scancel, preemption), or was killed by it
#pragma once

#include "rendezvous/rendezvous_handler.h"

namespace elastic {

enum ExitCode : int {
  kExitSuccess = 0,
  kExitJobFailed = 1,
  kExitDoNotRequeue = 2,
  kExitNodesLost = 3,
  kExitWorkerStuck = 4,
  kExitNoProgress = 5,
};

// The exit code of a job the rendezvous ended, from the reason it gave (never
// from its text). kUnknown (not told) is kExitJobFailed.
int ExitCodeFor(EndReason reason);

}  // namespace elastic
