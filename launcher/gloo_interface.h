// Which network interface the workers' gloo should use.
//
// Why: gloo (init_process_group("gloo")) finds its own address by resolving the
// hostname. On clusters whose node names do not resolve (common; Slurm only needs
// NodeAddr) or resolve to 127.0.x.x, it binds loopback and cross-node connections
// are refused. The interface that routes to the workers' store (MASTER_ADDR) is the
// one the other nodes reach us through, so we name it in GLOO_SOCKET_IFNAME, unless
// the user set that variable or the hostname already resolves to a usable address.
#pragma once

#include <string>

namespace elastic {

// True when `hostname` resolves to at least one non-loopback address.
bool HostnameResolvesUsably(const std::string& hostname);

// The name of the local interface holding the source address the kernel would use
// to reach `addr` ("eth0"); "" when it cannot tell. Sends nothing (UDP connect only).
std::string InterfaceTowards(const std::string& addr);

// GLOO_SOCKET_IFNAME to give the workers, or "" to leave gloo alone. Looks no name
// up (it runs on the event loop): HostnameResolvesUsably is asked once, before the
// loop runs, and a `master_addr` that is not an address literal gives "".
std::string ChooseGlooInterface(bool hostname_resolves_usably, const std::string& master_addr,
                                int group_world_size);

}  // namespace elastic
