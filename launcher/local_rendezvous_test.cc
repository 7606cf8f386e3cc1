#include "launcher/local_rendezvous.h"

#include <gtest/gtest.h>

#include <vector>

namespace elastic {
namespace {

class LocalRendezvousTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options.standalone = true;
    options.max_restarts = 1;
    rdzv = CreateLocalRendezvous(loop, options);
    RendezvousHandler::Callbacks cb;
    cb.on_round = [this](const RoundInfo& r) { rounds.push_back(r); };
    cb.on_restart_required = [this](const std::string&) { ++restarts; };
    cb.on_job_failed = [this](const WorkerFailure& f) { failures.push_back(f); };
    cb.on_done = [this] { ++done; };
    rdzv->SetCallbacks(cb);
  }
  // Runs the zero-delay callbacks the rendezvous posted.
  void Drain() {
    for (int i = 0; i < 3; ++i) loop.RunOnce(Millis(0));
  }

  EventLoop loop;
  RendezvousOptions options;
  std::unique_ptr<RendezvousHandler> rdzv;
  std::vector<RoundInfo> rounds;
  std::vector<WorkerFailure> failures;
  int restarts = 0;
  int done = 0;
};

TEST_F(LocalRendezvousTest, JoinCompletesAtOnceAsTheOnlyNode) {
  rdzv->Join(4);
  EXPECT_TRUE(rounds.empty());  // never from inside Join
  Drain();
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_EQ(rounds[0].round, 0u);
  EXPECT_EQ(rounds[0].group_rank, 0);
  EXPECT_EQ(rounds[0].group_world_size, 1);
  EXPECT_EQ(rounds[0].rank_offset, 0);
  EXPECT_EQ(rounds[0].world_size, 4);
  EXPECT_EQ(rounds[0].store_addr, "127.0.0.1");
  EXPECT_GT(rounds[0].store_port, 0);
  EXPECT_FALSE(rounds[0].use_agent_store);
}

TEST_F(LocalRendezvousTest, FailuresCountAgainstMaxRestarts) {
  rdzv->Join(2);
  Drain();
  WorkerFailure f;
  f.global_rank = 1;
  f.exit_code = 3;
  rdzv->ReportWorkerFailure(f);
  rdzv->Join(2);
  Drain();
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[1].round, 1u);
  EXPECT_EQ(rounds[1].restarts_used, 1);
  EXPECT_TRUE(failures.empty());
  rdzv->ReportWorkerFailure(f);  // budget used up
  rdzv->Join(2);
  Drain();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].exit_code, 3);
  EXPECT_EQ(rounds.size(), 2u);  // no round after the job failed
}

TEST_F(LocalRendezvousTest, DoneAfterSucceeded) {
  rdzv->Join(1);
  Drain();
  rdzv->ReportSucceeded();
  Drain();
  EXPECT_EQ(done, 1);
}

TEST_F(LocalRendezvousTest, NoCallbacksAfterShutdown) {
  rdzv->Join(1);
  rdzv->Shutdown();
  Drain();
  EXPECT_TRUE(rounds.empty());
}

}  // namespace
}  // namespace elastic
