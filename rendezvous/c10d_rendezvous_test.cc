#include "rendezvous/c10d_rendezvous.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/net.h"

namespace elastic {
namespace {

C10dParams Params(const std::string& endpoint) {
  C10dParams p;
  p.settings.min_nodes = 1;
  p.settings.max_nodes = 2;
  p.settings.token = "t";
  p.run_id = "job";
  p.node_name = "n";
  std::string err;
  if (!endpoint.empty()) {
    EXPECT_TRUE(ParseEndpoint("endpoint", endpoint, &p.endpoint, &err)) << err;
  }
  return p;
}

int FreePort() {
  SocketAddress addr;
  std::string err;
  ResolveAddress("127.0.0.1", 0, &addr, &err);
  int bind_errno = 0;
  UniqueFd fd = ListenOn(addr, &bind_errno, &err);
  return LocalPort(fd.get());
}

TEST(C10dRendezvousTest, FirstAgentOnTheEndpointHostsTheNextJoins) {
  EventLoop loop;
  std::string endpoint = "127.0.0.1:" + std::to_string(FreePort()), err;
  auto first = CreateC10dRendezvous(loop, Params(endpoint), &err);
  ASSERT_TRUE(first) << err;
  auto second = CreateC10dRendezvous(loop, Params(endpoint), &err);
  ASSERT_TRUE(second) << err;
  EXPECT_NE(first->Describe().find("c10d host"), std::string::npos) << first->Describe();
  EXPECT_NE(second->Describe().find("c10d client"), std::string::npos) << second->Describe();
}

TEST(C10dRendezvousTest, NameForLoopbackServesEveryAddressAndGivesTheNameToWorkers) {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  SocketAddress addr;
  std::string err;
  if (!ResolveAddress(name, 1, &addr, &err) || !IsLoopback(addr.storage))
    GTEST_SKIP() << "this machine's name does not resolve to loopback";
  EventLoop loop;
  int port = FreePort();
  auto host = CreateC10dRendezvous(loop, Params(std::string(name) + ":" + std::to_string(port)), &err);
  ASSERT_TRUE(host) << err;
  EXPECT_NE(host->Describe().find(std::string("store on ") + name + " "), std::string::npos)
      << host->Describe();
  // Bound on every address: a second agent on this machine becomes a client.
  auto second = CreateC10dRendezvous(loop, Params("127.0.0.1:" + std::to_string(port)), &err);
  ASSERT_TRUE(second) << err;
  EXPECT_NE(second->Describe().find("c10d client"), std::string::npos);
}

TEST(C10dRendezvousTest, IsHostZeroJoinsEvenWhenThePortIsFree) {
  EventLoop loop;
  C10dParams p = Params("127.0.0.1:" + std::to_string(FreePort()));
  p.settings.host_mode = HostMode::kClient;
  std::string err;
  auto handler = CreateC10dRendezvous(loop, p, &err);
  ASSERT_TRUE(handler) << err;
  EXPECT_NE(handler->Describe().find("c10d client"), std::string::npos);
}

TEST(C10dRendezvousTest, StandaloneHostsOnLoopbackWithAnEphemeralPort) {
  EventLoop loop;
  C10dParams p = Params("");
  p.standalone = true;
  std::string err;
  auto handler = CreateC10dRendezvous(loop, p, &err);
  ASSERT_TRUE(handler) << err;
  EXPECT_NE(handler->Describe().find("auth token"), std::string::npos) << handler->Describe();
}

TEST(C10dRendezvousTest, InvalidSettingsAreRefusedBeforeAnythingBinds) {
  EventLoop loop;
  C10dParams p = Params("127.0.0.1:1");
  p.settings.min_nodes = 3;
  std::string err;
  EXPECT_FALSE(CreateC10dRendezvous(loop, p, &err));
  EXPECT_NE(err.find("--nnodes"), std::string::npos) << err;
}

}  // namespace
}  // namespace elastic
