#include "launcher/network_reach.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fmt/format.h>

namespace elastic {
namespace {

// An interface other than loopback, up, with an IPv4 or IPv6 address.
bool HasOutsideNetwork() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return true;  // cannot tell: no claim
  bool found = false;
  for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    found = i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6;
  }
  freeifaddrs(list);
  return found;
}

std::vector<std::string> Resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  std::vector<std::string> out;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return out;
  for (addrinfo* a = result; a; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = a->ai_family == AF_INET
                          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
                          : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) && inet_ntop(a->ai_family, raw, text, sizeof text))
      out.emplace_back(text);
  }
  freeaddrinfo(result);
  return out;
}

}  // namespace

bool IsLoopbackAddress(const std::string& numeric) {
  in_addr v4{};
  if (inet_pton(AF_INET, numeric.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, numeric.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

std::string IsolatedNetworkError(const RendezvousOptions& rdzv, bool outside_network,
                                 const std::vector<std::string>& endpoint_addresses) {
  if (outside_network || rdzv.standalone || rdzv.max_nodes <= 1 || !rdzv.endpoint) return "";
  for (const std::string& address : endpoint_addresses) {
    if (IsLoopbackAddress(address)) return "";
  }
  // A name that does not resolve here is no loopback name either (localhost always
  // resolves): on loopback alone nothing can reach it.
  std::string host = rdzv.endpoint->host;
  std::string shown = endpoint_addresses.empty()            ? fmt::format("{} (it does not resolve here)", host)
                      : endpoint_addresses.front() == host ? host
                                                           : fmt::format("{} ({})", host, endpoint_addresses.front());
  return fmt::format(
      "this node has no network but loopback (a container with a network namespace of its own?): the "
      "rendezvous host {} cannot be reached from here, nor this node from the others of a run of up to {} "
      "nodes; run the container with the host's network (docs/containers.md)",
      shown, rdzv.max_nodes);
}

std::string CheckNetworkReach(const RendezvousOptions& rdzv) {
  if (rdzv.standalone || rdzv.max_nodes <= 1 || !rdzv.endpoint) return "";
  if (HasOutsideNetwork()) return "";
  return IsolatedNetworkError(rdzv, false, Resolve(rdzv.endpoint->host));
}

}  // namespace elastic
