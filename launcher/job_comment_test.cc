// The job's live Comment: its state from the events, the line, and the rate limit
// on a fake clock (times are the test's own: nothing sleeps).
#include "launcher/job_comment.h"

#include <gtest/gtest.h>

#include <vector>

namespace elastic {
namespace {

JobEvent Start(bool takeover = false) {
  JobEvent e;
  e.kind = JobEventKind::kJobStart;
  e.max_nodes = 16;
  e.max_restarts = 10;
  e.takeover = takeover;
  e.host = "n002";
  e.round = takeover ? 8 : 0;
  e.restarts_used = takeover ? 3 : 0;
  e.time_unix_ms = 1796331845000;  // 2026-12-03T21:04:05Z
  return e;
}

JobEvent Round(uint64_t round, int nodes, int workers, int restarts) {
  JobEvent e;
  e.kind = JobEventKind::kRound;
  e.round = round;
  e.nodes = nodes;
  e.world_size = workers;
  e.restarts_used = restarts;
  return e;
}

JobEvent Node(JobEventKind kind, const char* node, bool notice, int restarts) {
  JobEvent e;
  e.kind = kind;
  e.node = node;
  e.notice = notice;
  e.restarts_used = restarts;
  e.round = 7;
  e.time_unix_ms = 1796331845000;
  return e;
}

JobEvent Failure(int rank, const char* host, int restarts) {
  JobEvent e;
  e.kind = JobEventKind::kWorkerFailure;
  WorkerFailure f;
  f.global_rank = rank;
  f.host = host;
  f.exit_code = 1;
  e.failure = f;
  e.restarts_used = restarts;
  e.time_unix_ms = 1796331845000;
  return e;
}

JobEvent End(const char* reason, int restarts) {
  JobEvent e;
  e.kind = JobEventKind::kEnd;
  e.reason = reason;
  e.restarts_used = restarts;
  return e;
}

TEST(JobCommentTest, LineFromTheEvents) {
  using K = JobEventKind;
  struct Row {
    const char* name;
    std::vector<JobEvent> events;
    const char* want;
  };
  const Row rows[] = {
      {"started, no round yet", {Start()}, "elastic: starting, round 0, restarts 0/10"},
      {"the first round", {Start(), Round(0, 12, 96, 0)},
       "elastic: round 0, 12/16 nodes, 96 workers, restarts 0/10"},
      {"a lost node: recovering, named with its time",
       {Start(), Round(7, 12, 96, 2), Node(K::kNodeLost, "n042", false, 3)},
       "elastic: recovering after round 7, restarts 3/10, last: n042 lost 2026-12-03T21:04:05Z"},
      {"the issue's example: the next round after the loss",
       {Start(), Round(6, 13, 104, 2), Node(K::kNodeLost, "n042", false, 3), Round(7, 12, 96, 3)},
       "elastic: round 7, 12/16 nodes, 96 workers, restarts 3/10, last: n042 lost 2026-12-03T21:04:05Z"},
      {"a departure with notice says left",
       {Start(), Round(1, 4, 4, 0), Node(K::kNodeLost, "n9", true, 0)},
       "elastic: recovering after round 1, restarts 0/10, last: n9 left 2026-12-03T21:04:05Z"},
      {"a join", {Start(), Round(1, 4, 4, 0), Node(K::kNodeJoined, "n7", false, 0), Round(2, 5, 5, 0)},
       "elastic: round 2, 5/16 nodes, 5 workers, restarts 0/10, last: n7 joined 2026-12-03T21:04:05Z"},
      {"a worker failure names rank and node",
       {Start(), Round(0, 2, 4, 0), Failure(3, "n003", 1)},
       "elastic: recovering after round 0, restarts 1/10, last: rank 3 failed on n003 2026-12-03T21:04:05Z"},
      {"the end", {Start(), Round(2, 2, 4, 1), End("done", 1)},
       "elastic: ended (done), round 2, 2/16 nodes, 4 workers, restarts 1/10"},
      {"a successor after a takeover: recovering until its first round", {Start(true)},
       "elastic: recovering after round 8, restarts 3/10, last: failover to n002 2026-12-03T21:04:05Z"},
      {"a node name a shell would read is made safe",
       {Start(), Round(0, 1, 1, 0), Node(K::kNodeLost, "n'1$(x)`\"\\", false, 1)},
       "elastic: recovering after round 0, restarts 1/10, last: n?1?(x)??? lost 2026-12-03T21:04:05Z"},
  };
  for (const Row& r : rows) {
    JobCommentState s;
    for (const JobEvent& e : r.events) ApplyToComment(e, &s);
    EXPECT_EQ(FormatJobComment(s), r.want) << r.name;
  }
}

TEST(JobCommentTest, LongLinesAreCut) {
  JobCommentState s;
  ApplyToComment(Start(), &s);
  ApplyToComment(Node(JobEventKind::kNodeLost, std::string(500, 'n').c_str(), false, 1), &s);
  std::string line = FormatJobComment(s);
  EXPECT_EQ(line.size(), kJobCommentMax);
  EXPECT_EQ(line.substr(line.size() - 3), "...");
}

// The limiter, step by step on a fake clock: each row is a script.
TEST(JobCommentTest, RateLimit) {
  enum Op { kUpdate, kEnd, kPoll, kSentOk, kSentFailed };
  using W = CommentLimiter::Next::What;
  struct Step {
    Op op;
    int at_s;            // the fake clock, seconds
    const char* text;    // kUpdate/kEnd: the line; kPoll: the line sent ("" for none)
    W want = W::kNothing;  // kPoll
    int wait_until_s = 0;  // kPoll, kWait
  };
  struct Row {
    const char* name;
    int interval_s;
    std::vector<Step> steps;
    bool idle_at_end;
  };
  const Row rows[] = {
      {"the first line goes at once", 30,
       {{kUpdate, 0, "a"}, {kPoll, 0, "a", W::kSend}, {kSentOk, 0, ""}, {kPoll, 1, "", W::kNothing}}, true},
      {"one in flight at a time", 30,
       {{kUpdate, 0, "a"}, {kPoll, 0, "a", W::kSend}, {kUpdate, 40, "b"}, {kPoll, 40, "", W::kNothing},
        {kSentOk, 41, ""}, {kPoll, 41, "b", W::kSend}},
       false},
      {"within the interval it waits for its end", 30,
       {{kUpdate, 0, "a"}, {kPoll, 0, "a", W::kSend}, {kSentOk, 0, ""}, {kUpdate, 10, "b"},
        {kPoll, 10, "", W::kWait, 30}, {kPoll, 29, "", W::kWait, 30}, {kPoll, 30, "b", W::kSend}},
       false},
      {"latest wins: three lines in the interval, one update", 30,
       {{kUpdate, 0, "a"}, {kPoll, 0, "a", W::kSend}, {kSentOk, 0, ""}, {kUpdate, 5, "b"},
        {kUpdate, 6, "c"}, {kUpdate, 7, "d"}, {kPoll, 30, "d", W::kSend}, {kSentOk, 31, ""},
        {kPoll, 31, "", W::kNothing}},
       true},
      {"the interval counts from the last start, not its end", 30,
       {{kUpdate, 0, "a"}, {kPoll, 0, "a", W::kSend}, {kSentOk, 20, ""}, {kUpdate, 21, "b"},
        {kPoll, 21, "", W::kWait, 30}},
       false},
      {"a line equal to the last written is not written again", 30,
       {{kUpdate, 0, "a"}, {kPoll, 0, "a", W::kSend}, {kSentOk, 0, ""}, {kUpdate, 40, "a"},
        {kPoll, 40, "", W::kNothing}},
       true},
      {"the end's line goes at once, inside the interval", 30,
       {{kUpdate, 0, "a"}, {kPoll, 0, "a", W::kSend}, {kSentOk, 0, ""}, {kUpdate, 1, "b"},
        {kEnd, 2, "end"}, {kPoll, 2, "end", W::kSend}, {kSentOk, 2, ""}},
       true},
      {"the end's line waits for the one in flight, and nothing replaces it", 30,
       {{kUpdate, 0, "a"}, {kPoll, 0, "a", W::kSend}, {kEnd, 1, "end"}, {kUpdate, 1, "late"},
        {kPoll, 1, "", W::kNothing}, {kSentOk, 2, ""}, {kPoll, 2, "end", W::kSend}},
       false},
      {"after a failed update nothing more is written", 30,
       {{kUpdate, 0, "a"}, {kPoll, 0, "a", W::kSend}, {kSentFailed, 0, ""}, {kUpdate, 60, "b"},
        {kPoll, 60, "", W::kNothing}, {kEnd, 61, "end"}, {kPoll, 61, "", W::kNothing}},
       true},
      {"interval 1 s", 1,
       {{kUpdate, 0, "a"}, {kPoll, 0, "a", W::kSend}, {kSentOk, 0, ""}, {kUpdate, 0, "b"},
        {kPoll, 0, "", W::kWait, 1}, {kPoll, 1, "b", W::kSend}},
       false},
  };
  const auto t0 = MonoClock::time_point() + std::chrono::hours(1);
  for (const Row& r : rows) {
    CommentLimiter limiter{std::chrono::seconds(r.interval_s)};
    for (size_t i = 0; i < r.steps.size(); ++i) {
      const Step& s = r.steps[i];
      auto now = t0 + std::chrono::seconds(s.at_s);
      switch (s.op) {
        case kUpdate: limiter.Update(s.text); break;
        case kEnd: limiter.End(s.text); break;
        case kSentOk: limiter.Sent(true); break;
        case kSentFailed: limiter.Sent(false); break;
        case kPoll: {
          CommentLimiter::Next next = limiter.Poll(now);
          EXPECT_EQ(next.what, s.want) << r.name << " step " << i;
          if (s.want == W::kSend) {
            EXPECT_EQ(next.text, s.text) << r.name << " step " << i;
          }
          if (s.want == W::kWait) {
            EXPECT_EQ(next.at, t0 + std::chrono::seconds(s.wait_until_s)) << r.name << " step " << i;
          }
          break;
        }
      }
    }
    EXPECT_EQ(limiter.idle(), r.idle_at_end) << r.name;
  }
}

}  // namespace
}  // namespace elastic
