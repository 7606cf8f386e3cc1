#include "common/sock_diag.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>

#include "common/net.h"

namespace elastic {
namespace {

// A numeric address and port as accept/getsockname give them.
sockaddr_storage At(const char* addr, uint16_t port) {
  SocketAddress out;
  std::string err;
  EXPECT_TRUE(ResolveNumericAddress(addr, port, &out, &err)) << err;
  return out.storage;
}

// The peer 127.0.0.1:40000 connected to our 127.0.0.1:29500.
TcpSocketId Peer() { return *PeerSocketId(At("127.0.0.1", 40000), At("127.0.0.1", 29500)); }

std::string Message(uint16_t type, uint32_t seq, const std::string& payload, uint32_t len_delta = 0) {
  nlmsghdr h{};
  h.nlmsg_len = static_cast<uint32_t>(NLMSG_HDRLEN + payload.size()) + len_delta;
  h.nlmsg_type = type;
  h.nlmsg_seq = seq;
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  out += payload;
  out.resize(NLMSG_ALIGN(out.size()), '\0');
  return out;
}

std::string Error(int32_t code) {
  nlmsgerr e{};
  e.error = code;
  return std::string(reinterpret_cast<const char*>(&e), sizeof e);
}

// A description of `id` (or of the socket it names with `sport` instead).
std::string Described(const TcpSocketId& id, uint32_t uid, uint32_t inode, int sport = -1) {
  inet_diag_msg m{};
  m.idiag_family = static_cast<uint8_t>(id.family);
  m.idiag_state = 1;  // TCP_ESTABLISHED
  m.id.idiag_sport = htons(sport < 0 ? id.self.port : static_cast<uint16_t>(sport));
  m.id.idiag_dport = htons(id.other.port);
  memcpy(m.id.idiag_src, id.self.addr.data(), id.family == AF_INET ? 4 : 16);
  memcpy(m.id.idiag_dst, id.other.addr.data(), id.family == AF_INET ? 4 : 16);
  m.idiag_uid = uid;
  m.idiag_inode = inode;
  return std::string(reinterpret_cast<const char*>(&m), sizeof m);
}

// The same as the kernel gives it for an AF_INET6 socket connected to an IPv4
// address: family AF_INET6, ::ffff:a.b.c.d.
std::string Mapped(const TcpSocketId& id, uint32_t uid, uint32_t inode) {
  TcpSocketId v6 = id;
  v6.family = AF_INET6;
  for (TcpEnd* end : {&v6.self, &v6.other}) {
    std::array<uint8_t, 16> mapped{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    std::copy(end->addr.begin(), end->addr.begin() + 4, mapped.begin() + 12);
    end->addr = mapped;
  }
  return Described(v6, uid, inode);
}

struct Row {
  const char* what;
  std::string datagram;
  SockDiagStatus status;
  uint32_t uid;
  uint32_t inode;
  int error;
};

TEST(SockDiagTest, AnswerTable) {
  const TcpSocketId id = Peer();
  const std::string found = Described(id, 1000, 4242);
  const Row rows[] = {
      {"the socket", Message(SOCK_DIAG_BY_FAMILY, 7, found), SockDiagStatus::kFound, 1000, 4242, 0},
      {"with attributes after it", Message(SOCK_DIAG_BY_FAMILY, 7, found + std::string(12, '\x01')),
       SockDiagStatus::kFound, 1000, 4242, 0},
      {"root's", Message(SOCK_DIAG_BY_FAMILY, 7, Described(id, 0, 9)), SockDiagStatus::kFound, 0, 9, 0},
      {"closed: no inode", Message(SOCK_DIAG_BY_FAMILY, 7, Described(id, 0, 0)), SockDiagStatus::kFound, 0, 0, 0},
      {"after a stale answer", Message(SOCK_DIAG_BY_FAMILY, 6, Described(id, 5, 5)) +
       Message(SOCK_DIAG_BY_FAMILY, 7, found), SockDiagStatus::kFound, 1000, 4242, 0},
      {"an IPv6 socket connected over IPv4", Message(SOCK_DIAG_BY_FAMILY, 7, Mapped(id, 1000, 5)),
       SockDiagStatus::kFound, 1000, 5, 0},
      {"ENOENT", Message(NLMSG_ERROR, 7, Error(-ENOENT)), SockDiagStatus::kNotFound, 0, 0, ENOENT},
      {"EPERM", Message(NLMSG_ERROR, 7, Error(-EPERM)), SockDiagStatus::kError, 0, 0, EPERM},
      {"an acknowledgement", Message(NLMSG_ERROR, 7, Error(0)), SockDiagStatus::kMalformed, 0, 0, 0},
      {"a positive error code", Message(NLMSG_ERROR, 7, Error(5)), SockDiagStatus::kMalformed, 0, 0, 0},
      {"an error code out of range", Message(NLMSG_ERROR, 7, Error(INT32_MIN)), SockDiagStatus::kMalformed, 0,
       0, 0},
      {"a short error", Message(NLMSG_ERROR, 7, "ab"), SockDiagStatus::kMalformed, 0, 0, 0},
      {"another socket (a listener on that port)", Message(SOCK_DIAG_BY_FAMILY, 7, Described(id, 0, 1, 1)),
       SockDiagStatus::kOtherSocket, 0, 0, 0},
      {"a short description", Message(SOCK_DIAG_BY_FAMILY, 7, found.substr(0, 40)), SockDiagStatus::kMalformed,
       0, 0, 0},
      {"NLMSG_DONE", Message(NLMSG_DONE, 7, std::string(4, '\0')), SockDiagStatus::kMalformed, 0, 0, 0},
      {"only another request's answer", Message(SOCK_DIAG_BY_FAMILY, 8, found), SockDiagStatus::kMalformed, 0, 0,
       0},
      {"empty", "", SockDiagStatus::kMalformed, 0, 0, 0},
      {"a cut header", Message(SOCK_DIAG_BY_FAMILY, 7, found).substr(0, 10), SockDiagStatus::kMalformed, 0, 0, 0},
      {"a length past the datagram", Message(SOCK_DIAG_BY_FAMILY, 7, found, 4), SockDiagStatus::kMalformed, 0, 0,
       0},
      {"a length below a header", Message(SOCK_DIAG_BY_FAMILY, 7, "", static_cast<uint32_t>(-8)),
       SockDiagStatus::kMalformed, 0, 0, 0},
  };
  for (const Row& row : rows) {
    SockDiagAnswer a = ParseSockDiagAnswer(row.datagram, 7, id);
    EXPECT_EQ(a.status, row.status) << row.what << ": " << a.why;
    EXPECT_EQ(a.uid, row.uid) << row.what;
    EXPECT_EQ(a.inode, row.inode) << row.what;
    EXPECT_EQ(a.error, row.error) << row.what;
    if (a.status == SockDiagStatus::kMalformed) {
      EXPECT_FALSE(a.why.empty()) << row.what;
    }
  }
}

TEST(SockDiagTest, AnIPv6AnswerIsCheckedOnAllSixteenBytes) {
  TcpSocketId id = *PeerSocketId(At("fd00::1", 40000), At("fd00::2", 29500));
  EXPECT_EQ(ParseSockDiagAnswer(Message(SOCK_DIAG_BY_FAMILY, 1, Described(id, 3, 3)), 1, id).status,
            SockDiagStatus::kFound);
  TcpSocketId other = id;
  other.self.addr[15] = 9;
  EXPECT_EQ(ParseSockDiagAnswer(Message(SOCK_DIAG_BY_FAMILY, 1, Described(other, 3, 3)), 1, id).status,
            SockDiagStatus::kOtherSocket);
}

TEST(SockDiagTest, PeerSocketIds) {
  TcpSocketId v4 = *PeerSocketId(At("10.0.0.1", 40000), At("10.0.0.2", 29500));
  EXPECT_EQ(v4.family, AF_INET);
  EXPECT_EQ(v4.self.port, 40000);
  EXPECT_EQ(v4.other.port, 29500);
  EXPECT_EQ(v4.self.addr[0], 10);
  EXPECT_EQ(v4.self.addr[3], 1);
  EXPECT_EQ(v4.other.addr[3], 2);

  // A listener on "::": IPv4 peers as ::ffff:a.b.c.d, asked about as IPv4.
  TcpSocketId mapped = *PeerSocketId(At("::ffff:127.0.0.1", 40000), At("::ffff:127.0.0.1", 29500));
  EXPECT_EQ(mapped.family, AF_INET);
  EXPECT_EQ(mapped.self.addr[0], 127);
  EXPECT_EQ(mapped.self.addr[4], 0);

  sockaddr_storage peer = At("fe80::1", 40000), local = At("fe80::2", 29500);
  reinterpret_cast<sockaddr_in6&>(peer).sin6_scope_id = 3;  // a link-local connection's interface
  TcpSocketId v6 = *PeerSocketId(peer, local);
  EXPECT_EQ(v6.family, AF_INET6);
  EXPECT_EQ(v6.scope, 3u);
  EXPECT_EQ(v6.self.addr[0], 0xfe);

  TcpSocketId back = Reversed(v4);
  EXPECT_EQ(back.self.port, 29500);
  EXPECT_EQ(back.other.port, 40000);

  sockaddr_storage unix_addr{};
  unix_addr.ss_family = AF_UNIX;
  EXPECT_FALSE(PeerSocketId(unix_addr, At("127.0.0.1", 1)));
  EXPECT_FALSE(PeerSocketId(At("127.0.0.1", 1), At("::1", 2)));  // families differ
}

TEST(SockDiagTest, RequestNamesExactlyOneSocket) {
  TcpSocketId id = Peer();
  std::string req = SockDiagRequest(id, 99);
  ASSERT_EQ(req.size(), sizeof(nlmsghdr) + sizeof(inet_diag_req_v2));
  nlmsghdr h{};
  memcpy(&h, req.data(), sizeof h);
  EXPECT_EQ(h.nlmsg_len, req.size());
  EXPECT_EQ(h.nlmsg_type, SOCK_DIAG_BY_FAMILY);
  EXPECT_EQ(h.nlmsg_flags, NLM_F_REQUEST);  // not NLM_F_DUMP
  EXPECT_EQ(h.nlmsg_seq, 99u);
  inet_diag_req_v2 r{};
  memcpy(&r, req.data() + sizeof h, sizeof r);
  EXPECT_EQ(r.sdiag_family, AF_INET);
  EXPECT_EQ(r.sdiag_protocol, IPPROTO_TCP);
  EXPECT_EQ(ntohs(r.id.idiag_sport), 40000);
  EXPECT_EQ(ntohs(r.id.idiag_dport), 29500);
  EXPECT_EQ(r.id.idiag_src[0], htonl(0x7f000001));
  EXPECT_EQ(r.id.idiag_cookie[0], INET_DIAG_NOCOOKIE);
}

}  // namespace
}  // namespace elastic
