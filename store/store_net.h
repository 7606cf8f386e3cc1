// Small TCP helpers shared by the store server, its client and the tests.
#pragma once

#include <sys/socket.h>

#include <string>

#include "common/unique_fd.h"

namespace elastic {

// Binds and listens (non-blocking, close-on-exec, SO_REUSEADDR) on the address
// ResolveAddress picks for `host`: a name (IPv4 first), "0.0.0.0", "::" or empty
// (all IPv4 addresses). Port 0 picks an ephemeral port; *bound_port gets the real one.
// The listener has TCP_NODELAY, which the sockets it accepts inherit.
bool ListenTcp(const std::string& host, int port, UniqueFd* fd, int* bound_port, std::string* err);

// Connects within `timeout_ms` (< 0: no limit) to the address of `host` that
// common/net.h's ResolveAddress picks (IPv4 first, as the rendezvous).
// The returned socket is blocking, close-on-exec, with TCP_NODELAY.
bool ConnectTcp(const std::string& host, int port, int timeout_ms, UniqueFd* fd, std::string* err);

// "1.2.3.4:5678" or "[::1]:5678".
std::string PeerName(const sockaddr_storage& addr);

}  // namespace elastic
