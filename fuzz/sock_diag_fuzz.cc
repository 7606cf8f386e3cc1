// The kernel's sock_diag answer (common/sock_diag.h), as the store reads it to
// learn who owns a local peer's socket. Input: one byte choosing the socket
// asked about (even: 127.0.0.1:40000 -> 127.0.0.1:29500, odd: the same over
// ::1), then the datagram. Invariants: an answer is about the socket asked
// (kFound only for its exact 4-tuple: the parser checks it, so a found answer
// always re-parses the same); an error carries an errno in 1..4095, ENOENT is
// kNotFound; a malformed answer says why.
#include <errno.h>
#include <sys/socket.h>

#include <array>

#include <cstdlib>
#include <string>

#include "common/sock_diag.h"

namespace {

// 127.0.0.1:40000 -> 127.0.0.1:29500, or ::1:40000 -> ::1:29500.
elastic::TcpSocketId Asked(bool v6) {
  elastic::TcpSocketId id;
  id.family = v6 ? AF_INET6 : AF_INET;
  std::array<uint8_t, 16> addr{};
  if (v6) {
    addr[15] = 1;
  } else {
    addr = {127, 0, 0, 1};
  }
  id.self = {addr, 40000};
  id.other = {addr, 29500};
  return id;
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
