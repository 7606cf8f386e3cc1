// Who may use a round's workers' store. It speaks PyTorch's unauthenticated
// TCPStore protocol, so the host admits only this machine and the nodes of the
// round: a pure decision over numeric addresses (rendezvous_host.cc is the shell
// that reads them from the accepted socket).
#pragma once

#include <set>
#include <string>

namespace elastic {

struct StorePeer {
  std::string addr;     // the peer's address (getpeername), numeric; anything else: unknown
  std::string reached;  // the address of ours it connected to (getsockname), the same
};

// True for loopback, for a peer whose address is the one it reached (a process
// of this machine: with a wildcard listener and nobody else connected, the
// host's own workers come from the node's address, e.g. 10.200.0.11, which
// nothing else put in `allowed`; Linux drops a packet from outside that bears
// one of our own addresses as its source), and for an address in `allowed`
// (this machine's known addresses and the round's members). A listener on "::"
// sees IPv4 peers as ::ffff:a.b.c.d: compared as a.b.c.d.
bool StorePeerAllowed(const StorePeer& peer, const std::set<std::string>& allowed);

// "::ffff:a.b.c.d" -> "a.b.c.d"; any other text unchanged.
std::string UnmapV4(const std::string& addr);

}  // namespace elastic
