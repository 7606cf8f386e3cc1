// A latecomer's walk of the successors on a FakeClock (failover_rendezvous.h): a walk
// that found no host is walked again after PauseAfterAFruitlessWalk, until join_timeout;
// a host that welcomed it and is lost in turn starts a new join_timeout. Real loopback
// sockets: a "cut" successor is a listening socket that never sends its challenge (the
// connection lands in its backlog, as one to a SIGSTOPped or cut-off agent's port does);
// healing it, that socket becomes the running regime's host.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/net.h"
#include "rendezvous/failover_rendezvous.h"
#include "rendezvous/rendezvous_host.h"
#include "testing/fake_clock.h"
#include "testing/host_client_test_util.h"

namespace elastic {
namespace {

// Heartbeats every 1 s, silent for 3 s is lost: a candidate that sends no challenge is
// skipped after 4 s; join_timeout 20 s.
RendezvousSettings WalkSettings() {
  RendezvousSettings s;
  s.token = "t0ken";
  s.min_nodes = s.max_nodes = s.expected_nodes = 1;
  s.max_restarts = 3;
  for (int64_t* ms : {&s.auth_timeout_ms, &s.close_timeout_ms}) *ms = 600'000;
  s.heartbeat_interval_ms = 1'000;
  s.heartbeat_timeout_ms = 3'000;
  s.join_timeout_ms = 20'000;
  return s;
}

class FailoverWalkClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SocketAddress addr;
    std::string err;
    ASSERT_TRUE(ResolveNumericAddress("127.0.0.1", 0, &addr, &err)) << err;
    int bind_errno = 0;
    cut_ = ListenOn(addr, &bind_errno, &err);
    ASSERT_TRUE(cut_) << err;
    port_ = LocalPort(cut_.get());
  }
  void TearDown() override {
    for (int fd : accepted_) close(fd);
  }
  // The latecomer: a record says round 0 of the run runs with one successor, at port_.
  void StartLatecomer() {
    RoundInfo regime;
    regime.round = 0;
    regime.group_rank = -1;
    regime.group_world_size = 1;
    regime.successors.push_back(Successor{"n0", "127.0.0.1", port_});
    FailoverParams params{settings, "job", "late", ""};
    late_.handler = std::make_unique<FailoverRendezvous>(loop, params, regime, "a record here");
    late_.Wire();
    late_.handler->Join(1);
    Settle();
  }
  // The walks so far: the connections that reached the cut successor's backlog (kept open:
  // accepting sends nothing, so each still waits for its challenge).
  int Walks() {
    for (int fd; cut_ && (fd = accept4(cut_.get(), nullptr, nullptr, SOCK_NONBLOCK)) >= 0;)
      accepted_.push_back(fd);
    return static_cast<int>(accepted_.size());
  }
  // The cut heals: the successor's socket becomes the running regime's host, which has
  // completed round 0 (its own node joined; MAX 1).
  RendezvousHost* Heal() {
    std::string err;
    auto host = MakeLoopbackHostOn(loop, settings, std::move(cut_), &err,
                                   [](HostConfig* c) { c->node_name = "n0"; });
    EXPECT_TRUE(host) << err;
    RendezvousHost* raw = host.get();
    host_.Take(std::move(host));
    host_.handler->Join(1);
    Settle();
    EXPECT_EQ(host_.rounds.size(), 1u);
    return raw;
  }
  void Settle() {
    for (int i = 0; i < 6; ++i) loop.RunOnce(Millis(0));
  }
  void Advance(int64_t ms) {
    clock.Advance(Millis(ms));
    Settle();
  }

  FakeClock clock;
  EventLoop loop{clock};
  RendezvousSettings settings = WalkSettings();
  UniqueFd cut_;
  int port_ = 0;
  std::vector<int> accepted_;
  TestAgent late_;
  TestAgent host_;
};

// Issue 19, the short fault run (seed 19): the latecomers walked the successors once,
// found none (two cut off, two restarting) and exited 3 at once ("no successor of round 3
// is left"). Walks at 0, 5, 11 and 18 s: each candidate silent for 4 s, then pauses of
// 1, 2 and 3 s (capped at heartbeat_timeout); past join_timeout (20 s), the host is lost.
TEST_F(FailoverWalkClockTest, AWalkThatFoundNobodyIsWalkedAgainUntilJoinTimeout) {
  StartLatecomer();
  EXPECT_EQ(Walks(), 1);
  int64_t now = 0;
  auto advance_to = [&](int64_t t) {  // every timer fires at its own millisecond
    Advance(t - now);
    now = t;
  };
  const int64_t next_walk_at[] = {5'000, 11'000, 18'000};  // each: 4 s silent, then the pause
  int walks = 1;
  for (int64_t at : next_walk_at) {
    advance_to(at - (at == 5'000 ? 1'000 : at == 11'000 ? 2'000 : 3'000));  // the walk found none
    advance_to(at - 1);
    EXPECT_EQ(Walks(), walks) << "before " << at;
    EXPECT_EQ(late_.fatal, "") << "before " << at;
    advance_to(at);
    EXPECT_EQ(Walks(), ++walks) << "at " << at;
  }
  advance_to(22'000 - 1);  // the fourth walk's candidate is silent until 22 s
  EXPECT_EQ(late_.fatal, "");
  advance_to(22'000);
  EXPECT_NE(late_.fatal.find("within join_timeout (20 s)"), std::string::npos) << late_.fatal;
  EXPECT_EQ(late_.end.reason, EndReason::kHostLost);
  EXPECT_EQ(Walks(), 4);
}

// The cut heals during the pause after the first walk: the second walk joins the running
// regime's host (wait-listed: its round is full); that host's loss, past the first walk's
// deadline, starts a new walk with a join_timeout of its own.
TEST_F(FailoverWalkClockTest, TheWalkAfterTheCutHealedJoinsAndALaterLossWalksAfresh) {
  StartLatecomer();
  Advance(4'000);  // the first walk found nobody
  ASSERT_EQ(late_.fatal, "");
  ASSERT_EQ(Walks(), 1);
  for (int fd : accepted_) close(fd);
  accepted_.clear();
  RendezvousHost* host = Heal();
  Advance(1'000);
  Settle();
  EXPECT_EQ(host->state().wait_list.size(), 1u);
  for (int i = 0; i < 30; ++i) Advance(1'000);  // heartbeats both ways; t = 35 s
  EXPECT_EQ(host->state().wait_list.size(), 1u);
  ASSERT_EQ(late_.fatal, "");
  host_.handler.reset();  // the host is lost (its agent killed): nobody listens any more
  Settle();
  Settle();
  EXPECT_EQ(late_.fatal, "") << "a new join_timeout starts at the loss";
  Advance(19'000);
  EXPECT_EQ(late_.fatal, "");
  Advance(1'001);
  EXPECT_NE(late_.fatal.find("within join_timeout (20 s)"), std::string::npos) << late_.fatal;
}

}  // namespace
}  // namespace elastic
