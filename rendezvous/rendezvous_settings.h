// RendezvousSettings: every timeout and limit of the elastic rendezvous in one
// place. Defaults follow torchrun's c10d backend where it has one; each field
// can be set with --rdzv-conf key=value (ApplyRendezvousConf).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace elastic {

enum class HostMode { kAuto, kHost, kClient };  // is_host unset / 1 / 0

struct RendezvousSettings {
  int min_nodes = 1;                   // --nnodes MIN
  int max_nodes = 1;                   // --nnodes MAX
  int expected_nodes = 0;              // close the first round when this many joined (0: unknown);
                                       // above max_nodes, the extra nodes stand by as spares
  int node_multiple = 1;               // --node-multiple K: rounds of a multiple of K nodes only
  int64_t join_timeout_ms = 600'000;   // fatal if fewer than min_nodes joined by then
  int64_t last_call_timeout_ms = 30'000;  // extra wait for never-seen nodes after min joined
  int64_t close_timeout_ms = 30'000;   // host: how long to flush terminal messages before exiting
  int64_t heartbeat_interval_ms = 2'000;
  int64_t heartbeat_timeout_ms = 10'000;  // silent peer (either direction) is considered gone
  // Client: first retry delay while the host is not up yet, doubling up to 1 s.
  // Every node's agent starts at once under srun, so the clients' first try
  // usually comes before the host listens: a short first delay keeps that race
  // from costing a tenth of a second (a refused connection costs next to nothing).
  int64_t connect_retry_ms = 10;
  int max_restarts = 0;                // job-wide budget of failure restarts
  // Host: how many of a round's first nodes (group-rank order) every agent is
  // told as its failover successors. A constant, not the whole member list, so
  // each agent's bytes per round do not grow with the number of nodes (a list of
  // N in every round message made a round O(N^2) bytes at the host).
  int failover_successors = 8;
  HostMode host_mode = HostMode::kAuto;
  std::string token;                   // shared secret for HMAC challenge-response
  std::string munge_socket;            // munged socket ("" = library default)
  bool use_munge = true;               // munge=0 disables it
  int preferred_rank = -1;             // --node-rank or SLURM_NODEID; -1: join order
  // This agent's job joined another job's run (--elastic-join): the host ranks it after
  // every node of the run's own job, which thus keeps the host and the successors.
  bool guest = false;
  uint32_t max_frame_bytes = 1 << 20;  // protocol frame limit once authenticated
  // Before a peer has authenticated (both sides): a small frame limit, a cap on
  // such connections at the host (extra ones are closed at accept), and a
  // deadline to authenticate, so strangers cannot make the host buffer much or
  // hold many descriptors, and an agent never waits forever for a challenge.
  uint32_t auth_max_frame_bytes = 4096;
  int max_unauthenticated = 64;
  // Where each agent records the rounds it takes part in, so that an agent restarted on
  // this node rejoins the run's regime (regime_record.h). "": $XDG_RUNTIME_DIR/slurm-elastic,
  // else /tmp/slurm-elastic-UID.
  std::string state_dir;
  int64_t auth_timeout_ms = 10'000;
  // torchrun's --rdzv-conf keys, kept as given (ApplyRendezvousConf maps them):
  int keep_alive_max_attempt = 3;      // heartbeat_timeout = this x heartbeat_interval
  int64_t timeout_ms = 600'000;        // join_timeout unless that is given
  int64_t read_timeout_ms = 60'000;    // accepted, no effect
};

// Applies --rdzv-conf pairs. Bad values are errors naming them. Unknown keys are
// ignored, as torchrun ignores them, and named in *warning (one line for all).
bool ApplyRendezvousConf(const std::vector<std::pair<std::string, std::string>>& conf,
                         RendezvousSettings* settings, std::string* err,
                         std::string* warning = nullptr);

// Checks cross-field consistency (min <= max, heartbeat interval < timeout, ...).
bool ValidateRendezvousSettings(const RendezvousSettings& settings, std::string* err);

// One line per key for --help.
std::string RendezvousConfHelp();

}  // namespace elastic
