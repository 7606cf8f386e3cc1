// Chooses and builds the agent's rendezvous from the command line's settings:
// always the C10d-style host/client rendezvous (rendezvous/). A standalone or
// single-node run hosts it itself, so its workers still get the agent's store.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/event_loop.h"
#include "rendezvous/rendezvous_handler.h"

namespace elastic {

// Everything the command line says about the rendezvous (torchrun's flags).
struct RendezvousOptions {
  bool standalone = false;            // --standalone
  int min_nodes = 1;                  // --nnodes MIN[:MAX]
  int max_nodes = 1;
  int node_rank = -1;                 // --node-rank: preferred rank; -1 = join order
  std::string backend = "c10d";       // --rdzv-backend
  std::string endpoint;               // --rdzv-endpoint HOST[:PORT]
  std::string run_id = "none";        // --rdzv-id
  std::vector<std::pair<std::string, std::string>> conf;  // --rdzv-conf k=v,... (validated by MakeRendezvous)
  std::string local_addr;             // --local-addr
  std::string hostname;               // this node's name, for summaries and logs
  int max_restarts = 0;               // --max-restarts: job-wide budget of failure restarts
};

// Returns nullptr with *err naming the bad setting.
std::unique_ptr<RendezvousHandler> MakeRendezvous(const RendezvousOptions& options, EventLoop& loop,
                                                  std::string* err);

}  // namespace elastic
