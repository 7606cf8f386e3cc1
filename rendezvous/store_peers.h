// Who may use a round's workers' store. It speaks PyTorch's unauthenticated
// TCPStore protocol, so the host admits the job's own processes on this machine
// (by the user that owns the peer's socket, which the kernel's socket
// diagnostics tell: common/socket_owner.h) and the nodes of the round (by
// address). The decision is pure (ClassifyStorePeer, AdmitStorePeer: table
// tests); CheckStorePeer is the shell that reads the owner, and
// rendezvous_host.cc hands it the accepted socket's addresses.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <set>
#include <string>

#include "common/socket_owner.h"

namespace elastic {

struct StorePeer {
  std::string addr;     // the peer's address (getpeername), numeric; anything else: unknown
  std::string reached;  // the address of ours it connected to (getsockname), the same
};

enum class StorePeerKind {
  kUnknown,  // no numeric address
  kLocal,    // a process of this machine: see ClassifyStorePeer
  kRemote,   // anything else
};

// kLocal for loopback, for a peer whose address is the one it reached (with a
// wildcard listener the host's own workers come from the node's address, e.g.
// 10.200.0.11; Linux drops a packet from outside that bears one of our own
// addresses as its source), and for an address in `local_addrs` (this
// machine's, as the rendezvous saw them). A listener on "::" sees IPv4 peers as
// ::ffff:a.b.c.d: compared as a.b.c.d.
StorePeerKind ClassifyStorePeer(const StorePeer& peer, const std::set<std::string>& local_addrs);

struct StoreAdmission {
  bool admitted = false;
  std::string why;  // a refusal's reason, for the log
};

// The rule: a local peer is admitted when its socket belongs to the job's user
// (`job_uid`, the agent's own) or to root (who can read the job's memory
// anyway); when the kernel has no socket diagnostics at all (kUnavailable) it
// is admitted whatever its user (fail-open: the job's own workers must work;
// warned once); a closed socket or a failed lookup is refused (fail-closed).
// A remote peer is admitted when its address is one of the round's `members`.
StoreAdmission AdmitStorePeer(StorePeerKind kind, const std::string& addr, const SocketOwner& owner,
                              uint32_t job_uid, const std::set<std::string>& members);

// The shell: classifies the peer of an accepted socket, asks `owners` about a
// local one (only a local one), and decides.
StoreAdmission CheckStorePeer(const sockaddr_storage& peer, const sockaddr_storage& local,
                              const std::set<std::string>& local_addrs, const std::set<std::string>& members,
                              SocketOwners& owners, uint32_t job_uid);

// "::ffff:a.b.c.d" -> "a.b.c.d"; any other text unchanged.
std::string UnmapV4(const std::string& addr);

}  // namespace elastic
