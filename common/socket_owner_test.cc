// KernelSocketOwners against the running kernel: real loopback connections.
#include "common/socket_owner.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include <functional>

namespace elastic {
namespace {

constexpr uint32_t kNobody = 65534;

// A listener on `listen_addr`, a client connected to it (its socket made by
// `make_socket`) and the accepted end, with the addresses the store's filter sees.
struct Connection {
  UniqueFd listener, client, accepted;
  sockaddr_storage peer{}, local{};

  Connection(int family, const char* listen_addr, const char* connect_addr,
             const std::function<int(int family)>& make_socket = Plain) {
    sockaddr_storage addr = Address(family, listen_addr);
    listener.Reset(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    socklen_t len = sizeof addr;
    if (bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), Size(family)) != 0 ||
        listen(listener.get(), 4) != 0 || getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;
    sockaddr_storage to = Address(family, connect_addr);
    reinterpret_cast<sockaddr_in&>(to).sin_port = reinterpret_cast<sockaddr_in&>(addr).sin_port;  // same offset in v6
    client.Reset(make_socket(family));
    if (connect(client.get(), reinterpret_cast<sockaddr*>(&to), Size(family)) != 0) return;
    len = sizeof peer;
    accepted.Reset(accept(listener.get(), reinterpret_cast<sockaddr*>(&peer), &len));
    len = sizeof local;
    getsockname(accepted.get(), reinterpret_cast<sockaddr*>(&local), &len);
  }
  bool ok() const { return accepted.valid(); }

  static int Plain(int family) { return socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0); }
  static socklen_t Size(int family) { return family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6); }
  static sockaddr_storage Address(int family, const char* text) {
    sockaddr_storage ss{};
    ss.ss_family = static_cast<sa_family_t>(family);
    void* where = family == AF_INET ? static_cast<void*>(&reinterpret_cast<sockaddr_in&>(ss).sin_addr)
                                    : static_cast<void*>(&reinterpret_cast<sockaddr_in6&>(ss).sin6_addr);
    inet_pton(family, text, where);
    return ss;
  }
};

struct OursRow {
  const char* what;
  int family;
  const char* listen_addr;
  const char* connect_addr;
};

// A peer of ours, over IPv4, IPv6, and IPv4 to a dual-stack listener (the
// client an IPv6 socket connected to ::ffff:127.0.0.1: described as AF_INET6).
TEST(KernelSocketOwnersTest, OurOwnPeersAreOurs) {
  const OursRow rows[] = {
      {"IPv4 loopback", AF_INET, "127.0.0.1", "127.0.0.1"},
      {"IPv6 loopback", AF_INET6, "::1", "::1"},
      {"IPv4 to a dual-stack listener", AF_INET6, "::", "::ffff:127.0.0.1"},
  };
  for (const OursRow& row : rows) {
    Connection c(row.family, row.listen_addr, row.connect_addr);
    if (!c.ok() && row.family == AF_INET6) continue;  // no IPv6 here
    ASSERT_TRUE(c.ok()) << row.what;
    KernelSocketOwners owners;
    SocketOwner o = owners.PeerOwner(c.peer, c.local);
    ASSERT_EQ(o.status, OwnerStatus::kFound) << row.what << ": " << o.why;
    EXPECT_EQ(o.uid, geteuid()) << row.what;
  }
}

// The owner is whoever created the socket: here a socket made under the file
// system uid of nobody (this thread only), connected as ourselves.
TEST(KernelSocketOwnersTest, AnotherUsersSocketIsTheirs) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a socket of another user";
  Connection c(AF_INET, "127.0.0.1", "127.0.0.1", [](int family) {
    setfsuid(kNobody);
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    setfsuid(0);
    return fd;
  });
  ASSERT_TRUE(c.ok());
  KernelSocketOwners owners;
  SocketOwner o = owners.PeerOwner(c.peer, c.local);
  ASSERT_EQ(o.status, OwnerStatus::kFound) << o.why;
  EXPECT_EQ(o.uid, kNobody);
}

// Closed before the lookup: the kernel keeps a socket of nobody's (inode 0,
// uid 0 in TIME_WAIT), which must not pass for root's.
TEST(KernelSocketOwnersTest, APeerThatClosedIsGone) {
  Connection c(AF_INET, "127.0.0.1", "127.0.0.1");
  ASSERT_TRUE(c.ok());
  c.client.Reset();
  KernelSocketOwners owners;
  EXPECT_EQ(owners.PeerOwner(c.peer, c.local).status, OwnerStatus::kGone);
}

// Reset before the lookup: neither end is left (ENOENT both ways, as on a
// kernel without inet_diag), yet the store's listener proves the kernel can look.
TEST(KernelSocketOwnersTest, APeerThatResetIsGoneNotUnavailable) {
  Connection c(AF_INET, "127.0.0.1", "127.0.0.1");
  ASSERT_TRUE(c.ok());
  linger hard{1, 0};
  setsockopt(c.client.get(), SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  c.client.Reset();  // RST
  KernelSocketOwners owners;
  EXPECT_EQ(owners.PeerOwner(c.peer, c.local).status, OwnerStatus::kGone);
  Connection again(AF_INET, "127.0.0.1", "127.0.0.1");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(owners.PeerOwner(again.peer, again.local).status, OwnerStatus::kFound);
}

TEST(KernelSocketOwnersTest, NotAnInetConnectionIsAFailedLookup) {
  sockaddr_storage unix_addr{};
  unix_addr.ss_family = AF_UNIX;
  KernelSocketOwners owners;
  EXPECT_EQ(owners.PeerOwner(unix_addr, unix_addr).status, OwnerStatus::kFailed);
}

}  // namespace
}  // namespace elastic
