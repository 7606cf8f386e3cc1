#include "common/sock_diag.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>

#include <fmt/format.h>

namespace elastic {
namespace {

constexpr size_t kHeader = NLMSG_HDRLEN;

// Our address and port from a sockaddr; false unless IPv4 or IPv6.
bool EndOf(const sockaddr_storage& sa, int* family, TcpEnd* end, uint32_t* scope) {
  if (sa.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(sa);
    *family = AF_INET;
    memcpy(end->addr.data(), &in.sin_addr, 4);
    end->port = ntohs(in.sin_port);
    return true;
  }
  if (sa.ss_family != AF_INET6) return false;
  const auto& in6 = reinterpret_cast<const sockaddr_in6&>(sa);
  end->port = ntohs(in6.sin6_port);
  if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
    *family = AF_INET;
    memcpy(end->addr.data(), in6.sin6_addr.s6_addr + 12, 4);
    return true;
  }
  *family = AF_INET6;
  memcpy(end->addr.data(), in6.sin6_addr.s6_addr, 16);
  *scope = in6.sin6_scope_id;
  return true;
}

size_t AddrBytes(int family) { return family == AF_INET ? 4 : 16; }

bool IsV4Mapped(const __be32* addr) { return addr[0] == 0 && addr[1] == 0 && addr[2] == htonl(0xffff); }

// An end as the kernel describes it: an IPv6 socket connected over IPv4 (a
// client of a dual-stack socket) comes back as AF_INET6 with mapped addresses.
bool SameEnd(int asked_family, int family, const TcpEnd& end, const __be32* addr, __be16 port) {
  if (ntohs(port) != end.port) return false;
  if (asked_family == AF_INET && family == AF_INET6)
    return IsV4Mapped(addr) && memcmp(end.addr.data(), addr + 3, 4) == 0;
  return family == asked_family && memcmp(end.addr.data(), addr, AddrBytes(family)) == 0;
}

SockDiagAnswer Malformed(std::string why) {
  SockDiagAnswer a;
  a.why = std::move(why);
  return a;
}

SockDiagAnswer ParseError(std::string_view payload) {
  int32_t code = 0;
  if (payload.size() < sizeof code) return Malformed(fmt::format("an error message of {} bytes", payload.size()));
  memcpy(&code, payload.data(), sizeof code);
  if (code == 0) return Malformed("an acknowledgement instead of an answer");
  if (code > 0 || code < -4095) return Malformed(fmt::format("an error message with code {}", code));
  SockDiagAnswer a;
  a.status = -code == ENOENT ? SockDiagStatus::kNotFound : SockDiagStatus::kError;
  a.error = -code;
  return a;
}

SockDiagAnswer ParseSocket(std::string_view payload, const TcpSocketId& id) {
  inet_diag_msg msg{};
  if (payload.size() < sizeof msg) return Malformed(fmt::format("a socket description of {} bytes", payload.size()));
  memcpy(&msg, payload.data(), sizeof msg);  // attributes after it are not asked for
  SockDiagAnswer a;
  a.status = SockDiagStatus::kOtherSocket;
  int family = msg.idiag_family;
  if (!SameEnd(id.family, family, id.self, msg.id.idiag_src, msg.id.idiag_sport) ||
      !SameEnd(id.family, family, id.other, msg.id.idiag_dst, msg.id.idiag_dport))
    return a;
  a.status = SockDiagStatus::kFound;
  a.uid = msg.idiag_uid;
  a.inode = msg.idiag_inode;
  a.state = msg.idiag_state;
  return a;
}

}  // namespace

std::optional<TcpSocketId> PeerSocketId(const sockaddr_storage& peer, const sockaddr_storage& local) {
  TcpSocketId id;
  int local_family = 0;
  uint32_t local_scope = 0;
  if (!EndOf(peer, &id.family, &id.self, &id.scope) || !EndOf(local, &local_family, &id.other, &local_scope) ||
      local_family != id.family)
    return std::nullopt;
  return id;
}

TcpSocketId Reversed(const TcpSocketId& id) {
  TcpSocketId r = id;
  std::swap(r.self, r.other);
  return r;
}

std::string SockDiagRequest(const TcpSocketId& id, uint32_t seq) {
  struct {
    nlmsghdr header;
    inet_diag_req_v2 req;
  } msg{};
  msg.header.nlmsg_len = sizeof msg;
  msg.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.header.nlmsg_flags = NLM_F_REQUEST;  // one socket, not a dump
  msg.header.nlmsg_seq = seq;
  msg.req.sdiag_family = static_cast<uint8_t>(id.family);
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = ~0u;
  msg.req.id.idiag_sport = htons(id.self.port);
  msg.req.id.idiag_dport = htons(id.other.port);
  memcpy(msg.req.id.idiag_src, id.self.addr.data(), AddrBytes(id.family));
  memcpy(msg.req.id.idiag_dst, id.other.addr.data(), AddrBytes(id.family));
  msg.req.id.idiag_if = id.scope;
  msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  return std::string(reinterpret_cast<const char*>(&msg), sizeof msg);
}

SockDiagAnswer ParseSockDiagAnswer(std::string_view datagram, uint32_t seq, const TcpSocketId& id) {
  size_t pos = 0;
  while (datagram.size() - pos >= kHeader) {
    nlmsghdr h{};
    memcpy(&h, datagram.data() + pos, sizeof h);
    if (h.nlmsg_len < kHeader || h.nlmsg_len > datagram.size() - pos)
      return Malformed(fmt::format("a message of {} bytes where {} are left", h.nlmsg_len, datagram.size() - pos));
    std::string_view payload = datagram.substr(pos + kHeader, h.nlmsg_len - kHeader);
    if (h.nlmsg_seq == seq) {
      if (h.nlmsg_type == NLMSG_ERROR) return ParseError(payload);
      if (h.nlmsg_type == SOCK_DIAG_BY_FAMILY) return ParseSocket(payload, id);
      return Malformed(fmt::format("a message of type {} instead of an answer", h.nlmsg_type));
    }
    size_t next = NLMSG_ALIGN(static_cast<size_t>(h.nlmsg_len));
    if (next >= datagram.size() - pos) break;
    pos += next;
  }
  return Malformed(fmt::format("no answer to request {}", seq));
}

}  // namespace elastic
