#include "launcher/crash_loop.h"

namespace elastic {

bool NoteFailedRound(const CrashLoopSettings& settings, std::chrono::milliseconds uptime,
                     CrashLoopState* state) {
  if (uptime < settings.window) {
    ++state->quick_failures;
  } else {
    state->quick_failures = 0;
  }
  return settings.count > 0 && state->quick_failures >= settings.count;
}

}  // namespace elastic
