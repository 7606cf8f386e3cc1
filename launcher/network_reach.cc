#include "launcher/network_reach.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include "common/net.h"

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

// Every address `host` resolves to, as numeric text.
std::vector<std::string> Resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  std::vector<std::string> out;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return out;
  for (addrinfo* a = result; a; a = a->ai_next) {
    sockaddr_storage addr{};
    if (a->ai_addrlen > sizeof addr) continue;
    memcpy(&addr, a->ai_addr, a->ai_addrlen);
    if (std::string text = AddressText(addr); !text.empty()) out.push_back(std::move(text));
  }
  freeaddrinfo(result);
  return out;
}

// Only a run that may span nodes, with an endpoint to reach, is concerned.
bool SpansNodes(const RendezvousOptions& rdzv) {
  return !rdzv.standalone && rdzv.max_nodes > 1 && rdzv.endpoint;
}

}  // namespace

bool IsLoopbackAddress(const std::string& numeric) {
  SocketAddress addr;
  std::string err;
  // IsNumericAddress first: strict inet_pton ("127.0.0" is no address), as AddressText writes them.
  return IsNumericAddress(numeric) && ResolveNumericAddress(numeric, 0, &addr, &err) && IsLoopback(addr.storage);
}

std::string IsolatedNetworkError(const RendezvousOptions& rdzv, bool outside_network,
                                 const std::vector<std::string>& endpoint_addresses) {
  if (outside_network || !SpansNodes(rdzv)) return "";
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
  if (!SpansNodes(rdzv) || HasOutsideNetwork()) return "";
  return IsolatedNetworkError(rdzv, false, Resolve(rdzv.endpoint->host));
}

}  // namespace elastic
