// The store's listen/connect on top of common/net.h (the rendezvous uses
// the same primitives): one resolver, one socket setup, one error style.
#include "store/store_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>

#include <chrono>

#include "common/endpoint.h"
#include "common/net.h"

namespace elastic {
namespace {

// Waits for a non-blocking connect to finish. Returns 0 or an errno value.
int FinishConnect(int fd, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int wait = -1;
    if (timeout_ms >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return ETIMEDOUT;
      wait = static_cast<int>(left.count());
    }
    pollfd p{fd, POLLOUT, 0};
    int n = poll(&p, 1, wait);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ETIMEDOUT;
    return ConnectError(fd);
  }
}

}  // namespace

bool ListenTcp(const std::string& host, int port, UniqueFd* fd, int* bound_port, std::string* err) {
  std::string where = (host.empty() ? std::string("*") : host) + ":" + std::to_string(port);
  SocketAddress addr;
  std::string why;
  if (!ResolveAddress(host, port, &addr, &why)) {
    *err = "cannot listen on " + where + ": " + why;
    return false;
  }
  int bind_errno = 0;
  UniqueFd s = ListenOn(addr, &bind_errno, &why);
  if (!s) {
    *err = "cannot listen on " + where + ": " + why;
    return false;
  }
  // Set once here: every accepted socket inherits it (one setsockopt per
  // listener instead of one per connection; store_net_test checks it).
  int one = 1;
  setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  *bound_port = LocalPort(s.get());
  *fd = std::move(s);
  return true;
}

bool ConnectTcp(const std::string& host, int port, int timeout_ms, UniqueFd* fd, std::string* err) {
  std::string where = host + ":" + std::to_string(port);
  SocketAddress addr;
  std::string why;
  if (!ResolveAddress(host, port, &addr, &why)) {
    *err = "cannot connect to " + where + ": " + why;
    return false;
  }
  UniqueFd s = StartConnect(addr, &why);  // non-blocking, TCP_NODELAY
  int rc = !s ? -1 : FinishConnect(s.get(), timeout_ms);
  if (rc != 0) {
    *err = "cannot connect to " + where + ": " + (rc > 0 ? strerror(rc) : why);
    return false;
  }
  fcntl(s.get(), F_SETFL, fcntl(s.get(), F_GETFL) & ~O_NONBLOCK);
  *fd = std::move(s);
  return true;
}

std::string PeerName(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) {
    return FormatEndpoint(AddressText(addr), ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    return FormatEndpoint(AddressText(addr), ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port));
  }
  return "unknown peer";
}

}  // namespace elastic
