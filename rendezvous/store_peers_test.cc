#include "rendezvous/store_peers.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

struct Row {
  const char* what;
  StorePeer peer;
  std::set<std::string> allowed;
  bool admitted;
};

// The host of a 1-node step on the test cluster listens on 0.0.0.0; its workers
// reach the store at the node's address (MASTER_ADDR), so they come from it.
const Row kRows[] = {
    {"loopback", {"127.0.0.1", "127.0.0.1"}, {}, true},
    {"Debian's 127.0.1.1 hostname", {"127.0.1.1", "127.0.1.1"}, {}, true},
    {"IPv6 loopback", {"::1", "::1"}, {}, true},
    {"loopback on a :: listener", {"::ffff:127.0.0.1", "::ffff:127.0.0.1"}, {}, true},
    {"own workers through the node's address, nobody else connected",
     {"10.200.0.11", "10.200.0.11"}, {}, true},
    {"own workers through the node's address, on a :: listener",
     {"::ffff:10.200.0.11", "::ffff:10.200.0.11"}, {}, true},
    {"own workers through another address of this machine, both known",
     {"192.168.1.5", "10.200.0.11"}, {"10.200.0.11", "192.168.1.5"}, true},
    {"a member of the round", {"10.200.0.12", "10.200.0.11"}, {"10.200.0.11", "10.200.0.12"}, true},
    {"a member of the round, on a :: listener",
     {"::ffff:10.200.0.12", "::ffff:10.200.0.11"}, {"10.200.0.12"}, true},
    {"a stranger", {"10.200.0.99", "10.200.0.11"}, {"10.200.0.11", "10.200.0.12"}, false},
    {"a stranger, nothing allowed", {"10.200.0.99", "10.200.0.11"}, {}, false},
    {"a stranger on a :: listener", {"::ffff:10.200.0.99", "::ffff:10.200.0.11"}, {"10.200.0.12"}, false},
    {"a stranger over IPv6", {"fd00::99", "fd00::11"}, {"fd00::12"}, false},
    {"own workers over IPv6", {"fd00::11", "fd00::11"}, {}, true},
    {"addresses unknown (getpeername failed)", {"", ""}, {""}, false},
    {"a stranger, our address unknown", {"10.200.0.99", ""}, {}, false},
    {"addresses unknown as AddressText writes them", {"?", "?"}, {"?"}, false},
};

TEST(StorePeerAllowedTest, Table) {
  for (const Row& row : kRows)
    EXPECT_EQ(StorePeerAllowed(row.peer, row.allowed), row.admitted)
        << row.what << ": " << row.peer.addr << " -> " << row.peer.reached;
}

TEST(StorePeerAllowedTest, UnmapsOnlyMappedIPv4) {
  EXPECT_EQ(UnmapV4("::ffff:10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(UnmapV4("10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(UnmapV4("::ffff:"), "::ffff:");
  EXPECT_EQ(UnmapV4("fd00::1"), "fd00::1");
}

}  // namespace
}  // namespace elastic
