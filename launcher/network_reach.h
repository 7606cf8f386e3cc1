// A container with a network namespace of its own (an OCI bundle whose config.json
// has one, `podman run --network=none`, `apptainer exec --net`) has loopback only:
// the agents of the other nodes can never reach this one, nor it them. Each agent
// used to wait for join_timeout (600 s) and then name the unreachable host; the
// check says why at once, on every node, before the rendezvous.
#pragma once

#include <string>
#include <vector>

#include "launcher/make_rendezvous.h"

namespace elastic {

// True for a numeric IPv4 or IPv6 address in loopback (127.0.0.0/8, ::1,
// ::ffff:127.x.x.x).
bool IsLoopbackAddress(const std::string& numeric);

// The decision (pure): the error for a run of more than one node whose rendezvous
// endpoint resolved to `endpoint_addresses`, none of them loopback (or to none:
// a name that does not resolve), on a node whose only network is loopback
// (`outside_network` false); empty otherwise (one node, --standalone, no
// endpoint, agents on loopback). Without it such an agent waited join_timeout,
// or, where the run's minimum is one node, took over as the host and trained
// alone: one world per node.
std::string IsolatedNetworkError(const RendezvousOptions& rdzv, bool outside_network,
                                 const std::vector<std::string>& endpoint_addresses);

// The shell: reads this node's interfaces (getifaddrs) and, only where they are
// loopback alone, resolves the endpoint's host (getaddrinfo; before the event
// loop), then decides as above.
std::string CheckNetworkReach(const RendezvousOptions& rdzv);

}  // namespace elastic
