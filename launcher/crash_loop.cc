#include "launcher/crash_loop.h"

namespace elastic {

bool NoteFailedRound(const CrashLoopSettings& settings, std::chrono::milliseconds uptime,
                     bool worker_failed, CrashLoopState* state) {
  if (!worker_failed) {
    // membership churn: not the workers' doing
  } else if (uptime < settings.window) {
    ++state->quick_failures;
  } else {
    state->quick_failures = 0;
  }
  return settings.count > 0 && state->quick_failures >= settings.count;
}

}  // namespace elastic
