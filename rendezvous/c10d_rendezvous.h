// Builds the C10d-style rendezvous of one agent: decides whether this agent hosts
// (is_host=1; or the endpoint's address is ours and its port is free to bind) or
// joins as a client (is_host=0; the port is taken, as when several agents share a
// machine; or the address is not ours), and picks the authentication. Either is
// wrapped in a FailoverRendezvous (failover_rendezvous.h): the job survives the
// host's loss.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/endpoint.h"
#include "common/event_loop.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/rendezvous_settings.h"

namespace elastic {

class HostObserver;  // rendezvous/host_observer.h

inline constexpr int kDefaultRendezvousPort = 29400;

struct C10dParams {
  RendezvousSettings settings;
  std::string run_id;
  std::string node_name;
  Endpoint endpoint;        // no port: kDefaultRendezvousPort; ignored when standalone
  bool standalone = false;  // host on 127.0.0.1, ephemeral port, one node, nobody may join
  HostObserver* observer = nullptr;  // told each step of a host here (host_observer.h); not owned
  // The run's candidate nodes (numeric addresses, ELASTIC_RDZV_PEERS): asked at the
  // endpoint's port before this agent hosts or joins the endpoint (host_discovery.h).
  std::vector<std::string> peers;
};

std::unique_ptr<RendezvousHandler> CreateC10dRendezvous(EventLoop& loop, const C10dParams& params,
                                                        std::string* err);

}  // namespace elastic
