// The host's verdict on a node's success as a table (late_success.h).
#include "rendezvous/late_success.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

using P = RendezvousPhase;
using V = SuccessVerdict;

TEST(LateSuccessTest, VerdictTable) {
  struct Row {
    const char* name;
    SuccessFacts facts;  // phase, round, success_round, member, awaited
    V want;
  };
  const Row rows[] = {
      {"a member of the running round finished", {P::kRunning, 3, 3, true, false}, V::kFinished},
      {"another member finished while others finish", {P::kFinishing, 3, 3, true, false}, V::kFinished},
      {"not a member (a spare, a latecomer)", {P::kRunning, 3, 3, false, false}, V::kIgnore},
      {"of an older round while one runs", {P::kRunning, 3, 2, true, false}, V::kIgnore},
      {"of a round not yet started (a broken agent)", {P::kRunning, 3, 4, true, false}, V::kIgnore},
      // The crossing: round 3 stopped for a restart, round 4 forming, the node not back.
      {"crossed the restart of its round", {P::kJoining, 4, 3, false, true}, V::kEndsTheJob},
      {"round 0 stopped, round 1 forming", {P::kJoining, 1, 0, false, true}, V::kEndsTheJob},
      {"awaited, but of a round before the stopped one", {P::kJoining, 4, 2, false, true}, V::kIgnore},
      {"of the round being formed (it never ran)", {P::kJoining, 4, 4, false, true}, V::kIgnore},
      {"the node rejoined already (its workers had stopped)", {P::kJoining, 4, 3, false, false}, V::kIgnore},
      {"the first round forming (no round stopped)", {P::kJoining, 0, 0, false, false}, V::kIgnore},
      {"after the end", {P::kClosed, 3, 3, true, false}, V::kIgnore},
      {"after the end, crossed", {P::kClosed, 4, 3, false, true}, V::kIgnore},
  };
  for (const Row& r : rows)
    EXPECT_STREQ(SuccessVerdictName(JudgeSuccess(r.facts)), SuccessVerdictName(r.want)) << r.name;
}

}  // namespace
}  // namespace elastic
