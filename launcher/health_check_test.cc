#include "launcher/health_check.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace elastic {
namespace {

TEST(HealthCheckTest, ResultsNameWhatHappened) {
  using std::chrono::milliseconds;
  struct Case {
    HealthResult r;
    const char* want;
  } cases[] = {
      {{false, 3, 0, false, ""}, "exit code 3"},
      {{false, 0, SIGSEGV, false, ""}, "signal SIGSEGV (11)"},
      {{false, 0, SIGKILL, true, ""}, "killed after the 60 s timeout (--health-check-timeout)"},
      {{false, 0, 0, false, "fork: out of memory"}, "cannot start: fork: out of memory"},
  };
  for (const Case& c : cases) EXPECT_EQ(DescribeHealthResult(c.r, milliseconds(60000)), c.want);
}

}  // namespace
}  // namespace elastic
