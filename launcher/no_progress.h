// Stop on no progress (issue 19 "Beyond the peers"): a training that restarts but
// never gets further (it fails at the same step every time, slower than the crash-loop
// window) burns the allocation. Given a progress signal the workers already write, the
// iteration number in --progress-file PATH (as NVRx's and Megatron's checkpoint
// iteration files: `latest_checkpointed_iteration.txt` holds "1500"), the job ends
// after --no-progress-restarts N failed rounds in a row in which that number did not
// grow: EndReason::kNoProgress, exit 5, never requeued (requeue.h).
//
// Pure here: the file's parser (ParseProgress, a table test and a fuzz target) and the
// rule over the failed rounds (NoteRoundProgress, a table test). The agent reads the
// file through a child process with a deadline (agent_progress.cc): a file on a hung
// filesystem never blocks its loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace elastic {

// The progress file's text: a non-negative decimal iteration, surrounding blanks and
// newlines allowed ("1500\n"). Anything else (empty, "release", "12abc", a number
// beyond int64) is no known progress: nullopt.
std::optional<int64_t> ParseProgress(std::string_view text);

struct NoProgressState {
  std::optional<int64_t> best;  // the highest iteration seen at a failed round's end
  int stalled = 0;              // failed rounds in a row without progress
};

// A round of workers failed (the group is about to restart) and the progress file
// says `now` (nullopt: missing or not a number). Progress: `now` above every earlier
// value (the first known value counts). Returns true when that makes `limit` failed
// rounds in a row without progress: end the job. limit 0: never.
bool NoteRoundProgress(int limit, std::optional<int64_t> now, NoProgressState* state);

}  // namespace elastic
