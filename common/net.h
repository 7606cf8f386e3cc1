// Small TCP helpers for the rendezvous and the store (store_net.h builds on them):
// resolve, listen, non-blocking connect,
// peer/local addresses. Every fd comes back owned (UniqueFd), non-blocking,
// close-on-exec, with TCP_NODELAY where it applies.
#pragma once

#include <sys/socket.h>

#include <string>

#include "common/unique_fd.h"

namespace elastic {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t len = 0;
};

// getaddrinfo: may block on DNS, so never from an event-loop callback (resolve
// before the loop runs, as CreateC10dRendezvous does for the endpoint).
bool ResolveAddress(const std::string& host, int port, SocketAddress* out, std::string* err);
// An IPv4/IPv6 literal only (AI_NUMERICHOST): no lookup, safe on the loop; a
// name fails with an error saying so.
bool ResolveNumericAddress(const std::string& host, int port, SocketAddress* out, std::string* err);
// Binds and listens. *bind_errno is the errno of a failed bind or listen (EADDRINUSE...).
UniqueFd ListenOn(const SocketAddress& addr, int* bind_errno, std::string* err);
// Starts a non-blocking connect; completion is signalled by EPOLLOUT (check ConnectError).
UniqueFd StartConnect(const SocketAddress& addr, std::string* err);
int ConnectError(int fd);  // SO_ERROR
UniqueFd AcceptConnection(int listen_fd);  // invalid when nothing to accept
int LocalPort(int fd);
std::string AddressText(const sockaddr_storage& addr);  // numeric IP, no port
std::string PeerAddress(int fd);
std::string LocalAddress(int fd);
bool IsLoopback(const sockaddr_storage& addr);
bool IsNumericAddress(const std::string& host);  // an IPv4 or IPv6 literal
// Endpoints as users write them ("host:port", "[v6]:port"): common/endpoint.h.

}  // namespace elastic
