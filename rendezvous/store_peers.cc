#include "rendezvous/store_peers.h"

#include <arpa/inet.h>

#include <fmt/format.h>

#include "common/net.h"

namespace elastic {

std::string UnmapV4(const std::string& addr) {
  static const std::string kMapped = "::ffff:";
  in_addr v4{};
  if (addr.size() > kMapped.size() && addr.compare(0, kMapped.size(), kMapped) == 0 &&
      inet_pton(AF_INET, addr.c_str() + kMapped.size(), &v4) == 1)
    return addr.substr(kMapped.size());
  return addr;
}

static bool IsLoopbackText(const std::string& addr) {
  in_addr v4{};
  if (inet_pton(AF_INET, addr.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, addr.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

StorePeerKind ClassifyStorePeer(const StorePeer& peer, const std::set<std::string>& local_addrs) {
  std::string addr = UnmapV4(peer.addr);
  if (!IsNumericAddress(addr)) return StorePeerKind::kUnknown;  // AddressText writes "?"
  if (IsLoopbackText(addr) || addr == UnmapV4(peer.reached) || local_addrs.count(addr) > 0)
    return StorePeerKind::kLocal;
  return StorePeerKind::kRemote;
}

static StoreAdmission Admit() { return StoreAdmission{true, ""}; }
static StoreAdmission Refuse(std::string why) { return StoreAdmission{false, std::move(why)}; }

StoreAdmission AdmitStorePeer(StorePeerKind kind, const std::string& addr, const SocketOwner& owner,
                              uint32_t job_uid, const std::set<std::string>& members) {
  switch (kind) {
    case StorePeerKind::kUnknown:
      return Refuse("its address is unknown");
    case StorePeerKind::kRemote:
      if (members.count(UnmapV4(addr)) > 0) return Admit();
      return Refuse("not a node of the round");
    case StorePeerKind::kLocal:
      break;
  }
  switch (owner.status) {
    case OwnerStatus::kFound:
      if (owner.uid == job_uid || owner.uid == 0) return Admit();
      return Refuse(fmt::format("a local process of uid {}, not the job's user (uid {})", owner.uid, job_uid));
    case OwnerStatus::kUnavailable:
      return Admit();
    case OwnerStatus::kGone:
      return Refuse("a local process whose socket is gone (" + owner.why + ")");
    case OwnerStatus::kFailed:
      return Refuse("a local process whose user is unknown (" + owner.why + ")");
  }
  return Refuse("?");
}

StoreAdmission CheckStorePeer(const sockaddr_storage& peer, const sockaddr_storage& local,
                              const std::set<std::string>& local_addrs, const std::set<std::string>& members,
                              SocketOwners& owners, uint32_t job_uid) {
  std::string addr = AddressText(peer);
  StorePeerKind kind = ClassifyStorePeer(StorePeer{addr, AddressText(local)}, local_addrs);
  SocketOwner owner;
  if (kind == StorePeerKind::kLocal) owner = owners.PeerOwner(peer, local);
  return AdmitStorePeer(kind, addr, owner, job_uid, members);
}

}  // namespace elastic
