#include "common/log_limit.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

using Clock = LogRateLimiter::Clock;
using std::chrono::milliseconds;

TEST(LogRateLimiter, AllowsABurstPerWindowAndCountsTheRest) {
  LogRateLimiter limiter(3, milliseconds(1000));
  Clock::time_point t0{};
  t0 += milliseconds(5000);
  uint64_t dropped = 99;
  int allowed = 0;
  for (int i = 0; i < 1000; ++i) allowed += limiter.Allow(t0 + milliseconds(i / 10), &dropped);
  EXPECT_EQ(allowed, 3);
  EXPECT_EQ(limiter.dropped(), 997u);
  // The next window: the first line reports how many were held back.
  ASSERT_TRUE(limiter.Allow(t0 + milliseconds(1000), &dropped));
  EXPECT_EQ(dropped, 997u);
  EXPECT_EQ(limiter.dropped(), 0u);
  EXPECT_EQ(MoreLikeIt(dropped), " (and 997 more like it)");
  EXPECT_EQ(MoreLikeIt(0), "");
}

}  // namespace
}  // namespace elastic
