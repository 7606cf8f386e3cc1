#include "launcher/job_comment.h"

#include <fmt/format.h>

#include "launcher/failure_report.h"

namespace elastic {

void ApplyToComment(const JobEvent& e, JobCommentState* s) {
  s->restarts_used = e.restarts_used;
  switch (e.kind) {
    case JobEventKind::kJobStart:
      s->max_nodes = e.max_nodes;
      s->max_restarts = e.max_restarts;
      s->round = e.round;
      // A successor after the host's loss: recovering until its first round.
      s->phase = e.takeover ? JobCommentState::Phase::kRecovering : JobCommentState::Phase::kStarting;
      if (e.takeover) {
        s->last = "failover to " + e.host;
        s->last_unix_ms = e.time_unix_ms;
      }
      return;
    case JobEventKind::kRound:
      s->phase = JobCommentState::Phase::kRunning;
      s->round = e.round;
      s->nodes = e.nodes;
      s->workers = e.world_size;
      return;
    case JobEventKind::kWorkerFailure:
      if (s->phase == JobCommentState::Phase::kRunning) s->phase = JobCommentState::Phase::kRecovering;
      if (e.failure) {
        s->last = fmt::format("rank {} failed on {}", e.failure->global_rank, e.failure->host);
        s->last_unix_ms = e.time_unix_ms;
      }
      return;
    case JobEventKind::kNodeLost:
    case JobEventKind::kNodeJoined:
      if (s->phase == JobCommentState::Phase::kRunning) s->phase = JobCommentState::Phase::kRecovering;
      s->last = e.node + (e.kind == JobEventKind::kNodeJoined ? " joined" : e.notice ? " left" : " lost");
      s->last_unix_ms = e.time_unix_ms;
      return;
    case JobEventKind::kEnd:
      s->phase = JobCommentState::Phase::kEnded;
      s->end_reason = e.reason;
      return;
    case JobEventKind::kWorkerHung:   // one agent's verdicts, in the record only: the
    case JobEventKind::kHealthCheck:  // host's worker_failure / round say what changed
    case JobEventKind::kRequeue:
      return;
  }
}

namespace {

// Printable ASCII, without what a shell or scontrol would read: ' " \ ` $.
std::string Safe(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    bool ok = c >= 0x20 && c < 0x7f && c != '\'' && c != '"' && c != '\\' && c != '`' && c != '$';
    out.push_back(ok ? static_cast<char>(c) : '?');
  }
  return out;
}

std::string UtcSeconds(int64_t unix_ms) {
  std::string t = FormatUnixMillis(unix_ms);  // 2026-12-03T21:04:05.123Z
  return t.size() > 19 ? t.substr(0, 19) + "Z" : t;
}

}  // namespace

std::string FormatJobComment(const JobCommentState& s) {
  using P = JobCommentState::Phase;
  std::string text = "elastic: ";
  switch (s.phase) {
    case P::kStarting:
      text += fmt::format("starting, round {}", s.round);
      break;
    case P::kRunning:
      text += fmt::format("round {}, {}/{} nodes, {} workers", s.round, s.nodes, s.max_nodes, s.workers);
      break;
    case P::kRecovering:
      text += fmt::format("recovering after round {}", s.round);
      break;
    case P::kEnded:
      text += fmt::format("ended ({}), round {}, {}/{} nodes, {} workers", s.end_reason.empty() ? "unknown" : s.end_reason,
                          s.round, s.nodes, s.max_nodes, s.workers);
      break;
  }
  text += fmt::format(", restarts {}/{}", s.restarts_used, s.max_restarts);
  if (!s.last.empty()) text += fmt::format(", last: {} {}", s.last, UtcSeconds(s.last_unix_ms));
  text = Safe(text);
  if (text.size() > kJobCommentMax) text = text.substr(0, kJobCommentMax - 3) + "...";
  return text;
}

void CommentLimiter::Update(std::string text) {
  if (pending_final_) return;  // the end's line is the last word
  pending_ = std::move(text);
}

void CommentLimiter::End(std::string text) {
  pending_ = std::move(text);
  pending_final_ = true;
}

CommentLimiter::Next CommentLimiter::Poll(MonoClock::time_point now) {
  Next next;
  if (failed_ || in_flight_ || !pending_) return next;
  if (pending_ == last_sent_) {  // nothing new to say
    pending_.reset();
    return next;
  }
  if (!pending_final_ && last_start_ && now < *last_start_ + interval_) {
    next.what = Next::What::kWait;
    next.at = *last_start_ + interval_;
    return next;
  }
  next.what = Next::What::kSend;
  next.text = *pending_;
  last_sent_ = std::move(*pending_);
  pending_.reset();
  last_start_ = now;
  in_flight_ = true;
  return next;
}

void CommentLimiter::Sent(bool ok) {
  in_flight_ = false;
  if (!ok) failed_ = true;
}

}  // namespace elastic
