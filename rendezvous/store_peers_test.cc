#include "rendezvous/store_peers.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <vector>

#include "common/net.h"

namespace elastic {
namespace {

constexpr uint32_t kJob = 1000;

struct KindRow {
  const char* what;
  StorePeer peer;
  std::set<std::string> local_addrs;
  StorePeerKind kind;
};

// The host of a 1-node step on the test cluster listens on 0.0.0.0; its workers
// reach the store at the node's address (MASTER_ADDR), so they come from it.
const KindRow kKinds[] = {
    {"loopback", {"127.0.0.1", "127.0.0.1"}, {}, StorePeerKind::kLocal},
    {"Debian's 127.0.1.1 hostname", {"127.0.1.1", "127.0.1.1"}, {}, StorePeerKind::kLocal},
    {"IPv6 loopback", {"::1", "::1"}, {}, StorePeerKind::kLocal},
    {"loopback on a :: listener", {"::ffff:127.0.0.1", "::ffff:127.0.0.1"}, {}, StorePeerKind::kLocal},
    {"through the node's address, nothing known", {"10.200.0.11", "10.200.0.11"}, {}, StorePeerKind::kLocal},
    {"through the node's address, on a :: listener", {"::ffff:10.200.0.11", "::ffff:10.200.0.11"}, {},
     StorePeerKind::kLocal},
    {"from another address of this machine", {"192.168.1.5", "10.200.0.11"}, {"10.200.0.11", "192.168.1.5"},
     StorePeerKind::kLocal},
    {"over IPv6 through our address", {"fd00::11", "fd00::11"}, {}, StorePeerKind::kLocal},
    {"another node", {"10.200.0.12", "10.200.0.11"}, {"10.200.0.11"}, StorePeerKind::kRemote},
    {"another node, on a :: listener", {"::ffff:10.200.0.12", "::ffff:10.200.0.11"}, {}, StorePeerKind::kRemote},
    {"another node over IPv6", {"fd00::99", "fd00::11"}, {"fd00::11"}, StorePeerKind::kRemote},
    {"addresses unknown (getpeername failed)", {"", ""}, {""}, StorePeerKind::kUnknown},
    {"addresses unknown as AddressText writes them", {"?", "?"}, {"?"}, StorePeerKind::kUnknown},
};

TEST(StorePeersTest, KindTable) {
  for (const KindRow& row : kKinds)
    EXPECT_EQ(ClassifyStorePeer(row.peer, row.local_addrs), row.kind)
        << row.what << ": " << row.peer.addr << " -> " << row.peer.reached;
}

struct AdmitRow {
  const char* what;
  StorePeerKind kind;
  const char* addr;
  SocketOwner owner;
  bool admitted;
  const char* why;  // part of the refusal's reason
};

const std::set<std::string> kMembers = {"10.200.0.11", "10.200.0.12"};

const AdmitRow kAdmissions[] = {
    {"a job's worker", StorePeerKind::kLocal, "127.0.0.1", {OwnerStatus::kFound, kJob, ""}, true, ""},
    {"root", StorePeerKind::kLocal, "127.0.0.1", {OwnerStatus::kFound, 0, ""}, true, ""},
    {"another user", StorePeerKind::kLocal, "127.0.0.1", {OwnerStatus::kFound, 65534, ""}, false,
     "a local process of uid 65534, not the job's user (uid 1000)"},
    {"another user through the node's address (a member's)", StorePeerKind::kLocal, "10.200.0.11",
     {OwnerStatus::kFound, 1001, ""}, false, "uid 1001"},
    {"no socket diagnostics in this kernel: fail-open", StorePeerKind::kLocal, "127.0.0.1",
     {OwnerStatus::kUnavailable, 0, "no inet_diag"}, true, ""},
    {"a lookup that failed: fail-closed", StorePeerKind::kLocal, "127.0.0.1",
     {OwnerStatus::kFailed, 0, "sock_diag: No buffer space available"}, false, "No buffer space"},
    {"a peer that closed before the lookup", StorePeerKind::kLocal, "127.0.0.1",
     {OwnerStatus::kGone, 0, "its socket is closed"}, false, "its socket is closed"},
    {"a member", StorePeerKind::kRemote, "10.200.0.12", {}, true, ""},
    {"a member, on a :: listener", StorePeerKind::kRemote, "::ffff:10.200.0.12", {}, true, ""},
    {"a stranger", StorePeerKind::kRemote, "10.200.0.99", {}, false, "not a node of the round"},
    {"a stranger over IPv6", StorePeerKind::kRemote, "fd00::99", {}, false, "not a node of the round"},
    {"unknown address", StorePeerKind::kUnknown, "?", {OwnerStatus::kFound, kJob, ""}, false, "unknown"},
};

TEST(StorePeersTest, AdmissionTable) {
  for (const AdmitRow& row : kAdmissions) {
    StoreAdmission a = AdmitStorePeer(row.kind, row.addr, row.owner, kJob, kMembers);
    EXPECT_EQ(a.admitted, row.admitted) << row.what;
    EXPECT_NE(a.why.find(row.why), std::string::npos) << row.what << ": " << a.why;
    EXPECT_EQ(a.why.empty(), a.admitted) << row.what;
  }
}

TEST(StorePeersTest, NoMembersBeforeTheFirstRoundAdmitsNoRemotePeer) {
  EXPECT_FALSE(AdmitStorePeer(StorePeerKind::kRemote, "10.200.0.12", {}, kJob, {}).admitted);
}

// A fake of the kernel: answers what it is told, records whom it was asked about.
class FakeOwners : public SocketOwners {
 public:
  explicit FakeOwners(SocketOwner answer) : answer_(std::move(answer)) {}
  SocketOwner PeerOwner(const sockaddr_storage& peer, const sockaddr_storage&) override {
    asked.push_back(peer);
    return answer_;
  }
  std::vector<sockaddr_storage> asked;

 private:
  SocketOwner answer_;
};

// A numeric address and port as accept/getsockname give them.
sockaddr_storage At(const char* addr, uint16_t port) {
  SocketAddress out;
  std::string err;
  EXPECT_TRUE(ResolveNumericAddress(addr, port, &out, &err)) << err;
  return out.storage;
}

TEST(StorePeersTest, OnlyALocalPeerIsLookedUp) {
  FakeOwners owners({OwnerStatus::kFound, 65534, ""});
  StoreAdmission remote = CheckStorePeer(At("10.200.0.12", 40000), At("10.200.0.11", 29500), {"10.200.0.11"},
                                         kMembers, owners, kJob);
  EXPECT_TRUE(remote.admitted);
  EXPECT_TRUE(owners.asked.empty());
  StoreAdmission local = CheckStorePeer(At("10.200.0.11", 40000), At("10.200.0.11", 29500), {"10.200.0.11"},
                                        kMembers, owners, kJob);
  EXPECT_FALSE(local.admitted);
  ASSERT_EQ(owners.asked.size(), 1u);
  EXPECT_EQ(ntohs(reinterpret_cast<sockaddr_in&>(owners.asked[0]).sin_port), 40000);
}

TEST(StorePeersTest, WithoutSocketDiagnosticsLocalPeersAreAdmittedAndOthersStillChecked) {
  FakeOwners owners({OwnerStatus::kUnavailable, 0, "no inet_diag"});
  EXPECT_TRUE(CheckStorePeer(At("127.0.0.1", 40000), At("127.0.0.1", 29500), {}, kMembers, owners, kJob).admitted);
  EXPECT_FALSE(
      CheckStorePeer(At("10.200.0.99", 40000), At("10.200.0.11", 29500), {}, kMembers, owners, kJob).admitted);
}

TEST(StorePeersTest, AFailedLookupRefusesTheLocalPeer) {
  FakeOwners owners({OwnerStatus::kFailed, 0, "no answer from the kernel"});
  StoreAdmission a = CheckStorePeer(At("127.0.0.1", 40000), At("127.0.0.1", 29500), {}, kMembers, owners, kJob);
  EXPECT_FALSE(a.admitted);
  EXPECT_NE(a.why.find("no answer from the kernel"), std::string::npos) << a.why;
}

TEST(StorePeersTest, UnmapsOnlyMappedIPv4) {
  EXPECT_EQ(UnmapV4("::ffff:10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(UnmapV4("10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(UnmapV4("::ffff:"), "::ffff:");
  EXPECT_EQ(UnmapV4("fd00::1"), "fd00::1");
}

}  // namespace
}  // namespace elastic
