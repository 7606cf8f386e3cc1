#include "launcher/network_reach.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(IsLoopbackAddress, Table) {
  for (const char* yes : {"127.0.0.1", "127.0.1.1", "127.255.255.254", "::1", "::ffff:127.0.0.1"})
    EXPECT_TRUE(IsLoopbackAddress(yes)) << yes;
  for (const char* no : {"10.200.0.11", "128.0.0.1", "126.255.255.255", "::", "::2", "fe80::1",
                         "::ffff:10.0.0.1", "localhost", "", "127.0.0", "n1"})
    EXPECT_FALSE(IsLoopbackAddress(no)) << no;
}

RendezvousOptions RunOfUpTo(int max_nodes, const char* host) {
  RendezvousOptions rdzv;
  rdzv.min_nodes = 1;
  rdzv.max_nodes = max_nodes;
  if (host) rdzv.endpoint = Endpoint{host, 29500};
  return rdzv;
}

TEST(IsolatedNetworkError, OnlyAMultiNodeRunToAnOutsideHostFromLoopbackAlone) {
  struct Row {
    const char* what;
    RendezvousOptions rdzv;
    bool outside_network;
    std::vector<std::string> addresses;
    bool error;
  };
  RendezvousOptions standalone = RunOfUpTo(4, "10.200.0.11");
  standalone.standalone = true;
  const Row rows[] = {
      {"a bundle with a network of its own", RunOfUpTo(2, "10.200.0.11"), false, {"10.200.0.11"}, true},
      {"a name that resolves outside", RunOfUpTo(8, "n1"), false, {"10.200.0.11"}, true},
      {"IPv6 outside", RunOfUpTo(2, "fd00::11"), false, {"fd00::11"}, true},
      {"the node has a network", RunOfUpTo(2, "10.200.0.11"), true, {"10.200.0.11"}, false},
      {"one node", RunOfUpTo(1, "10.200.0.11"), false, {"10.200.0.11"}, false},
      {"standalone", standalone, false, {"10.200.0.11"}, false},
      {"no endpoint", RunOfUpTo(2, nullptr), false, {}, false},
      {"agents on one machine", RunOfUpTo(3, "127.0.0.1"), false, {"127.0.0.1"}, false},
      {"a name with a loopback address among others", RunOfUpTo(2, "host"), false, {"10.0.0.1", "127.0.1.1"}, false},
      {"a name that does not resolve here", RunOfUpTo(2, "n9"), false, {}, true},
      {"a name that does not resolve, the node has a network", RunOfUpTo(2, "n9"), true, {}, false},
  };
  for (const Row& row : rows) {
    std::string err = IsolatedNetworkError(row.rdzv, row.outside_network, row.addresses);
    EXPECT_EQ(!err.empty(), row.error) << row.what << ": " << err;
  }
}

TEST(IsolatedNetworkError, NamesTheHostItsAddressAndTheRemedy) {
  std::string err = IsolatedNetworkError(RunOfUpTo(2, "n1"), false, {"10.200.0.11"});
  EXPECT_NE(err.find("no network but loopback"), std::string::npos) << err;
  EXPECT_NE(err.find("rendezvous host n1 (10.200.0.11)"), std::string::npos) << err;
  EXPECT_NE(err.find("up to 2 nodes"), std::string::npos) << err;
  EXPECT_NE(err.find("the host's network"), std::string::npos) << err;
  EXPECT_NE(IsolatedNetworkError(RunOfUpTo(2, "10.200.0.11"), false, {"10.200.0.11"}).find("host 10.200.0.11 cannot"),
            std::string::npos);
  EXPECT_NE(IsolatedNetworkError(RunOfUpTo(2, "n9"), false, {}).find("host n9 (it does not resolve here) cannot"),
            std::string::npos);
}

}  // namespace
}  // namespace elastic
