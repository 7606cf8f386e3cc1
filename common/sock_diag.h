// The kernel's socket diagnostics (NETLINK_SOCK_DIAG, inet_diag), the part the
// store needs: which user owns the TCP socket at the other end of a connection
// on this machine. Pure: the request is built and the kernel's answer parsed
// here, with no socket (table test sock_diag_test.cc, fuzz target
// fuzz/sock_diag_fuzz.cc); the netlink socket itself is common/socket_owner.h's.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace elastic {

// One end of a TCP connection; addr holds 4 bytes (AF_INET) or 16 (AF_INET6),
// in network order; port in host order.
struct TcpEnd {
  std::array<uint8_t, 16> addr{};
  uint16_t port = 0;
};

// The socket to look up: its own end (`self`) and the end it is connected to.
struct TcpSocketId {
  int family = AF_INET;  // AF_INET or AF_INET6
  TcpEnd self;
  TcpEnd other;
  uint32_t scope = 0;  // the interface of a link-local IPv6 connection, else 0
};

// The id of the socket at the other end of a connection we accepted from
// `peer` at our address `local` (getpeername, getsockname). IPv4-mapped IPv6
// addresses (a listener on "::") become IPv4: the kernel finds either socket
// in its IPv4 table. nullopt unless both are IPv4/IPv6 of the same family.
std::optional<TcpSocketId> PeerSocketId(const sockaddr_storage& peer, const sockaddr_storage& local);
// The same connection seen from our side: the accepted socket itself.
TcpSocketId Reversed(const TcpSocketId& id);

// One SOCK_DIAG_BY_FAMILY request for exactly that socket (not a dump).
std::string SockDiagRequest(const TcpSocketId& id, uint32_t seq);

enum class SockDiagStatus {
  kFound,      // the kernel described the socket
  kNotFound,   // it answered ENOENT: no such socket (or no inet_diag: see socket_owner.h)
  kError,      // it answered another errno
  kOtherSocket,  // it described another socket (a listener on the asked address and port)
  kMalformed,  // no answer to this request in the datagram, or one that does not parse
};

struct SockDiagAnswer {
  SockDiagStatus status = SockDiagStatus::kMalformed;
  uint32_t uid = 0;    // kFound: the socket's owner (whoever created it)
  uint32_t inode = 0;  // kFound: 0 when no process holds it any more (closed, TIME_WAIT)
  uint8_t state = 0;   // kFound: TCP_ESTABLISHED...
  int error = 0;       // kError: the errno the kernel answered (> 0)
  std::string why;     // kMalformed: what is wrong, for the log
};

// Parses one datagram read from the netlink socket: the answer to request
// `seq` about socket `id`. Messages of other sequence numbers are skipped.
SockDiagAnswer ParseSockDiagAnswer(std::string_view datagram, uint32_t seq, const TcpSocketId& id);

}  // namespace elastic
