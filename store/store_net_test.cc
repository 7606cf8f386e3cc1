#include "store/store_net.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

namespace elastic {
namespace {

// The server sets TCP_NODELAY once on its listener (store_server.cc no longer
// sets it per connection): every accepted socket must have it.
TEST(StoreNet, AcceptedSocketsInheritNoDelayFromTheListener) {
  UniqueFd listener;
  int port = 0;
  std::string err;
  ASSERT_TRUE(ListenTcp("127.0.0.1", 0, &listener, &port, &err)) << err;
  UniqueFd client;
  ASSERT_TRUE(ConnectTcp("127.0.0.1", port, 5000, &client, &err)) << err;
  pollfd ready{listener.get(), POLLIN, 0};
  ASSERT_EQ(poll(&ready, 1, 5000), 1);  // a deadline, not a timing assertion
  UniqueFd accepted(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(accepted.valid());
  int nodelay = 0;
  socklen_t len = sizeof nodelay;
  ASSERT_EQ(getsockopt(accepted.get(), IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
  EXPECT_NE(nodelay, 0);
}

}  // namespace
}  // namespace elastic
