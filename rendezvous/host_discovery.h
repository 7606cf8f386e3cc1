// Finding the run's current host from what an agent can know (issue 19 item 17).
//
// Why: after a failover the run's host is no longer at the endpoint. An agent
// started later with only the endpoint (a node brought back with its own command
// line on a machine that holds no regime record, a scale-up step's new node) found
// nothing listening there and retried until join_timeout (exit 1), or, on the
// endpoint's own node, hosted a second regime of the run (item 14). So an agent is
// told the run's candidate nodes (ELASTIC_RDZV_PEERS: under srun, the plugin puts the
// job's first nodes there, resolved) and asks them before it hosts or joins the
// endpoint. Each candidate is asked at the endpoint's port: every agent binds its
// failover socket on that port of its own address where it can (failover_rendezvous.h),
// so the node that took over hosts there. What they answered decides (PlanDiscovery, a
// pure function): a host of the run that completed a round is the run's current
// regime, and the agent walks such hosts as a latecomer, never hosting itself.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/rendezvous_handler.h"

namespace elastic {

// What a candidate's address answered at the endpoint's port.
enum class PeerAnswer {
  kRefused,  // nothing listens (or it closed without a word)
  kSilent,   // accepted, said nothing in time: an agent's failover socket (a member of
             // a regime whose host is elsewhere, or taking over right now)
  kNoAnswer, // the connection was not answered in time: unreachable now (a partition,
             // or a first contact still resolving the neighbour): no evidence either way
  kOther,    // another run id, or not our protocol
  kFresh,    // a host of this run that has completed no round yet (round 0 forming)
  kRunning,  // a host of this run that has completed a round: the run's current regime
};

const char* PeerAnswerName(PeerAnswer answer);  // "refused", "silent", ...

// Classifies a candidate's first frame (a host's challenge) for run `run_id`.
PeerAnswer ClassifyPeerChallenge(std::string_view payload, std::string_view run_id);

// What the agent does with the answers of its candidates (in candidate order).
struct DiscoveryPlan {
  enum class Kind {
    kAsBefore,  // no regime runs elsewhere: host the endpoint if it is ours, else join it
    kWalk,      // walk `walk` (candidate indexes, in order) as a latecomer; never host
    kAskAgain,  // only members' silent sockets, no host of the run: ask again shortly
  };
  Kind kind = Kind::kAsBefore;
  std::vector<size_t> walk;
};
// `endpoint`: the index of the endpoint's own answer (-1: not asked). Running hosts
// first (they are the regime); with none, a fresh host of the run means the run is
// just starting (join the endpoint as before), and so does an endpoint that accepted
// but has not answered yet (a host slow to send its challenge on a loaded machine);
// with neither, silent sockets elsewhere, the endpoint refusing, may mean a regime
// whose host is lost and another taking over, or only that the endpoint's host was
// not reachable at that instant while its members' sockets were (seen under load: the
// agent walked a member of the forming round 0, no takeover came, exit 3). Silent
// sockets say nothing of which: while `may_ask_again`, ask again (a takeover answers
// as a running host, a forming run's endpoint as a fresh one); on the last ask walk
// them (each has a deadline, a takeover answers within it). Only refusals and others:
// as before.
DiscoveryPlan PlanDiscovery(const std::vector<PeerAnswer>& answers, int endpoint,
                            bool may_ask_again);

// Whether the answers so far (nullopt: not yet) already fix the plan's first host to
// walk: a running host, every candidate before it answered. The ask ends there instead
// of waiting out members' silent sockets (they never answer: a latecomer, a joining
// job's agent, waited the whole ask for them). Running hosts later in the order would
// only have been fallbacks of the walk; the one walked first is the same.
bool DiscoveryDecided(const std::vector<std::optional<PeerAnswer>>& answers);

// The candidates to walk as a round of successors (never taken over: group_rank -1,
// round 0, so the walk joins only a host that completed a round).
RoundInfo DiscoveredRegime(const std::vector<std::string>& peers, int port,
                           const std::vector<size_t>& walk);

// ---- the shell ----
// Asks every peer at `port` at once (ReadFirstFrames: blocks up to `timeout`, or until
// DiscoveryDecided; before the event loop runs). Peers not answered by then: kSilent
// (connected) or kNoAnswer, as at the timeout.
std::vector<PeerAnswer> AskPeers(const std::vector<std::string>& peers, int port,
                                 std::string_view run_id, int timeout_ms);

}  // namespace elastic
