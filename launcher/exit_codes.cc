#include "launcher/exit_codes.h"

namespace elastic {

int ExitCodeFor(EndReason reason) {
  switch (reason) {
    case EndReason::kDone:
      return kExitSuccess;
    case EndReason::kNodesLost:
    case EndReason::kTooFewNodes:
    case EndReason::kNoMajority:
    case EndReason::kHostLost:
      return kExitNodesLost;
    case EndReason::kCrashLoop:
    case EndReason::kBadInput:
      return kExitDoNotRequeue;
    case EndReason::kNoProgress:
      return kExitNoProgress;
    case EndReason::kWorkerFailed:
    case EndReason::kStopped:  // Slurm is ending the job: never 3 (a batch script's requeue)
    case EndReason::kError:
    case EndReason::kUnknown:
      return kExitJobFailed;
  }
  return kExitJobFailed;
}

}  // namespace elastic
