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
    std::vector<long long> uptimes_ms;  // one per failed round
    std::vector<bool> want;             // verdict after each
  } cases[] = {
      {"three quick failures", {3, milliseconds(60000)}, {100, 2000, 59999}, {false, false, true}},
      {"a long round in between resets", {3, milliseconds(60000)}, {100, 60000, 100, 100, 100},
       {false, false, false, false, true}},
      {"exactly the window is not quick", {1, milliseconds(60000)}, {60000, 59999}, {false, true}},
      {"count 1", {1, milliseconds(1000)}, {5}, {true}},
      {"count 0 never ends", {0, milliseconds(60000)}, {1, 1, 1, 1}, {false, false, false, false}},
      {"after the verdict it stays", {2, milliseconds(10)}, {1, 1, 1}, {false, true, true}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CrashLoopState state;
    for (size_t i = 0; i < c.uptimes_ms.size(); ++i) {
      EXPECT_EQ(NoteFailedRound(c.settings, milliseconds(c.uptimes_ms[i]), &state), c.want[i]) << i;
    }
  }
}

}  // namespace
}  // namespace elastic
