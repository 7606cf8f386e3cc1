#include "launcher/crash_loop.h"

#include <gtest/gtest.h>

#include <vector>

namespace elastic {
namespace {

using std::chrono::milliseconds;

TEST(CrashLoopTest, ConsecutiveQuickFailuresEndTheJob) {
  struct Case {
    const char* name;
    CrashLoopSettings settings;
    std::vector<long long> uptimes_ms;  // one per ended round; negative: ended by churn
                                        // (nodes lost or joined, no worker failed)
    std::vector<bool> want;             // verdict after each
  } cases[] = {
      {"three quick failures", {3, milliseconds(60000)}, {100, 2000, 59999}, {false, false, true}},
      {"a long round in between resets", {3, milliseconds(60000)}, {100, 60000, 100, 100, 100},
       {false, false, false, false, true}},
      {"exactly the window is not quick", {1, milliseconds(60000)}, {60000, 59999}, {false, true}},
      {"count 1", {1, milliseconds(1000)}, {5}, {true}},
      {"count 0 never ends", {0, milliseconds(60000)}, {1, 1, 1, 1}, {false, false, false, false}},
      {"after the verdict it stays", {2, milliseconds(10)}, {1, 1, 1}, {false, true, true}},
      // Issue 19 item 19: node churn (a node lost, back, another lost within the window)
      // ended an elastic job as a crash loop although no worker ever failed.
      {"churn alone never ends the job", {3, milliseconds(60000)}, {-100, -2000, -500, -1},
       {false, false, false, false}},
      {"churn between quick failures neither counts nor resets", {3, milliseconds(60000)},
       {100, -100, 100, -100, 100}, {false, false, false, false, true}},
      {"churn after a long round does not start a count", {2, milliseconds(1000)},
       {5000, -1, 5}, {false, false, false}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CrashLoopState state;
    for (size_t i = 0; i < c.uptimes_ms.size(); ++i) {
      long long ms = c.uptimes_ms[i];
      bool worker_failed = ms >= 0;
      EXPECT_EQ(NoteFailedRound(c.settings, milliseconds(worker_failed ? ms : -ms), worker_failed,
                                &state),
                c.want[i])
          << i;
    }
  }
}

}  // namespace
}  // namespace elastic
