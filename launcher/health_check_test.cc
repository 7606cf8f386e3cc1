#include "launcher/health_check.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "common/event_loop.h"

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

// A side program never runs without a deadline: a Spec that names none is refused
// before anything is started (no default stands in for the agent's settings).
TEST(HealthCheckTest, ARunWithoutATimeoutIsRefusedBeforeItStarts) {
  EventLoop loop;
  HealthCheck::Spec spec;
  spec.command = "true";
  spec.log_path = "/dev/null";
  HealthCheck check(loop, spec);
  bool called = false;
  std::string err;
  EXPECT_FALSE(check.Start([&](const HealthResult&) { called = true; }, &err));
  EXPECT_EQ(err, "health check 'true' has no timeout");
  EXPECT_FALSE(check.running());
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace elastic
