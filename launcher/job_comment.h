// The job's live status in Slurm's own tools (docs/admin.md "The job's Comment"):
// the rendezvous host (and its successor after a takeover) writes a short line to
// the job's Comment, which `squeue -O jobid,comment` and `scontrol show job` show:
//   elastic: round 7, 12/16 nodes, 96 workers, restarts 3/10, last: n042 lost 2026-12-03T21:04:05Z
// Two pure parts, table-tested (job_comment_test.cc):
//   ApplyToComment /     the state the line shows, from the event record's events
//   FormatJobComment     (job_events.h), and the line itself (bounded, shell-safe)
//   CommentLimiter       when to write: at most one update per interval (latest state
//                        wins), the final one at once, nothing after a failed one
// The shell (comment_updater.h) runs `scontrol update` on the loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"
#include "launcher/job_events.h"

namespace elastic {

// Longer lines are cut (with "..."): the field is for a glance, the record has the rest.
inline constexpr size_t kJobCommentMax = 200;

struct JobCommentState {
  enum class Phase { kStarting, kRunning, kRecovering, kEnded };
  Phase phase = Phase::kStarting;
  uint64_t round = 0;
  int nodes = 0;
  int max_nodes = 0;
  int workers = 0;
  int restarts_used = 0;
  int max_restarts = 0;
  std::string last;           // "n042 lost", "rank 5 failed on n003", "n7 joined", "n9 left"
  int64_t last_unix_ms = 0;
  std::string end_reason;     // kEnded: "done", "worker_failed", ... (EndReasonName)
};

// Folds one event into the state (every kind; none is ignored silently).
void ApplyToComment(const JobEvent& event, JobCommentState* state);
// The line: printable ASCII without quotes or backslashes (it passes through /bin/sh
// and scontrol), at most kJobCommentMax characters.
std::string FormatJobComment(const JobCommentState& state);

// Rate limit of the updates. The shell offers each new line (Update), the last one
// at the end (End), and asks Poll what to do; Sent reports how the update it started
// went. Rules:
//  - at most one update in flight; updates start at least `interval` apart;
//  - the latest line wins (one waiting line, replaced); a line equal to the last one
//    written is not written again;
//  - End's line starts as soon as nothing is in flight, whatever the interval;
//  - after a failed update nothing more is written (the shell warns once).
class CommentLimiter {
 public:
  struct Next {
    enum class What { kNothing, kSend, kWait };
    What what = What::kNothing;
    std::string text;            // kSend: the line, now in flight
    MonoClock::time_point at{};  // kWait: ask again then
  };

  explicit CommentLimiter(Millis interval) : interval_(interval) {}
  void Update(std::string text);
  void End(std::string text);
  Next Poll(MonoClock::time_point now);
  void Sent(bool ok);
  bool in_flight() const { return in_flight_; }
  bool failed() const { return failed_; }
  // Nothing in flight and nothing left to write (or never again: failed).
  bool idle() const { return !in_flight_ && (failed_ || !pending_); }

 private:
  Millis interval_;
  std::optional<std::string> pending_;
  bool pending_final_ = false;
  std::optional<std::string> last_sent_;
  std::optional<MonoClock::time_point> last_start_;
  bool in_flight_ = false;
  bool failed_ = false;
};

}  // namespace elastic
