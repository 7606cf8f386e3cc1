#include "launcher/gloo_interface.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "common/net.h"
#include "common/unique_fd.h"

namespace elastic {
namespace {

bool IsLoopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&a) ||
           (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
  }
  return false;
}

bool SameAddress(const sockaddr* a, const sockaddr_storage& b) {
  if (a->sa_family != b.ss_family) return false;
  if (a->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(&b)->sin_addr.s_addr;
  }
  if (a->sa_family == AF_INET6) {
    return memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                  &reinterpret_cast<const sockaddr_in6*>(&b)->sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

}  // namespace

bool HostnameResolvesUsably(const std::string& hostname) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (hostname.empty() || getaddrinfo(hostname.c_str(), nullptr, &hints, &res) != 0) return false;
  bool usable = false;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) usable |= !IsLoopback(ai->ai_addr);
  freeaddrinfo(res);
  return usable;
}

std::string InterfaceTowards(const std::string& addr) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(addr.c_str(), "9", &hints, &res) != 0) return "";
  sockaddr_storage local{};
  bool found = false;
  for (addrinfo* ai = res; ai && !found; ai = ai->ai_next) {
    UniqueFd fd(socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    socklen_t len = sizeof(local);
    found = fd && connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 &&
            getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) == 0;
  }
  freeaddrinfo(res);
  if (!found) return "";
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return "";
  std::string name;
  for (ifaddrs* i = ifs; i && name.empty(); i = i->ifa_next) {
    if (i->ifa_addr && SameAddress(i->ifa_addr, local)) name = i->ifa_name;
  }
  freeifaddrs(ifs);
  return name;
}

std::string ChooseGlooInterface(bool hostname_resolves_usably, const std::string& master_addr,
                                int group_world_size) {
  // One node: gloo's loopback fallback is right. Resolvable hostname: gloo's own choice.
  if (group_world_size <= 1 || master_addr.empty() || hostname_resolves_usably) return "";
  // Runs on the agent's loop at every round: no name lookup there. A store address
  // that is a name resolves (the workers use it), so the hostnames do too.
  if (!IsNumericAddress(master_addr)) return "";
  return InterfaceTowards(master_addr);
}

}  // namespace elastic
