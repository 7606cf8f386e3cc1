// The host and its clients over real loopback TCP on an EventLoop whose time
// is a FakeClock: every deadline (heartbeat_timeout, last call, join_timeout,
// connect backoff, heartbeat cadence) is checked at the millisecond it falls
// due and the one before, with no sleep. The sockets are real, so the tests
// run the loop until the bytes already sent are handled (Settle) before they
// move the clock; the clock stands still meanwhile.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>

#include "common/fake_clock.h"
#include "common/net.h"
#include "rendezvous/host_client_test_util.h"
#include "rendezvous/rendezvous_client.h"
#include "rendezvous/rendezvous_host.h"

namespace elastic {
namespace {

int64_t MillisSince(MonoClock::time_point t0, MonoClock::time_point t) {
  return std::chrono::duration_cast<Millis>(t - t0).count();
}

// Two nodes at most, token auth, heartbeats every 1 s and a node silent for
// 3 s lost; the deadlines a test does not look at stay far off (join_timeout
// and the last call keep their defaults: 600 s, 30 s).
RendezvousSettings ClockTestSettings() {
  RendezvousSettings s;
  s.token = "t0ken";
  s.min_nodes = 1;
  s.max_nodes = s.expected_nodes = 2;
  for (int64_t* ms : {&s.auth_timeout_ms, &s.close_timeout_ms}) *ms = 600'000;
  s.heartbeat_interval_ms = 1'000;
  s.heartbeat_timeout_ms = 3'000;
  return s;
}

class HostClientClockTest : public ::testing::Test {
 protected:
  void StartHost() {
    std::string err;
    host_ = StartLoopbackHost(loop, settings, &agents[0], &err);
    ASSERT_TRUE(host_) << err;
  }
  void StartClient(int i, const RendezvousSettings& client_settings) {
    agents[i].Take(MakeLoopbackClient(loop, client_settings, i, port));
  }
  // A client whose own timers never fire in these tests: it sends no heartbeat.
  RendezvousSettings SilentClient() const {
    RendezvousSettings s = settings;
    s.heartbeat_interval_ms = 3'600'000;
    s.heartbeat_timeout_ms = 3'600'000;
    return s;
  }
  // Real I/O until `cond` holds; the clock stands still (a hang guard, not a timing assertion).
  bool Pump(const std::function<bool()>& cond) {
    for (int i = 0; i < 2000 && !cond(); ++i) loop.RunOnce(Millis(5));
    return cond();
  }
  // Handles what is due now and every byte it sent over loopback (already in
  // the peer's socket when send returns), then what that posted.
  void Settle() {
    for (int i = 0; i < 6; ++i) loop.RunOnce(Millis(0));
  }
  void Advance(int64_t ms) {
    clock.Advance(Millis(ms));
    Settle();
  }
  int64_t Elapsed() const { return MillisSince(t0, clock.Now()); }

  FakeClock clock;
  EventLoop loop{clock};
  MonoClock::time_point t0 = clock.Now();
  RendezvousSettings settings = ClockTestSettings();
  std::map<int, TestAgent> agents;
  RendezvousHost* host_ = nullptr;
  int port = 0;
};

TEST_F(HostClientClockTest, HostDropsASilentAgentAtHeartbeatTimeoutNotBefore) {
  settings.max_restarts = 1;
  StartHost();
  port = host_->port();
  StartClient(1, SilentClient());
  agents[0].handler->Join(2);
  agents[1].handler->Join(2);
  ASSERT_TRUE(Pump([&] { return agents[0].rounds.size() == 1 && agents[1].rounds.size() == 1; }));
  ASSERT_EQ(Elapsed(), 0);  // the client was last heard (its join) at t0
  ASSERT_EQ(host_->state().nodes.size(), 2u);
  Advance(settings.heartbeat_timeout_ms - 1);
  EXPECT_EQ(host_->state().nodes.size(), 2u) << "dropped before heartbeat_timeout";
  EXPECT_TRUE(agents[0].restarts.empty());
  Advance(1);
  EXPECT_EQ(host_->state().nodes.size(), 1u) << "kept past heartbeat_timeout";
  ASSERT_EQ(agents[0].restarts.size(), 1u);  // the survivor goes on without it
  EXPECT_NE(agents[0].restarts[0].find("no heartbeat"), std::string::npos) << agents[0].restarts[0];
}

TEST_F(HostClientClockTest, HostFormsARoundAtTheLastCallDeadlineNotBefore) {
  settings.min_nodes = 2;
  settings.max_nodes = 3;
  settings.expected_nodes = 0;
  settings.last_call_timeout_ms = 5'000;
  settings.heartbeat_interval_ms = 60'000;  // no tick inside the last call
  settings.heartbeat_timeout_ms = 3'600'000;
  StartHost();
  port = host_->port();
  StartClient(1, settings);
  agents[0].handler->Join(2);
  agents[1].handler->Join(2);
  ASSERT_TRUE(Pump([&] { return host_->state().num_joined == 2; }));  // min reached at t0
  Advance(settings.last_call_timeout_ms - 1);
  EXPECT_TRUE(agents[0].rounds.empty()) << "round formed before the last call ended";
  Advance(2);  // the deadline timer runs just past the deadline
  ASSERT_EQ(agents[0].rounds.size(), 1u);
  EXPECT_EQ(agents[0].rounds[0].world_size, 4);
  ASSERT_TRUE(Pump([&] { return agents[1].rounds.size() == 1; }));
}

TEST_F(HostClientClockTest, HostEndsARoundShortOfMinNodesAtJoinTimeoutNotBefore) {
  settings.min_nodes = 2;
  settings.join_timeout_ms = 10'000;
  settings.heartbeat_interval_ms = 60'000;
  StartHost();
  agents[0].handler->Join(2);
  Settle();
  Advance(settings.join_timeout_ms - 1);
  EXPECT_TRUE(agents[0].fatal.empty()) << agents[0].fatal;
  Advance(2);
  EXPECT_NE(agents[0].fatal.find("timed out after 10 s"), std::string::npos) << agents[0].fatal;
}

// The client's connect retries: connect_retry_ms, doubling up to 1 s, the last
// one exactly at join_timeout, then the end (nothing listens on the port).
TEST_F(HostClientClockTest, ClientRetriesWithDoublingBackoffUntilJoinTimeout) {
  {
    SocketAddress addr;
    std::string err;
    ASSERT_TRUE(ResolveNumericAddress("127.0.0.1", 0, &addr, &err)) << err;
    int bind_errno = 0;
    UniqueFd probe = ListenOn(addr, &bind_errno, &err);
    ASSERT_TRUE(probe) << err;
    port = LocalPort(probe.get());  // closed again: connections are refused
  }
  settings.connect_retry_ms = 100;
  settings.join_timeout_ms = 5'000;
  StartClient(1, settings);
  agents[1].handler->Join(2);
  std::vector<int64_t> retries;  // when each retry was due, from t0
  while (retries.size() < 20) {
    ASSERT_TRUE(Pump([&] { return loop.NextTimerDue() || !agents[1].fatal.empty(); }));
    if (!agents[1].fatal.empty()) break;
    auto due = *loop.NextTimerDue();
    retries.push_back(MillisSince(t0, due));
    clock.Advance(std::chrono::duration_cast<Millis>(due - clock.Now()));
    loop.RunOnce(Millis(0));
  }
  EXPECT_EQ(retries, (std::vector<int64_t>{100, 300, 700, 1500, 2500, 3500, 4500, 5000}));
  EXPECT_EQ(Elapsed(), 5'000);
  EXPECT_NE(agents[1].fatal.find("within join_timeout (5 s)"), std::string::npos) << agents[1].fatal;
}

TEST_F(HostClientClockTest, ClientSendsAHeartbeatEveryIntervalWithoutBursts) {
  settings.min_nodes = 2;  // no round: only the client's heartbeats go on
  settings.heartbeat_interval_ms = 60'000;
  settings.heartbeat_timeout_ms = 3'600'000;
  StartHost();
  port = host_->port();
  RendezvousSettings client = settings;
  client.heartbeat_interval_ms = 1'000;
  StartClient(1, client);
  agents[1].handler->Join(2);
  ASSERT_TRUE(Pump([&] { return host_->state().num_joined == 1; }));  // welcomed at t0
  Settle();
  uint64_t before = host_->Traffic().messages_in;
  Advance(999);
  EXPECT_EQ(host_->Traffic().messages_in, before) << "a heartbeat before heartbeat_interval";
  Advance(1);
  EXPECT_EQ(host_->Traffic().messages_in, before + 1);
  Advance(1'000);
  EXPECT_EQ(host_->Traffic().messages_in, before + 2);
  Advance(3'500);  // a late turn sends one heartbeat, not one per missed interval
  EXPECT_EQ(host_->Traffic().messages_in, before + 3);
  Advance(500);  // and the cadence keeps to the original schedule
  EXPECT_EQ(host_->Traffic().messages_in, before + 4);
  EXPECT_TRUE(agents[1].fatal.empty()) << agents[1].fatal;
}

// No name lookup on the loop: a client is handed its host's address resolved
// (CreateC10dRendezvous does it before the agent's loop runs) or a numeric
// one. A name alone, even one that resolves, is not looked up.
TEST_F(HostClientClockTest, ClientGivenANameWithoutItsAddressDoesNotLookItUp) {
  ClientConfig config;
  config.settings = settings;
  config.run_id = "job";
  config.node_name = "client1";
  config.host = "localhost";
  config.port = 1;
  agents[1].Take(std::make_unique<RendezvousClient>(loop, config));
  agents[1].handler->Join(2);
  Settle();
  EXPECT_NE(agents[1].fatal.find("'localhost' is not a numeric address"), std::string::npos)
      << agents[1].fatal;
}

}  // namespace
}  // namespace elastic
