// The exit code of each reason the rendezvous gives for the job's end.
#include "launcher/exit_codes.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(ExitCodesTest, EachEndReasonHasItsCode) {
  using R = EndReason;
  const std::pair<R, int> rows[] = {
      {R::kDone, 0},        {R::kWorkerFailed, 1}, {R::kError, 1},       {R::kUnknown, 1},
      {R::kCrashLoop, 2},   {R::kBadInput, 2},     {R::kTooFewNodes, 3}, {R::kNodesLost, 3},
      {R::kNoMajority, 3},  {R::kHostLost, 3},     {R::kNoProgress, 5},
  };
  for (const auto& [reason, code] : rows) EXPECT_EQ(ExitCodeFor(reason), code) << EndReasonName(reason);
}

}  // namespace
}  // namespace elastic
