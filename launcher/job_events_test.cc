#include "launcher/job_events.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace elastic {
namespace {

WorkerFailure Failure() {
  WorkerFailure f;
  f.global_rank = 3;
  f.local_rank = 1;
  f.host = "n2";
  f.exit_code = 1;
  f.time_unix_ms = 1'700'000'000'123;
  f.message = "RuntimeError: boom \"quoted\"\n";
  return f;
}

// One event of each kind, every field of it set.
std::vector<JobEvent> EveryKind() {
  std::vector<JobEvent> out;
  JobEvent start;
  start.kind = JobEventKind::kJobStart;
  start.time_unix_ms = 1'700'000'000'000;
  start.run_id = "7.0";
  start.host = "n1:42";
  start.restarts_left = 3;
  start.min_nodes = 2;
  start.max_nodes = 4;
  start.max_restarts = 3;
  out.push_back(start);
  JobEvent takeover = start;
  takeover.takeover = true;
  takeover.round = 5;
  out.push_back(takeover);
  JobEvent round = start;
  round.kind = JobEventKind::kRound;
  round.min_nodes = round.max_nodes = round.max_restarts = 0;
  round.reason = "worker_failure";
  round.nodes = 2;
  round.world_size = 4;
  round.members = {"n1:42", "n3:7"};
  round.members_total = 2;
  round.recovery_ms = 1234;
  out.push_back(round);
  JobEvent failure = start;
  failure.kind = JobEventKind::kWorkerFailure;
  failure.min_nodes = failure.max_nodes = failure.max_restarts = 0;
  failure.time_unix_ms = 1'700'000'001'000;
  failure.round = 1;
  failure.restarts_used = 1;
  failure.restarts_left = 2;
  failure.failure = Failure();
  out.push_back(failure);
  WorkerFailure signalled = Failure();
  signalled.exit_code = 0;
  signalled.signal = 9;
  signalled.message.clear();
  failure.failure = signalled;
  out.push_back(failure);
  JobEvent lost = failure;
  lost.failure.reset();
  lost.kind = JobEventKind::kNodeLost;
  lost.node = "n2:9";
  lost.reason = "heartbeat timeout";
  out.push_back(lost);
  JobEvent departed = lost;
  departed.reason = "its agent was stopped";
  departed.notice = true;
  out.push_back(departed);
  JobEvent joined = lost;
  joined.kind = JobEventKind::kNodeJoined;
  joined.reason.clear();
  out.push_back(joined);
  JobEvent end = lost;
  end.kind = JobEventKind::kEnd;
  end.node.clear();
  end.reason = "worker_failed";
  end.message = "restarts exhausted";
  end.failure = Failure();
  out.push_back(end);
  // The agents' own verdicts (version 2), made as the agent makes them.
  AgentEventContext ctx{"812.0", "n3", 4, 1, 3};
  WorkerFailure hung = Failure();
  hung.global_rank = 5;
  hung.signal = 6;
  hung.exit_code = 0;
  hung.message = "hung: FileTimerClient timer 'train.py#17' expired 0.1 s ago (pid 4242); Python stacks "
                 "collected with SIGABRT: /logs/attempt_4/1/stacks.log";
  hung.traceback = "Thread 0x1 (most recent call first): ...";
  out.push_back(MakeWorkerHung(ctx, hung, 1'700'000'009'000));
  out.push_back(MakeHealthCheckEvent(ctx, "kept_out", "exit code 3", 1'700'000'010'000));
  out.push_back(MakeHealthCheckEvent(ctx, "passes", "", 1'700'000'011'000));
  out.push_back(MakeRequeueEvent(ctx, "requeue", "requeueing job 123 (requeue 1 of 2): too_few_nodes",
                                 1'700'000'012'000));
  out.push_back(MakeRequeueEvent(ctx, "limit_reached", "not requeueing job 123: it was requeued 2 time(s)",
                                 1'700'000'013'000));
  return out;
}

void ExpectSame(const JobEvent& a, const JobEvent& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.time_unix_ms, b.time_unix_ms);
  EXPECT_EQ(a.run_id, b.run_id);
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.round, b.round);
  EXPECT_EQ(a.restarts_used, b.restarts_used);
  EXPECT_EQ(a.restarts_left, b.restarts_left);
  EXPECT_EQ(a.takeover, b.takeover);
  EXPECT_EQ(a.min_nodes, b.min_nodes);
  EXPECT_EQ(a.max_nodes, b.max_nodes);
  EXPECT_EQ(a.max_restarts, b.max_restarts);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.members, b.members);
  EXPECT_EQ(a.members_total, b.members_total);
  EXPECT_EQ(a.recovery_ms, b.recovery_ms);
  EXPECT_EQ(a.node, b.node);
  EXPECT_EQ(a.notice, b.notice);
  EXPECT_EQ(a.message, b.message);
  ASSERT_EQ(a.failure.has_value(), b.failure.has_value());
  if (a.failure) {
    EXPECT_EQ(a.failure->global_rank, b.failure->global_rank);
    EXPECT_EQ(a.failure->local_rank, b.failure->local_rank);
    EXPECT_EQ(a.failure->host, b.failure->host);
    EXPECT_EQ(a.failure->exit_code, b.failure->exit_code);
    EXPECT_EQ(a.failure->signal, b.failure->signal);
    EXPECT_EQ(a.failure->time_unix_ms, b.failure->time_unix_ms);
    EXPECT_EQ(a.failure->message, b.failure->message);
  }
}

// The one decoder reads back every event the encoder writes, on one line each.
TEST(JobEventsTest, EveryKindReadsBack) {
  for (const JobEvent& e : EveryKind()) {
    std::string line = EncodeJobEvent(e);
    SCOPED_TRACE(line);
    EXPECT_EQ(line.find('\n'), std::string::npos);
    JobEvent back;
    std::string err;
    ASSERT_TRUE(DecodeJobEvent(line, &back, &err)) << err;
    ExpectSame(e, back);
  }
}

TEST(JobEventsTest, LinesSayWhatAUserReads) {
  std::vector<JobEvent> all = EveryKind();
  std::string start = EncodeJobEvent(all[0]);
  EXPECT_NE(start.find(R"("event":"job_start")"), std::string::npos) << start;
  EXPECT_NE(start.find(R"("time":"2023-11-14T22:13:20.000Z")"), std::string::npos) << start;
  EXPECT_NE(start.find(R"("v":2)"), std::string::npos) << start;
  std::string failure = EncodeJobEvent(all[3]);
  EXPECT_NE(failure.find(R"("cause":"exit code 1")"), std::string::npos) << failure;
  std::string signalled = EncodeJobEvent(all[4]);
  EXPECT_NE(signalled.find(R"x("cause":"signal SIGKILL (9)")x"), std::string::npos) << signalled;
}

// Version 1 lines (before the agents' verdicts) still read; the verdicts say who and why.
TEST(JobEventsTest, AgentVerdictsSayNodeReasonAndMessage) {
  JobEvent old;
  std::string err;
  ASSERT_TRUE(DecodeJobEvent(R"({"v":1,"event":"round","unix_ms":1,"reason":"start"})", &old, &err)) << err;
  EXPECT_EQ(old.version, 1);
  struct Row {
    size_t index;  // in EveryKind()
    const char* text;
  } rows[] = {
      {9, R"("event":"worker_hung")"},
      {9, R"("host":"n3","round":4,"restarts_used":1,"restarts_left":2,"node":"n3","reason":"timer_expired")"},
      {9, R"x("failure":{"rank":5,"local_rank":1,"node":"n2","exit_code":0,"signal":6,"cause":"signal SIGABRT (6)")x"},
      {10, R"("event":"health_check")"},
      {10, R"("node":"n3","reason":"kept_out","message":"exit code 3")"},
      {11, R"("reason":"passes","message":"")"},
      {12, R"("event":"requeue")"},
      {12, R"("reason":"requeue","message":"requeueing job 123 (requeue 1 of 2): too_few_nodes")"},
      {13, R"("reason":"limit_reached")"},
  };
  std::vector<JobEvent> all = EveryKind();
  ASSERT_EQ(all.size(), 14u);
  for (const Row& r : rows) {
    std::string line = EncodeJobEvent(all[r.index]);
    EXPECT_NE(line.find(r.text), std::string::npos) << line;
    // The stacks stay in their file: the record names it (the message), never holds them.
    EXPECT_EQ(line.find("most recent call first"), std::string::npos) << line;
  }
}

TEST(JobEventsTest, LongTextIsBounded) {
  std::vector<JobEvent> all = EveryKind();
  JobEvent e = *std::find_if(all.begin(), all.end(), [](const JobEvent& x) { return x.kind == JobEventKind::kEnd; });
  ASSERT_TRUE(e.failure.has_value());
  e.message = std::string(100'000, 'x');
  e.failure->message = std::string(100'000, 'y');
  EXPECT_LT(EncodeJobEvent(e).size(), 4 * kJobEventMaxText);
}

TEST(JobEventsTest, BadLinesAreRefusedWithTheReason) {
  struct Row {
    std::string line;
    std::string error;
  } rows[] = {
      {"", "not a JSON object"},
      {"[1]", "not a JSON object"},
      {R"({"event":"round","unix_ms":1})", "missing field 'v'"},
      {R"({"v":3,"event":"round","unix_ms":1})", "version 3"},
      {R"({"v":1,"event":"party","unix_ms":1})", "unknown event 'party'"},
      {R"({"v":1,"event":"round"})", "missing field 'unix_ms'"},
      {R"({"v":1,"event":"round","unix_ms":"now"})", "field 'unix_ms' has the wrong type"},
      {R"({"v":1,"event":"round","unix_ms":1,"round":-1})", "field 'round' has the wrong type"},
      {R"({"v":1,"event":"round","unix_ms":1,"nodes":99999999999})", "field 'nodes' is out of range"},
      {R"({"v":1,"event":"round","unix_ms":1,"members":"n1"})", "field 'members' is not an array"},
      {R"({"v":1,"event":"round","unix_ms":1,"members":[1]})", "field 'members' holds a non-string"},
      {R"({"v":1,"event":"end","unix_ms":1,"failure":3})", "field 'failure' is not an object"},
      {R"({"v":1,"event":"end","unix_ms":1,"failure":{}})", "missing field 'rank'"},
  };
  for (const Row& row : rows) {
    JobEvent e;
    std::string err;
    EXPECT_FALSE(DecodeJobEvent(row.line, &e, &err)) << row.line;
    EXPECT_NE(err.find(row.error), std::string::npos) << row.line << ": " << err;
  }
}

// ---- the events of the host's steps, over the real state machine ----

class DeriveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    settings.min_nodes = 2;
    settings.max_nodes = 3;
    settings.expected_nodes = 3;
    settings.max_restarts = 2;
    settings.last_call_timeout_ms = 1000;
    state = InitialState(settings, now);
    memory.run_id = "7.0";
    memory.host = "n1:1";
    events.push_back(MakeJobStart(settings, nullptr, &memory, now, unix_ms));
  }
  // As the host's Feed: the facts before, the step, then the observer.
  void Do(const RendezvousEvent& ev) {
    RendezvousPhase phase = state.phase;
    uint64_t round = state.round;
    int restarts = state.restarts_used;
    std::string node;
    NodeId id = 0;
    if (auto* e = std::get_if<EvJoin>(&ev)) id = e->node;
    if (auto* e = std::get_if<EvLeave>(&ev)) id = e->node;
    if (auto* e = std::get_if<EvWorkerFailed>(&ev)) id = e->node;
    if (state.nodes.count(id)) node = state.nodes.at(id).desc.name;
    RendezvousTransition t = StepRendezvous(settings, std::move(state), ev, now);
    state = std::move(t.state);
    for (JobEvent& e : DeriveJobEvents(HostStep{ev, phase, round, restarts, node, state, t.actions, now},
                                       &memory, unix_ms))
      events.push_back(std::move(e));
  }
  void Join(NodeId id) {
    Do(EvConnect{NodeDesc{id, "n" + std::to_string(id), "10.0.0." + std::to_string(id), -1, id == 1, "", 0}});
    Do(EvJoin{id, 2});
  }
  void Advance(int ms) {
    now += Millis(ms);
    unix_ms += ms;
  }
  std::string Kinds() const {
    std::string out;
    for (const JobEvent& e : events) {
      out += JobEventKindName(e.kind);
      if (e.kind == JobEventKind::kRound) out += "(" + e.reason + "," + std::to_string(e.nodes) + ")";
      out += " ";
    }
    return out;
  }

  RendezvousSettings settings;
  TimePoint now = TimePoint(std::chrono::hours(1));
  int64_t unix_ms = 1'700'000'000'000;
  RendezvousState state;
  JobEventMemory memory;
  std::vector<JobEvent> events;
};

// A worker failure, a lost node, a node that joins while below MAX, then the job
// fails: exactly those rounds and reasons, in order, with their world sizes.
TEST_F(DeriveTest, FailureLossJoinAndEnd) {
  for (NodeId id : {1, 2, 3}) Join(id);
  ASSERT_EQ(state.phase, RendezvousPhase::kRunning);
  Advance(5000);
  Do(EvWorkerFailed{2, 0, Failure()});
  Do(EvWorkerFailed{3, 0, Failure()});  // the same round's second failure: not counted, no event
  Advance(1500);
  for (NodeId id : {1, 2, 3}) Do(EvJoin{id, 2});
  Advance(5000);
  Do(EvLeave{3, "heartbeat timeout"});
  Advance(1000);
  Do(EvTick{});  // last call over: the round forms with 2
  for (NodeId id : {1, 2}) Do(EvJoin{id, 2});
  Advance(1000);
  Do(EvTick{});
  ASSERT_EQ(state.phase, RendezvousPhase::kRunning);
  Advance(1000);
  Join(4);  // grows the group
  for (NodeId id : {1, 2}) Do(EvJoin{id, 2});
  Advance(1000);
  Do(EvWorkerFailed{4, state.round, Failure()});  // third failure-type restart: over budget
  EXPECT_EQ(Kinds(),
            "job_start round(start,3) worker_failure round(worker_failure,3) node_lost "
            "round(node_lost,2) node_joined round(node_joined,3) worker_failure end ")
      << Kinds();
  const JobEvent& recovered = events[3];
  EXPECT_EQ(recovered.recovery_ms, 1500);
  EXPECT_EQ(recovered.round, 1u);
  EXPECT_EQ(recovered.world_size, 6);
  EXPECT_EQ(recovered.restarts_used, 1);
  EXPECT_EQ(recovered.restarts_left, 1);
  EXPECT_EQ(recovered.members, (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_FALSE(events[1].recovery_ms.has_value());  // the start is no recovery
  EXPECT_EQ(events[2].failure->global_rank, 3);
  EXPECT_EQ(events[4].node, "n3");
  EXPECT_EQ(events[4].reason, "heartbeat timeout");
  EXPECT_FALSE(events[4].notice);
  EXPECT_EQ(events[5].members, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(events[5].recovery_ms, 1000);
  EXPECT_EQ(events[6].node, "n4");
  const JobEvent& end = events.back();
  EXPECT_EQ(end.reason, "worker_failed");
  ASSERT_TRUE(end.failure.has_value());
  EXPECT_EQ(end.failure->host, "n2");
  EXPECT_EQ(end.restarts_left, 0);
  size_t before = events.size();
  Do(EvLeave{2, "left"});  // after the end: nothing more
  EXPECT_EQ(events.size(), before);
}

// A node whose workers finished while others run is acknowledged (a kDone to it),
// which is not the job's end; the last one is.
TEST_F(DeriveTest, OneNodeDoneIsNotTheEnd) {
  for (NodeId id : {1, 2, 3}) Join(id);
  Do(EvSucceeded{2, 0});
  EXPECT_EQ(events.back().kind, JobEventKind::kRound);
  Do(EvSucceeded{3, 0});
  Do(EvSucceeded{1, 0});
  EXPECT_EQ(events.back().kind, JobEventKind::kEnd);
  EXPECT_EQ(events.back().reason, "done");
}

TEST_F(DeriveTest, SuccessorContinuesWithAFailoverRound) {
  CarriedRound carried;
  carried.next_round = 4;
  carried.restarts_used = 1;
  JobEventMemory m;
  JobEvent start = MakeJobStart(settings, &carried, &m, now, unix_ms);
  EXPECT_TRUE(start.takeover);
  EXPECT_EQ(start.round, 4u);
  EXPECT_EQ(start.restarts_left, 1);
  EXPECT_EQ(m.next_round_reason, "failover");
  EXPECT_EQ(m.recovering_since, now);
}

// The successor's first round: reason failover, its recovery measured from the
// moment this node saw the old host's loss (before it walked the successors).
TEST_F(DeriveTest, AFailoverRoundsRecoveryStartsAtTheDetection) {
  events.clear();
  // Round 1 next, 1 restart used, round 0 lost with 3 voters of which 2 are awaited;
  // this node saw the loss now.
  CarriedRound carried{1, 1, 0, 3, 2, now};
  Advance(700);  // the walk to this node, which takes over
  state = TakeoverState(settings, now, carried);
  memory = JobEventMemory{};
  memory.host = "n2";
  events.push_back(MakeJobStart(settings, &carried, &memory, now, unix_ms));
  for (NodeId id : {2, 3}) {  // members of round 0: the quorum
    Do(EvConnect{NodeDesc{id, "n" + std::to_string(id), "10.0.0." + std::to_string(id), -1, id == 2, "", 0}});
    Do(EvJoin{id, 2, 0});
  }
  ASSERT_EQ(state.phase, RendezvousPhase::kRunning);  // every awaited survivor is back
  EXPECT_EQ(Kinds(), "job_start round(failover,2) ") << Kinds();
  EXPECT_TRUE(events[0].takeover);
  EXPECT_EQ(events[1].round, 1u);
  EXPECT_EQ(events[1].recovery_ms, 700);
  EXPECT_EQ(events[1].restarts_used, 1);
}

// A node that leaves with notice (its agent stopped: scancel of that node, time
// limit, preemption) counts no restart: node_lost with notice, then a round whose
// reason is departure.
TEST_F(DeriveTest, ADepartureWithNoticeIsItsOwnReason) {
  for (NodeId id : {1, 2, 3}) Join(id);
  ASSERT_EQ(state.phase, RendezvousPhase::kRunning);
  Advance(2000);
  Do(EvLeave{3, "its agent was stopped", true});
  for (NodeId id : {1, 2}) Do(EvJoin{id, 2});
  Advance(1000);
  Do(EvTick{});
  ASSERT_EQ(state.phase, RendezvousPhase::kRunning);
  EXPECT_EQ(Kinds(), "job_start round(start,3) node_lost round(departure,2) ") << Kinds();
  EXPECT_TRUE(events[2].notice);
  EXPECT_EQ(events[2].node, "n3");
  EXPECT_EQ(events[3].restarts_used, 0);
  EXPECT_EQ(events[3].members, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_TRUE(events[3].recovery_ms.has_value());
}

}  // namespace
}  // namespace elastic
