// Observers (RendezvousHandler::Watch): a node kept out of the rounds, e.g. by
// its health check, stays connected to the host and is told the job's end,
// without ever counting in a round. The host and its clients over real
// loopback TCP, all on one EventLoop in one process.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "testing/host_client_test_util.h"
#include "rendezvous/rendezvous_client.h"
#include "rendezvous/rendezvous_host.h"

namespace elastic {
namespace {

class ObserverTest : public LoopbackRendezvousTest {
 protected:
  void SetUp() override {
    settings.min_nodes = 2;
    settings.max_nodes = 3;
    settings.expected_nodes = 3;  // an observer counted as the third would complete the round
    settings.last_call_timeout_ms = 200;
    settings.max_restarts = 0;
    settings.token = "t0ken";
    settings.close_timeout_ms = 60'000;
  }
  // Agent `observer` watches (connected first, so the round could count it);
  // the two others join and get round 0.
  void WatchBesideTwoJoined(int observer) {
    StartHost();
    StartClient(1);
    StartClient(2);
    agents[observer].handler->Watch();
    ASSERT_TRUE(RunUntil([&] { return host_->state().nodes.size() == 1; }));
    for (auto& [i, a] : agents)
      if (i != observer) a.handler->Join(2);
    ASSERT_TRUE(RunUntil([&] {
      for (auto& [i, a] : agents)
        if (i != observer && a.rounds.empty()) return false;
      return true;
    }));
  }
  bool Ended(const TestAgent& a) const { return a.done || a.job_failed || !a.fatal.empty(); }
};

TEST_F(ObserverTest, AWatchingClientIsNotInTheRoundAndIsDoneWhenTheOthersSucceed) {
  WatchBesideTwoJoined(2);
  for (int i : {0, 1}) {
    EXPECT_EQ(agents[i].rounds[0].group_world_size, 2);
    EXPECT_EQ(agents[i].rounds[0].world_size, 4);
    EXPECT_EQ(agents[i].rounds[0].successors.size(), 2u);
  }
  EXPECT_EQ(host_->state().nodes.size(), 3u);  // connected all along
  agents[0].handler->ReportSucceeded();
  agents[1].handler->ReportSucceeded();
  ASSERT_TRUE(RunUntil([&] { return Ended(agents[2]); }));
  EXPECT_TRUE(agents[2].done);
  EXPECT_EQ(agents[2].fatal, "");
  EXPECT_TRUE(agents[2].rounds.empty());
  for (int i : {1, 2}) {
    ASSERT_TRUE(RunUntil([&] { return agents[i].done; }));
    agents[i].handler.reset();
  }
  ASSERT_TRUE(RunUntil([&] { return agents[0].done; }));
}

// The host's own agent kept out: it hosts, watches, and ends with the job.
TEST_F(ObserverTest, AWatchingHostIsNotInTheRoundAndIsDoneWhenItsClientsSucceed) {
  WatchBesideTwoJoined(0);
  for (int i : {1, 2}) EXPECT_EQ(agents[i].rounds[0].group_world_size, 2);
  agents[1].handler->ReportSucceeded();
  agents[2].handler->ReportSucceeded();
  for (int i : {1, 2}) {
    ASSERT_TRUE(RunUntil([&] { return agents[i].done; }));
    agents[i].handler.reset();
  }
  ASSERT_TRUE(RunUntil([&] { return Ended(agents[0]); }));
  EXPECT_TRUE(agents[0].done);
  EXPECT_EQ(agents[0].fatal, "");
  EXPECT_TRUE(agents[0].rounds.empty());
}

TEST_F(ObserverTest, AJobFailureReachesTheObserverWithItsReasonAndFailure) {
  WatchBesideTwoJoined(2);
  WorkerFailure f;
  f.global_rank = 3;
  f.exit_code = 7;
  agents[1].handler->ReportWorkerFailure(f);  // --max-restarts 0: the job fails
  ASSERT_TRUE(RunUntil([&] { return Ended(agents[2]); }));
  EXPECT_TRUE(agents[2].job_failed);
  EXPECT_EQ(agents[2].end.reason, EndReason::kWorkerFailed);
  EXPECT_EQ(agents[2].failure.global_rank, 3);
  EXPECT_EQ(agents[2].failure.exit_code, 7);
}

TEST_F(ObserverTest, AFatalEndReachesTheObserverWithItsReason) {
  settings.join_timeout_ms = 1'000;
  WatchBesideTwoJoined(2);
  // A member lost: the host is left alone of 2 (the observer is no node), no majority: it
  // waits out join_timeout and ends the job without acting for it.
  agents[1].handler.reset();
  ASSERT_TRUE(RunUntil([&] { return Ended(agents[2]); }));
  EXPECT_EQ(agents[2].end.reason, EndReason::kNoMajority) << agents[2].fatal;
  EXPECT_NE(agents[2].fatal.find("no strict majority"), std::string::npos) << agents[2].fatal;
}

// Its check passes later: it joins as a latecomer (growth of the running round).
TEST_F(ObserverTest, AnObserverThatJoinsLaterGrowsTheJob) {
  WatchBesideTwoJoined(2);
  agents[2].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] { return agents[0].restarts.size() == 1 && agents[1].restarts.size() == 1; }));
  agents[0].handler->Join(2);
  agents[1].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] {
    return agents[0].rounds.size() == 2 && agents[1].rounds.size() == 2 && agents[2].rounds.size() == 1;
  }));
  EXPECT_EQ(agents[2].rounds[0].round, 1u);
  EXPECT_EQ(agents[2].rounds[0].group_world_size, 3);
}

}  // namespace
}  // namespace elastic
