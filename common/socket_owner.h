// Which user owns the socket at the other end of a TCP connection accepted
// from this machine: a small interface (tests pass a fake), and its kernel
// implementation through NETLINK_SOCK_DIAG (common/sock_diag.h builds the
// request and parses the answer). The workers' store admits local peers by it
// (rendezvous/store_peers.h).
//
// Never blocks: the kernel answers a sock_diag request inside sendmsg, so the
// answer is read without waiting (a non-blocking socket; no answer there is a
// failure, not a wait). One netlink socket, opened at the first lookup and kept.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/unique_fd.h"

namespace elastic {

enum class OwnerStatus {
  kFound,        // uid is the owner
  kGone,         // no process holds the peer's socket any more (closed, or not found)
  kUnavailable,  // this kernel has no socket diagnostics for TCP: nothing can be known
  kFailed,       // this lookup failed (an error, no answer): nothing is known of this peer
};

struct SocketOwner {
  OwnerStatus status = OwnerStatus::kFailed;
  uint32_t uid = 0;  // kFound
  std::string why;   // anything but kFound: for the log
};

class SocketOwners {
 public:
  virtual ~SocketOwners() = default;
  // The owner of the socket that connected from `peer` to our `local` address
  // (getpeername and getsockname of the accepted socket), both on this machine.
  virtual SocketOwner PeerOwner(const sockaddr_storage& peer, const sockaddr_storage& local) = 0;
};

// The kernel's: asks inet_diag for the peer's socket by its 4-tuple. When that
// finds nothing, it asks for our own accepted socket once: found, the peer's is
// gone; not found either, the kernel has no TCP diagnostics (ENOENT means both),
// and it says so once (a warning) and answers kUnavailable from then on; so it
// does when the netlink family cannot be opened (EPROTONOSUPPORT...).
class KernelSocketOwners : public SocketOwners {
 public:
  SocketOwner PeerOwner(const sockaddr_storage& peer, const sockaddr_storage& local) override;

 private:
  enum class Support { kUnknown, kYes, kNo };
  bool Open(SocketOwner* failed);
  SocketOwner Unavailable(std::string why);

  UniqueFd fd_;
  uint32_t seq_ = 0;
  Support support_ = Support::kUnknown;
};

}  // namespace elastic
