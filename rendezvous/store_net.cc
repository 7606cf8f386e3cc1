#include "rendezvous/store_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>

#include <chrono>

namespace elastic {
namespace {

struct AddrInfoList {
  addrinfo* head = nullptr;
  ~AddrInfoList() {
    if (head) freeaddrinfo(head);
  }
};

bool Resolve(const std::string& host, int port, bool passive, AddrInfoList* out, std::string* err) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : AI_ADDRCONFIG;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &out->head);
  if (rc != 0) {
    *err = "cannot resolve '" + host + "': " + gai_strerror(rc);
    return false;
  }
  return true;
}

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
    int so_error = 0;
    socklen_t len = sizeof so_error;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    return so_error;
  }
}

// A non-blocking, close-on-exec socket for `ai`; on failure *last says why.
UniqueFd NewSocket(const addrinfo* ai, std::string* last) {
  UniqueFd s(socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
  if (!s) *last = strerror(errno);
  return s;
}

}  // namespace

bool ListenTcp(const std::string& host, int port, UniqueFd* fd, int* bound_port, std::string* err) {
  AddrInfoList addrs;
  if (!Resolve(host, port, true, &addrs, err)) return false;
  std::string last = "no address";
  for (addrinfo* ai = addrs.head; ai; ai = ai->ai_next) {
    UniqueFd s = NewSocket(ai, &last);
    if (!s) continue;
    int one = 1;
    setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(s.get(), ai->ai_addr, ai->ai_addrlen) != 0 || listen(s.get(), 4096) != 0) {
      last = strerror(errno);
      continue;
    }
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    getsockname(s.get(), reinterpret_cast<sockaddr*>(&local), &len);
    *bound_port = local.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port)
                                              : ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
    *fd = std::move(s);
    return true;
  }
  *err = "cannot listen on " + (host.empty() ? std::string("*") : host) + ":" + std::to_string(port) + ": " + last;
  return false;
}

bool ConnectTcp(const std::string& host, int port, int timeout_ms, UniqueFd* fd, std::string* err) {
  AddrInfoList addrs;
  if (!Resolve(host, port, false, &addrs, err)) return false;
  std::string last = "no address";
  for (addrinfo* ai = addrs.head; ai; ai = ai->ai_next) {
    UniqueFd s = NewSocket(ai, &last);
    if (!s) continue;
    int rc = connect(s.get(), ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
    if (rc == EINPROGRESS) rc = FinishConnect(s.get(), timeout_ms);
    if (rc != 0) {
      last = strerror(rc);
      continue;
    }
    int flags = fcntl(s.get(), F_GETFL);
    fcntl(s.get(), F_SETFL, flags & ~O_NONBLOCK);
    int one = 1;
    setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *fd = std::move(s);
    return true;
  }
  *err = "cannot connect to " + host + ":" + std::to_string(port) + ": " + last;
  return false;
}

std::string PeerName(const sockaddr_storage& addr) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "unknown peer";
}

}  // namespace elastic
