// The host's verdict on a node's `succeeded` (its workers all exited 0 in a round),
// as a pure rule (docs/user.md "Nodes that finish early"); rendezvous_state.cc applies
// it, late_success_test.cc tests it as a table.
//
// The crossing: a worker fails on one node while another node's workers finish. When
// the failure reaches the host first, the host stops the round for a restart and
// waits for every member to rejoin; the finished node's success, sent before it heard
// of the stop, comes next. Its workers are done and never rejoin (its agent exits
// once the job ends), so the restart could never form: the host and the other agents
// used to wait for it until join_timeout. The verdict is kEndsTheJob: the job ends as
// it does when the success comes first (a failure after a node finished ends the job
// at once, the restart not counted).
#pragma once

#include <cstdint>

#include "rendezvous/rendezvous_state.h"

namespace elastic {

enum class SuccessVerdict {
  kIgnore,      // not of the round the node is in: an older round's, a non-member's, the job's end
  kFinished,    // of the running (or finishing) round, from a member: done, acknowledged
  kEndsTheJob,  // of the round just stopped for a restart, from a member yet to rejoin: crossed
};

struct SuccessFacts {
  RendezvousPhase phase;    // the host's
  uint64_t round;           // the host's: the round running, or being formed
  uint64_t success_round;   // the round the node's workers succeeded in
  bool member;              // of the running round (kRunning, kFinishing)
  bool awaited;             // a member of the stopped round that has not rejoined (kJoining)
};

SuccessVerdict JudgeSuccess(const SuccessFacts& facts);

const char* SuccessVerdictName(SuccessVerdict verdict);

}  // namespace elastic
