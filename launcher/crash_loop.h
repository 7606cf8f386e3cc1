// Crash loops (PyTorch #60910: restarting a worker group that fails at once
// is pointless): a group whose first failure comes within `window` of its
// start on `count` consecutive rounds ends the job early (exit 2: do not
// requeue). A round that ran longer than the window resets the count. Pure:
// the agent passes each failed round's uptime (start of its workers to its
// first failure, on the monotonic clock).
//
// Every agent sees every round end (a failure anywhere restarts all), so every
// node reaches the same verdict in the same round.
#pragma once

#include <chrono>

namespace elastic {

// From AgentSettings (crash_loop_count, crash_loop_window_ms), passed in: no second
// copy of their defaults here (default-constructed: never a crash loop).
struct CrashLoopSettings {
  int count = 0;                           // --crash-loop-count; 0 = never
  std::chrono::milliseconds window{};      // --crash-loop-window
};

struct CrashLoopState {
  int quick_failures = 0;  // consecutive rounds that failed within the window
};

// One round of workers ended `uptime` after its start (and the group is about to
// restart): `worker_failed` when a worker's failure (on any node) ended it, not when
// nodes were lost or joined (churn: issue 19 item 19): churn neither counts nor resets.
// True when that makes a crash loop: end the job.
bool NoteFailedRound(const CrashLoopSettings& settings, std::chrono::milliseconds uptime,
                     bool worker_failed, CrashLoopState* state);

}  // namespace elastic
