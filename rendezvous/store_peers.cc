#include "rendezvous/store_peers.h"

#include <arpa/inet.h>

namespace elastic {

std::string UnmapV4(const std::string& addr) {
  static const std::string kMapped = "::ffff:";
  in_addr v4{};
  if (addr.size() > kMapped.size() && addr.compare(0, kMapped.size(), kMapped) == 0 &&
      inet_pton(AF_INET, addr.c_str() + kMapped.size(), &v4) == 1)
    return addr.substr(kMapped.size());
  return addr;
}

static bool IsNumeric(const std::string& addr) {
  in6_addr buf{};
  return inet_pton(AF_INET, addr.c_str(), &buf) == 1 || inet_pton(AF_INET6, addr.c_str(), &buf) == 1;
}

static bool IsLoopbackText(const std::string& addr) {
  in_addr v4{};
  if (inet_pton(AF_INET, addr.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, addr.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

bool StorePeerAllowed(const StorePeer& peer, const std::set<std::string>& allowed) {
  std::string addr = UnmapV4(peer.addr);
  if (!IsNumeric(addr)) return false;  // unknown (AddressText writes "?")
  if (IsLoopbackText(addr)) return true;
  if (addr == UnmapV4(peer.reached)) return true;  // from this machine
  return allowed.count(addr) > 0;
}

}  // namespace elastic
