// The rendezvous port the SPANK plugin derives for a step when nothing names one
// (spank_plugin/task_env.h ChooseRdzvPort), in one place: `elasticrun status
// JOBID` (launcher/status_target.h) finds the step's rendezvous by the same rule.
#pragma once

#include <cstdint>

namespace elastic {

// plugstack.conf port=LO-HI's default: outside Linux's ephemeral ports (32768-60999).
inline constexpr int kDerivedRdzvPortLo = 61000;
inline constexpr int kDerivedRdzvPortHi = 65535;

// LO + (JOBID * 32 + STEPID) mod (HI - LO + 1): steps 0..31 of a job and
// consecutive jobs get distinct ports. Requires LO <= HI.
inline int DerivedRdzvPort(uint32_t job_id, uint32_t step_id, int lo = kDerivedRdzvPortLo,
                           int hi = kDerivedRdzvPortHi) {
  uint64_t span = static_cast<uint64_t>(hi - lo + 1);
  uint64_t key = static_cast<uint64_t>(job_id) * 32 + step_id;
  return lo + static_cast<int>(key % span);
}

}  // namespace elastic
