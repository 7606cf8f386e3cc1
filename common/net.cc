#include "common/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>


namespace elastic {
namespace {

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool Resolve(const std::string& host, int port, int flags, SocketAddress* out, std::string* err) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags | (host.empty() ? AI_PASSIVE : 0);
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) {
    if (err && (flags & AI_NUMERICHOST) && rc == EAI_NONAME)
      *err = fmt::format("'{}' is not a numeric address (names are resolved before the event "
                         "loop runs, never on it)", host);
    else if (err)
      *err = fmt::format("cannot resolve '{}': {}", host, gai_strerror(rc));
    return false;
  }
  // Prefer IPv4: the store address handed to workers must be reachable from every node.
  const addrinfo* pick = res;
  for (const addrinfo* p = res; p; p = p->ai_next)
    if (p->ai_family == AF_INET) {
      pick = p;
      break;
    }
  std::memcpy(&out->storage, pick->ai_addr, pick->ai_addrlen);
  out->len = pick->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

}  // namespace

bool ResolveAddress(const std::string& host, int port, SocketAddress* out, std::string* err) {
  return Resolve(host, port, 0, out, err);
}

bool ResolveNumericAddress(const std::string& host, int port, SocketAddress* out, std::string* err) {
  return Resolve(host, port, AI_NUMERICHOST | AI_NUMERICSERV, out, err);
}

UniqueFd ListenOn(const SocketAddress& addr, int* bind_errno, std::string* err) {
  *bind_errno = 0;
  UniqueFd fd(socket(addr.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    if (err) *err = fmt::format("socket: {}", std::strerror(errno));
    return {};
  }
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) != 0) {
    *bind_errno = errno;
    if (err) *err = fmt::format("bind {}: {}", AddressText(addr.storage), std::strerror(errno));
    return {};
  }
  if (listen(fd.get(), 4096) != 0) {
    // With SO_REUSEADDR two agents can both bind before either listens; the loser
    // learns here that the port is taken.
    *bind_errno = errno;
    if (err) *err = fmt::format("listen: {}", std::strerror(errno));
    return {};
  }
  return fd;
}

UniqueFd StartConnect(const SocketAddress& addr, std::string* err) {
  UniqueFd fd(socket(addr.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    if (err) *err = fmt::format("socket: {}", std::strerror(errno));
    return {};
  }
  SetNoDelay(fd.get());
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) != 0 &&
      errno != EINPROGRESS) {
    if (err) *err = fmt::format("connect: {}", std::strerror(errno));
    return {};
  }
  return fd;
}

int ConnectError(int fd) {
  int value = 0;
  socklen_t len = sizeof(value);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &len) != 0) return errno;
  return value;
}

UniqueFd AcceptConnection(int listen_fd) {
  int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) SetNoDelay(fd);
  return UniqueFd(fd);
}

int LocalPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
}

std::string AddressText(const sockaddr_storage& addr) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, buf, sizeof(buf));
  else if (addr.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, buf, sizeof(buf));
  return buf;
}

std::string PeerAddress(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  return AddressText(addr);
}

std::string LocalAddress(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  return AddressText(addr);
}

bool IsLoopback(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr.s_addr) >> 24) == 127;
  if (addr.ss_family == AF_INET6) {
    const auto& a6 = reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a6)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&a6)) return a6.s6_addr[12] == 127;
  }
  return false;
}

bool IsNumericAddress(const std::string& host) {
  in6_addr buf;
  return inet_pton(AF_INET, host.c_str(), &buf) == 1 || inet_pton(AF_INET6, host.c_str(), &buf) == 1;
}

}  // namespace elastic
