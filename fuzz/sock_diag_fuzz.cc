// The kernel's sock_diag answer (common/sock_diag.h), as the store reads it to
// learn who owns a local peer's socket. Input: one byte choosing the socket
// asked about (even: 127.0.0.1:40000 -> 127.0.0.1:29500, odd: the same over
// ::1), then the datagram. Invariants: an answer is about the socket asked
// (kFound only for its exact 4-tuple: the parser checks it, so a found answer
// always re-parses the same); an error carries an errno in 1..4095, ENOENT is
// kNotFound; a malformed answer says why.
#include <arpa/inet.h>
#include <errno.h>

#include <cstdlib>
#include <string>

#include "common/sock_diag.h"

namespace {

elastic::TcpSocketId Asked(bool v6) {
  sockaddr_storage peer{}, local{};
  if (v6) {
    auto& p = reinterpret_cast<sockaddr_in6&>(peer);
    auto& l = reinterpret_cast<sockaddr_in6&>(local);
    p.sin6_family = l.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "::1", &p.sin6_addr);
    inet_pton(AF_INET6, "::1", &l.sin6_addr);
    p.sin6_port = htons(40000);
    l.sin6_port = htons(29500);
  } else {
    auto& p = reinterpret_cast<sockaddr_in&>(peer);
    auto& l = reinterpret_cast<sockaddr_in&>(local);
    p.sin_family = l.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &p.sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &l.sin_addr);
    p.sin_port = htons(40000);
    l.sin_port = htons(29500);
  }
  return *elastic::PeerSocketId(peer, local);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const elastic::TcpSocketId kV4 = Asked(false), kV6 = Asked(true);
  const elastic::TcpSocketId& id = (data[0] & 1) ? kV6 : kV4;
  std::string_view datagram(reinterpret_cast<const char*>(data) + 1, size - 1);
  elastic::SockDiagAnswer a = elastic::ParseSockDiagAnswer(datagram, 7, id);
  using elastic::SockDiagStatus;
  switch (a.status) {
    case SockDiagStatus::kFound:
    case SockDiagStatus::kOtherSocket:
      if (a.error != 0) std::abort();
      break;
    case SockDiagStatus::kNotFound:
      if (a.error != ENOENT) std::abort();
      break;
    case SockDiagStatus::kError:
      if (a.error <= 0 || a.error > 4095 || a.error == ENOENT) std::abort();
      break;
    case SockDiagStatus::kMalformed:
      if (a.why.empty()) std::abort();
      break;
  }
  // The same bytes about the other family's socket: never found (the 4-tuple differs).
  const elastic::TcpSocketId& other = (data[0] & 1) ? kV4 : kV6;
  if (a.status == SockDiagStatus::kFound &&
      elastic::ParseSockDiagAnswer(datagram, 7, other).status == SockDiagStatus::kFound)
    std::abort();
  return 0;
}
