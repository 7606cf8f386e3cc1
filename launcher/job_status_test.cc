#include "launcher/job_status.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace elastic {
namespace {

NodeRecord Node(NodeId id, const std::string& name, int local_world_size) {
  NodeRecord rec;
  rec.desc.id = id;
  rec.desc.name = name;
  rec.local_world_size = local_world_size;
  return rec;
}

WorkerFailure Failure(int rank, const std::string& host, int64_t unix_ms) {
  WorkerFailure f;
  f.global_rank = rank;
  f.local_rank = rank % 2;
  f.host = host;
  f.exit_code = 1;
  f.time_unix_ms = unix_ms;
  f.message = "ValueError: bad batch\n  File x.py";
  return f;
}

JobEventMemory Memory() {
  JobEventMemory m;
  m.run_id = "812.0";
  m.host = "n1";
  m.min_nodes = 2;
  m.max_nodes = 4;
  m.max_restarts = 10;
  m.last_failures = {Failure(5, "n3", 1'700'000'000'000)};
  m.recoveries = 2;
  m.recovery_ms_total = 8412;
  m.round_since_unix_ms = 1'700'000'050'000;
  m.last_change = "n4 lost";
  m.last_change_unix_ms = 1'700'000'040'000;
  return m;
}

// Three members (one done), a spare on the wait list, a node kept out by its health
// check (watching), and the observer that asks (not listed).
RendezvousState Running() {
  RendezvousState s;
  s.phase = RendezvousPhase::kRunning;
  s.round = 3;
  s.restarts_used = 3;
  for (auto [id, name] : std::vector<std::pair<NodeId, std::string>>{
           {1, "n1"}, {2, "n2"}, {3, "n3"}, {5, "n5"}, {6, "n6"}, {9, "status@n1:77"}})
    s.nodes[id] = Node(id, name, 2);
  s.nodes[2].succeeded = true;
  s.nodes[5].joined = true;
  s.nodes[5].standby = "n5 is DRAIN in Slurm";
  s.wait_list = {5};
  s.members = {1, 3, 2};
  return s;
}

TEST(JobStatusTest, TheViewOfARunningJob) {
  JobStatus st = MakeJobStatus(Running(), Memory(), 9, 1'700'000'062'000);
  EXPECT_EQ(st.phase, "running");
  EXPECT_EQ(st.round, 3u);
  EXPECT_EQ((std::vector<int>{st.nodes, st.world_size, st.restarts_used, st.restarts_left}),
            (std::vector<int>{3, 6, 3, 7}));
  struct Row {
    std::string name, state, standby;
  };
  std::vector<Row> members, others;
  for (const auto& n : st.members) members.push_back({n.name, n.state, n.standby});
  for (const auto& n : st.others) others.push_back({n.name, n.state, n.standby});
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[0].name + " " + members[0].state, "n1 running");  // group-rank order
  EXPECT_EQ(members[1].name + " " + members[1].state, "n3 running");
  EXPECT_EQ(members[2].name + " " + members[2].state, "n2 succeeded");
  ASSERT_EQ(others.size(), 2u);
  EXPECT_EQ(others[0].name + " " + others[0].state + " " + others[0].standby, "n5 spare n5 is DRAIN in Slurm");
  EXPECT_EQ(others[1].name + " " + others[1].state, "n6 watching");
  EXPECT_EQ(st.others_total, 2);
  EXPECT_EQ(st.round_since_unix_ms, 1'700'000'050'000);
  EXPECT_EQ(st.recovery_ms_total, 8412);
}

TEST(JobStatusTest, PhasesAndTheirNodes) {
  struct Row {
    RendezvousPhase phase;
    const char* name;
    int nodes;  // members listed
    const char* n5;  // n5's state among the others
  } rows[] = {
      {RendezvousPhase::kJoining, "forming", 0, "joining"},
      {RendezvousPhase::kRunning, "running", 3, "spare"},
      {RendezvousPhase::kFinishing, "finishing", 3, "spare"},
      {RendezvousPhase::kClosed, "ended", 0, "joining"},
  };
  for (const Row& row : rows) {
    RendezvousState s = Running();
    s.phase = row.phase;
    s.wait_list.clear();
    JobStatus st = MakeJobStatus(s, Memory(), 9, 1);
    SCOPED_TRACE(row.name);
    EXPECT_EQ(st.phase, row.name);
    EXPECT_EQ(st.nodes, row.nodes);
    EXPECT_EQ(st.round_since_unix_ms, row.nodes ? 1'700'000'050'000 : 0);
    bool found = false;
    for (const auto& n : st.others)
      if (n.name == "n5") {
        found = true;
        EXPECT_EQ(n.state, row.n5);
      }
    EXPECT_TRUE(found);
  }
}

TEST(JobStatusTest, TheViewReadsBack) {
  JobStatus st = MakeJobStatus(Running(), Memory(), 9, 1'700'000'062'000);
  JobStatus back;
  std::string err;
  ASSERT_TRUE(DecodeJobStatus(EncodeJobStatus(st), &back, &err)) << err;
  EXPECT_EQ(EncodeJobStatus(back), EncodeJobStatus(st));
  ASSERT_EQ(back.last_failures.size(), 1u);
  EXPECT_EQ(back.last_failures[0].global_rank, 5);
  EXPECT_EQ(back.members[2].state, "succeeded");
  EXPECT_EQ(back.others[0].standby, "n5 is DRAIN in Slurm");
}

TEST(JobStatusTest, BadViewsAreNamed) {
  struct Row {
    std::string text;
    std::string error;
  } rows[] = {
      {"[]", "not a JSON object"},
      {R"({"unix_ms":1,"phase":"running"})", "missing field 'v'"},
      {R"({"v":2,"unix_ms":1,"phase":"running"})", "version 2"},
      {R"({"v":1,"phase":"running"})", "missing field 'unix_ms'"},
      {R"({"v":1,"unix_ms":1})", "missing field 'phase'"},
      {R"({"v":1,"unix_ms":1,"phase":"running","round":"x"})", "field 'round' has the wrong type"},
      {R"({"v":1,"unix_ms":1,"phase":"running","members":{}})", "field 'members' is not an array"},
      {R"({"v":1,"unix_ms":1,"phase":"running","members":[1]})", "field 'members' holds a non-object"},
      {R"({"v":1,"unix_ms":1,"phase":"running","others":[{"state":"spare"}]})", "missing field 'name'"},
      {R"({"v":1,"unix_ms":1,"phase":"running","last_failures":[{}]})", "missing field 'rank'"},
      {R"({"v":1,"unix_ms":1,"phase":"running","last_failures":3})", "field 'last_failures' is not an array"},
  };
  for (const Row& row : rows) {
    JobStatus st;
    std::string err;
    EXPECT_FALSE(DecodeJobStatus(nlohmann::json::parse(row.text), &st, &err)) << row.text;
    EXPECT_NE(err.find(row.error), std::string::npos) << row.text << ": " << err;
  }
}

TEST(JobStatusTest, TheTextSaysWhatAUserAsks) {
  JobStatus st = MakeJobStatus(Running(), Memory(), 9, 1'700'000'062'000);
  std::string text = RenderJobStatus(st, 1'700'000'062'000);
  for (const char* line : {"run 812.0: running, round 3, 3 node(s) of 2:4, 6 worker(s), for 12 s\n",
                           "rendezvous host: n1\n", "restarts: 3 used, 7 left (--max-restarts=10)\n",
                           "recoveries: 2, 8.4 s in all\n", "last change: n4 lost, 22 s ago\n",
                           "members, in group-rank order (3):\n  n1  running\n  n3  running\n  n2  succeeded\n",
                           "other nodes (2):\n  n5  spare (n5 is DRAIN in Slurm)\n  n6  watching\n",
                           "last failures, newest last:\n  2023-11-14T22:13:20.000Z rank 5 (local rank 1) on n3: "
                           "exit code 1: ValueError: bad batch\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n---\n" << text;
  EXPECT_EQ(text.find("status@"), std::string::npos) << text;
}

}  // namespace
}  // namespace elastic
