// Finding the run's current host (host_discovery.h, issue 19 item 17): the plan
// over the candidates' answers and the peer list as tables, the challenge's
// classification, and the ask on real loopback sockets.
#include "rendezvous/host_discovery.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>

#include "common/net.h"
#include "common/unique_fd.h"
#include "rendezvous/messages.h"

namespace elastic {
namespace {

using A = PeerAnswer;
using K = DiscoveryPlan::Kind;

TEST(HostDiscoveryTest, PlanFollowsTheAnswers) {
  struct Row {
    const char* name;
    std::vector<A> answers;
    int endpoint;
    K kind;  // on the last ask
    std::vector<size_t> walk;
    bool asks_again = false;  // on an earlier ask: kAskAgain instead
  };
  const Row rows[] = {
      {"nobody told: as before", {}, -1, K::kAsBefore, {}},
      {"nothing listens anywhere (the job starts): as before",
       {A::kRefused, A::kRefused, A::kRefused}, 0, K::kAsBefore, {}},
      {"the endpoint hosts round 0 while others listen: join it as before",
       {A::kFresh, A::kSilent, A::kSilent}, 0, K::kAsBefore, {}},
      {"the endpoint is slow to answer (a loaded machine), others listen: as before",
       {A::kSilent, A::kSilent, A::kSilent}, 0, K::kAsBefore, {}},
      {"after a failover: the node that took over, never a fresh regime",
       {A::kRefused, A::kRunning, A::kSilent, A::kRefused}, 0, K::kWalk, {1}},
      {"... even where a member's socket sits at the endpoint's address",
       {A::kSilent, A::kRunning, A::kSilent}, 0, K::kWalk, {1}},
      {"a running host beats a fresh one (a second regime starting)",
       {A::kFresh, A::kSilent, A::kRunning}, 0, K::kWalk, {2}},
      {"two running hosts (a stuck former host): both, in node order",
       {A::kRunning, A::kRunning}, -1, K::kWalk, {0, 1}},
      {"the endpoint refuses, only members' sockets (a takeover under way): walk them",
       {A::kRefused, A::kSilent, A::kSilent}, 0, K::kWalk, {1, 2}, true},
      {"... or the endpoint's host unreachable for an instant while round 0 forms (under "
       "load): ask again before walking",
       {A::kRefused, A::kSilent, A::kRefused}, 0, K::kWalk, {1}, true},
      {"... also where some do not answer in time",
       {A::kNoAnswer, A::kSilent, A::kNoAnswer}, 0, K::kWalk, {1}, true},
      {"another run's hosts do not count", {A::kOther, A::kRefused}, 1, K::kAsBefore, {}},
      {"a connection not answered in time (a first contact on a loaded machine) is no "
       "regime: the job started with the endpoint's agent asking before it hosts",
       {A::kRefused, A::kRefused, A::kNoAnswer}, 0, K::kAsBefore, {}},
      {"... but a running host answering elsewhere still wins",
       {A::kRefused, A::kNoAnswer, A::kRunning}, 0, K::kWalk, {2}},
  };
  for (const Row& r : rows) {
    DiscoveryPlan plan = PlanDiscovery(r.answers, r.endpoint, false);
    EXPECT_EQ(plan.kind, r.kind) << r.name;
    EXPECT_EQ(plan.walk, r.walk) << r.name;
    DiscoveryPlan first = PlanDiscovery(r.answers, r.endpoint, true);
    if (r.asks_again) {
      EXPECT_EQ(first.kind, K::kAskAgain) << r.name;
      EXPECT_TRUE(first.walk.empty()) << r.name;
    } else {
      EXPECT_EQ(first.kind, plan.kind) << r.name;
      EXPECT_EQ(first.walk, plan.walk) << r.name;
    }
  }
}

TEST(HostDiscoveryTest, TheAskEndsWhenItsFirstHostToWalkIsKnown) {
  using O = std::optional<A>;
  struct Row {
    const char* name;
    std::vector<O> answers;
    bool decided;
  };
  const O pending;
  const Row rows[] = {
      {"nobody asked", {}, false},
      {"the endpoint runs the job: members' silent sockets need not be waited for",
       {A::kRunning, pending, pending}, true},
      {"a host running later, everyone before it answered",
       {A::kRefused, A::kOther, A::kRunning, pending}, true},
      {"... a host forming round 0 before it is no regime: still decided",
       {A::kFresh, A::kRunning}, true},
      {"someone before it still silent (a host slow to send its challenge): wait",
       {pending, A::kRunning}, false},
      {"no running host yet", {A::kFresh, A::kRefused, pending}, false},
      {"everyone answered, nobody runs: the timeout is not needed but nothing is decided "
       "(the caller's plan decides; the ask ends when every host answered)",
       {A::kRefused, A::kRefused}, false},
  };
  for (const Row& r : rows) EXPECT_EQ(DiscoveryDecided(r.answers), r.decided) << r.name;
}

std::string Challenge(const std::string& run_id, int64_t last_completed) {
  nlohmann::json j = {{"version", kRendezvousProtocolVersion}, {"run_id", run_id},
                      {"nonce", std::string(64, 'c')}, {"auth", "none"}, {"round", 3},
                      {"last_completed", last_completed}};
  return EncodeMessage("challenge", j);
}

TEST(HostDiscoveryTest, ChallengeTellsARunningHostFromAFreshOne) {
  struct Row {
    const char* name;
    std::string payload;
    A want;
  };
  const Row rows[] = {
      {"completed round 2", Challenge("run", 2).substr(4), A::kRunning},
      {"completed round 0", Challenge("run", 0).substr(4), A::kRunning},
      {"round 0 forming", Challenge("run", -1).substr(4), A::kFresh},
      {"another run", Challenge("other", 2).substr(4), A::kOther},
      {"not our protocol", "SSH-2.0-OpenSSH", A::kOther},
      {"another message", EncodeMessage("heartbeat").substr(4), A::kOther},
  };
  for (const Row& r : rows) EXPECT_EQ(ClassifyPeerChallenge(r.payload, "run"), r.want) << r.name;
}

TEST(HostDiscoveryTest, DiscoveredRegimeIsWalkedNeverTakenOver) {
  RoundInfo r = DiscoveredRegime({"10.0.0.1", "10.0.0.2", "10.0.0.3"}, 29400, {2, 0});
  EXPECT_EQ(r.group_rank, -1);
  EXPECT_EQ(r.round, 0u);  // the walk joins only a host that completed a round
  ASSERT_EQ(r.successors.size(), 2u);
  EXPECT_EQ(r.successors[0].addr, "10.0.0.3");
  EXPECT_EQ(r.successors[1].addr, "10.0.0.1");
  EXPECT_EQ(r.successors[1].port, 29400);
}

TEST(HostDiscoveryTest, PeersAreAskedAtTheEndpointsPort) {
  // Three loopback addresses at one port: one refuses, one accepts silently (a
  // member's failover socket), one is a host of the run that completed a round.
  SocketAddress addr;
  std::string err;
  int bind_errno = 0;
  ASSERT_TRUE(ResolveNumericAddress("127.0.0.3", 0, &addr, &err)) << err;
  UniqueFd host = ListenOn(addr, &bind_errno, &err);
  ASSERT_TRUE(host) << err;
  int port = LocalPort(host.get());
  ASSERT_TRUE(ResolveNumericAddress("127.0.0.2", port, &addr, &err)) << err;
  UniqueFd silent = ListenOn(addr, &bind_errno, &err);
  if (!silent) GTEST_SKIP() << "127.0.0.2:" << port << " is taken: " << err;
  std::thread answer([&] {
    pollfd p{host.get(), POLLIN, 0};
    (void)poll(&p, 1, 5000);
    UniqueFd c(accept(host.get(), nullptr, nullptr));
    std::string frame = Challenge("run", 4);
    if (c) (void)!write(c.get(), frame.data(), frame.size());
  });
  std::vector<A> answers = AskPeers({"127.0.0.4", "127.0.0.2", "127.0.0.3"}, port, "run", 1000);
  answer.join();
  EXPECT_EQ(answers, (std::vector<A>{A::kRefused, A::kSilent, A::kRunning}));
}

TEST(HostDiscoveryTest, AJoinerDoesNotWaitOutMembersSilentSockets) {
  // The run's host (the endpoint, asked first) answers at once; a member's failover
  // socket accepts and never speaks. The ask ends with the host's answer: given an
  // hour, it would otherwise hang until ctest's timeout fails the test.
  SocketAddress addr;
  std::string err;
  int bind_errno = 0;
  ASSERT_TRUE(ResolveNumericAddress("127.0.0.5", 0, &addr, &err)) << err;
  UniqueFd host = ListenOn(addr, &bind_errno, &err);
  ASSERT_TRUE(host) << err;
  int port = LocalPort(host.get());
  ASSERT_TRUE(ResolveNumericAddress("127.0.0.6", port, &addr, &err)) << err;
  UniqueFd silent = ListenOn(addr, &bind_errno, &err);
  if (!silent) GTEST_SKIP() << "127.0.0.6:" << port << " is taken: " << err;
  std::thread answer([&] {
    pollfd p{host.get(), POLLIN, 0};
    (void)poll(&p, 1, 5000);
    UniqueFd c(accept(host.get(), nullptr, nullptr));
    std::string frame = Challenge("run", 2);
    if (c) (void)!write(c.get(), frame.data(), frame.size());
  });
  std::vector<A> answers = AskPeers({"127.0.0.5", "127.0.0.6"}, port, "run", 3600 * 1000);
  answer.join();
  EXPECT_EQ(answers, (std::vector<A>{A::kRunning, A::kSilent}));
}

}  // namespace
}  // namespace elastic
