#include "common/socket_owner.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <string.h>

#include <fmt/format.h>

#include "common/log.h"
#include "common/sock_diag.h"

namespace elastic {
namespace {

constexpr size_t kAnswerBytes = 8192;  // one socket's description is about 100 bytes
constexpr int kStaleAnswers = 16;      // read and dropped before a request, at most

SockDiagAnswer Failure(int error) {
  SockDiagAnswer a;
  a.status = SockDiagStatus::kError;
  a.error = error;
  return a;
}

// One request, one answer. The kernel answers inside sendto; the answer is read
// without waiting (nothing there is a malformed answer, never a wait).
SockDiagAnswer Ask(int fd, const TcpSocketId& id, uint32_t seq) {
  char buf[kAnswerBytes];
  for (int i = 0; i < kStaleAnswers && recv(fd, buf, sizeof buf, MSG_DONTWAIT) >= 0; ++i) {
  }
  std::string request = SockDiagRequest(id, seq);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  ssize_t n = 0;
  do {
    n = sendto(fd, request.data(), request.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Failure(errno);
  do {
    n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    SockDiagAnswer none;
    none.why = "no answer from the kernel";
    return none;
  }
  if (n < 0) return Failure(errno);
  return ParseSockDiagAnswer(std::string_view(buf, static_cast<size_t>(n)), seq, id);
}

bool RefusedByPolicy(int error) { return error == EACCES || error == EPERM; }

std::string Describe(const SockDiagAnswer& a) {
  switch (a.status) {
    case SockDiagStatus::kFound:
      return "found";
    case SockDiagStatus::kNotFound:
      return "no such socket";
    case SockDiagStatus::kError:
      return fmt::format("sock_diag: {}", strerror(a.error));
    case SockDiagStatus::kOtherSocket:
      return "sock_diag described another socket";
    case SockDiagStatus::kMalformed:
      return "sock_diag: " + a.why;
  }
  return "sock_diag: ?";
}

SocketOwner Owner(OwnerStatus status, std::string why) { return SocketOwner{status, 0, std::move(why)}; }

}  // namespace

SocketOwner KernelSocketOwners::Unavailable(std::string why) {
  if (support_ != Support::kNo)
    Log(LogLevel::kWarning,
        "store: the kernel's socket diagnostics are unavailable ({}): local peers of the store are admitted "
        "whatever their user (docs/security.md)",
        why);
  support_ = Support::kNo;
  fd_.Reset();
  return Owner(OwnerStatus::kUnavailable, std::move(why));
}

bool KernelSocketOwners::Open(SocketOwner* failed) {
  if (fd_) return true;
  fd_.Reset(socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (fd_) return true;
  int error = errno;
  std::string why = fmt::format("cannot open a NETLINK_SOCK_DIAG socket: {}", strerror(error));
  // No such family, or a policy that forbids it: the same for every peer. Out of
  // descriptors or memory: this peer only (refused), tried again for the next.
  if (error == EAFNOSUPPORT || error == EPROTONOSUPPORT || RefusedByPolicy(error)) {
    *failed = Unavailable(std::move(why));
  } else {
    *failed = Owner(OwnerStatus::kFailed, std::move(why));
  }
  return false;
}

SocketOwner KernelSocketOwners::PeerOwner(const sockaddr_storage& peer, const sockaddr_storage& local) {
  if (support_ == Support::kNo) return Owner(OwnerStatus::kUnavailable, "no socket diagnostics");
  std::optional<TcpSocketId> id = PeerSocketId(peer, local);
  if (!id) return Owner(OwnerStatus::kFailed, "not a TCP connection over IPv4 or IPv6");
  SocketOwner failed;
  if (!Open(&failed)) return failed;
  SockDiagAnswer a = Ask(fd_.get(), *id, ++seq_);
  if (a.status == SockDiagStatus::kFound) {
    support_ = Support::kYes;
    if (a.inode == 0) return Owner(OwnerStatus::kGone, "its socket is closed");
    return SocketOwner{OwnerStatus::kFound, a.uid, ""};
  }
  if (a.status == SockDiagStatus::kError && RefusedByPolicy(a.error)) return Unavailable(Describe(a));
  if (a.status != SockDiagStatus::kNotFound && a.status != SockDiagStatus::kOtherSocket)
    return Owner(OwnerStatus::kFailed, Describe(a));
  if (support_ == Support::kYes) return Owner(OwnerStatus::kGone, "its socket is gone");
  // ENOENT also means "no inet_diag/tcp_diag in this kernel". Our own end (or,
  // were it reset meanwhile, the store's listener on the same address and port)
  // is there for sure: found, the kernel can look; not found, it cannot.
  SockDiagAnswer self = Ask(fd_.get(), Reversed(*id), ++seq_);
  if (self.status == SockDiagStatus::kFound || self.status == SockDiagStatus::kOtherSocket) {
    support_ = Support::kYes;
    return Owner(OwnerStatus::kGone, "its socket is gone");
  }
  if (self.status == SockDiagStatus::kNotFound)
    return Unavailable("the kernel finds neither end of a TCP connection: no inet_diag/tcp_diag");
  return Owner(OwnerStatus::kFailed, Describe(self));
}

}  // namespace elastic
