#include "common/log_limit.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

using Clock = LogRateLimiter::Clock;
using std::chrono::milliseconds;

TEST(EscapeForLog, PrintableBytesStayAndOthersBecomeHex) {
  EXPECT_EQ(EscapeForLog("key/1"), "key/1");
  EXPECT_EQ(EscapeForLog(std::string("a\nb\x00\xff\\", 6)), "a\\x0ab\\x00\\xff\\\\");
  EXPECT_EQ(EscapeForLog("\x1b[2J"), "\\x1b[2J");  // no terminal escapes in the log
}

TEST(EscapeForLog, LongInputIsCutWithItsLength) {
  std::string big(10'000, 'x');
  std::string out = EscapeForLog(big);
  EXPECT_EQ(out, std::string(200, 'x') + "...(10000 bytes)");
  EXPECT_EQ(EscapeForLog(big, 3), "xxx...(10000 bytes)");
}

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
