// The host and its clients over real loopback TCP on an EventLoop whose time
// is a FakeClock: every deadline (heartbeat_timeout, last call, join_timeout,
// connect backoff, heartbeat cadence) is checked at the millisecond it falls
// due and the one before, with no sleep. The sockets are real, so the tests
// run the loop until the bytes already sent are handled (Settle) before they
// move the clock; the clock stands still meanwhile.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "testing/fake_clock.h"
#include "common/net.h"
#include "testing/host_client_test_util.h"
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

// A stranger on the host's port: connects, sends a hello that is not one.
int BadHelloStranger(int port) {
  SocketAddress addr;
  std::string err;
  if (!ResolveNumericAddress("127.0.0.1", port, &addr, &err)) return -1;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr.storage), addr.len) != 0) return -1;
  const std::string json = R"({"type":"hello"})";
  std::string frame = {0, 0, 0, static_cast<char>(json.size())};
  frame += json;
  if (send(fd, frame.data(), frame.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(frame.size())) return -1;
  return fd;
}

// True once the host closed fd (its error read and dropped).
bool ClosedByHost(int fd) {
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {}
  return n == 0;
}

int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Issue 19 item 8: one stranger produced 18,350 warning lines in 10 s. The
// host's warnings a stranger can cause are limited as the store's are: 5 per
// second (LogRateLimiter), then the next allowed line says how many were held back.
TEST_F(HostClientClockTest, StrangersRefusedAtOneInstantCostFiveLinesThenACount) {
  StartHost();
  port = host_->port();
  std::vector<int> fds;
  testing::internal::CaptureStderr();
  for (int i = 0; i < 20; ++i) fds.push_back(BadHelloStranger(port));
  bool all_closed = Pump([&] {
    for (int fd : fds)
      if (fd < 0 || !ClosedByHost(fd)) return false;
    return true;
  });
  std::string burst = testing::internal::GetCapturedStderr();
  for (int fd : fds) close(fd);
  ASSERT_TRUE(all_closed);
  EXPECT_EQ(CountLines(burst, "refused connection from"), 5) << burst;
  EXPECT_EQ(CountLines(burst, "more like it"), 0) << burst;

  Advance(999);  // still the same second: held back
  testing::internal::CaptureStderr();
  int fd = BadHelloStranger(port);
  ASSERT_TRUE(Pump([&] { return fd >= 0 && ClosedByHost(fd); }));
  close(fd);
  EXPECT_EQ(CountLines(testing::internal::GetCapturedStderr(), "refused connection from"), 0);

  Advance(1);  // a new second: one line, with the count of what was held back
  testing::internal::CaptureStderr();
  fd = BadHelloStranger(port);
  ASSERT_TRUE(Pump([&] { return fd >= 0 && ClosedByHost(fd); }));
  close(fd);
  std::string next = testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountLines(next, "refused connection from"), 1) << next;
  EXPECT_NE(next.find("(and 16 more like it)"), std::string::npos) << next;
}

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
