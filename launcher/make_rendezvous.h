// Chooses and builds the agent's rendezvous from the launch settings: a pure
// function of RendezvousOptions (every fact from the environment, Slurm's and
// PMIx's included, is already in them: launcher/launch_config.h, run.cc).
// Always the C10d-style host/client rendezvous (rendezvous/): a standalone or
// single-node run hosts it itself on loopback, so its workers still get the
// agent's store.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/endpoint.h"
#include "common/event_loop.h"
#include "rendezvous/host_observer.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/rendezvous_settings.h"

namespace elastic {

// Everything the command line says about the rendezvous (torchrun's flags).
struct RendezvousOptions {
  bool standalone = false;            // --standalone
  int min_nodes = 1;                  // --nnodes MIN[:MAX]
  int max_nodes = 1;
  int node_rank = -1;                 // --node-rank, else SLURM_NODEID, else PMIx: preferred rank; -1 = join order
  std::optional<int> expected_nodes;  // SLURM_NNODES or PMIx (within MIN:MAX); --rdzv-conf expected_nodes wins
  std::string backend = "static";     // --rdzv-backend: static (torchrun's default) or c10d, both
                                      // elasticrun's host/client rendezvous (launch_convert.cc)
  std::optional<Endpoint> endpoint;   // --rdzv-endpoint HOST[:PORT] (host from PMIx under the plugin),
                                      // else --master-addr:--master-port (static); port 0: a free one
  std::string run_id = "none";        // --rdzv-id
  std::vector<std::pair<std::string, std::string>> conf;  // --rdzv-conf k=v,... (validated by MakeRendezvous)
  std::string local_addr;             // --local-addr
  std::string hostname;               // this node's name, for summaries and logs
  int max_restarts = 0;               // --max-restarts: job-wide budget of failure restarts
  int node_multiple = 1;              // --node-multiple K: rounds of a multiple of K nodes
  std::string token;                  // ELASTIC_RDZV_TOKEN; --rdzv-conf token= or token_file= wins
  std::string token_file;             // ELASTIC_RDZV_TOKEN_FILE (read by MakeRendezvous); likewise
  std::vector<std::string> peers;     // ELASTIC_RDZV_PEERS: the run's candidate nodes (host_discovery.h)
  bool token_in_argv = false;         // --rdzv-conf token= on the command line (warned: /proc/PID/cmdline)
};

// The rendezvous settings of the options (token, --rdzv-conf): false with *err naming the bad one.
bool BuildRendezvousSettings(const RendezvousOptions& options, RendezvousSettings* settings,
                             std::string* err);

// Returns nullptr with *err naming the bad setting.
// `observer` (not owned, outlives the result): told each step of the host this
// agent runs, from the start or after a takeover (the event record, job_events.h).
std::unique_ptr<RendezvousHandler> MakeRendezvous(const RendezvousOptions& options, EventLoop& loop,
                                                  std::string* err, HostObserver* observer = nullptr);

}  // namespace elastic
