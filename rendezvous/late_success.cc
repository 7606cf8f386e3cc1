#include "rendezvous/late_success.h"

namespace elastic {

SuccessVerdict JudgeSuccess(const SuccessFacts& f) {
  switch (f.phase) {
    case RendezvousPhase::kRunning:
    case RendezvousPhase::kFinishing:
      return f.member && f.success_round == f.round ? SuccessVerdict::kFinished
                                                    : SuccessVerdict::kIgnore;
    case RendezvousPhase::kJoining:
      // Only the round just stopped (the one before the round being formed) had the
      // node as a member; `awaited` says it has not rejoined since (its workers did
      // not stop for the restart: they had finished).
      return f.awaited && f.success_round + 1 == f.round ? SuccessVerdict::kEndsTheJob
                                                         : SuccessVerdict::kIgnore;
    case RendezvousPhase::kClosed:
      return SuccessVerdict::kIgnore;
  }
  return SuccessVerdict::kIgnore;
}

const char* SuccessVerdictName(SuccessVerdict verdict) {
  switch (verdict) {
    case SuccessVerdict::kIgnore: return "ignore";
    case SuccessVerdict::kFinished: return "finished";
    case SuccessVerdict::kEndsTheJob: return "ends the job";
  }
  return "?";
}

}  // namespace elastic
