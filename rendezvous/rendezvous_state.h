// The host's rendezvous as a pure state machine: StepRendezvous(settings, state, event, now)
// -> actions. No I/O and no clock reads: the shell (rendezvous_host.cc) feeds it
// events from the network and the monotonic clock and carries out the actions.
//
// Phases and their transitions:
// Allowed sizes and spares: a round has a multiple of node_multiple nodes within
// MIN..MAX (RoundSize); the joined nodes beyond it stand by as spares (the wait
// list) and fill the next round after a loss. Spares present when a round
// completes are voters of that round for the majority rule, like its members.
// A node that joins with a standby reason (Slurm drained it: EvJoin::standby) is
// taken only when the round needs it to reach MIN; otherwise it stands by as a spare.
//   kJoining   -> kRunning   round complete (max reached, expected_nodes reached, every
//                            survivor of the previous round rejoined, or last call over),
//                            and after a first round only with a strict majority of the
//                            previous round's members (failover_rules.h: no split brain)
//              -> kClosed    join timeout (below min, or no majority), or survivors below min
//   kRunning   -> kJoining   member lost, worker failure (both counted against
//                            max_restarts), new node while below max (growth, not counted),
//                            member left with notice (not counted, no longer a voter)
//              -> kFinishing a member's workers all succeeded
//   kJoining   -> kClosed    a member of the stopped round, not yet back, says its workers
//                            all succeeded in it (the success crossed the stop: it never
//                            rejoins, late_success.h): job failed, the restart not counted
//              -> kClosed    restarts exhausted (job failed), survivors below min (fatal)
//   any but kClosed -> kClosed  a node ends the job (EvEndJob: its crash loop), job failed
//   kFinishing -> kClosed    every member succeeded or left (done), or a failure (job failed)
//   kClosed: terminal; new nodes are told the job is over.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/event_loop.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/rendezvous_settings.h"

namespace elastic {

using NodeId = uint64_t;
using TimePoint = MonoClock::time_point;

struct NodeDesc {
  NodeId id = 0;
  std::string name;         // for messages: "hostname" (plus ":pid" when several share a host)
  std::string addr;         // peer IP address, for the store's peer filter
  int preferred_rank = -1;  // node_rank / Slurm node id; -1: join order
  bool local = false;       // the host's own agent: never times out, gets terminal actions last
  std::string rdzv_addr;    // where its agent listens should it take over (failover); "" = addr
  int rdzv_port = 0;        // 0: it cannot take over
  bool guest = false;       // of a job that joined this run (--elastic-join): ranked after
                            // every node of the run's own job, so the host and the failover
                            // successors stay on the job that leaves last
};

struct NodeRecord {
  NodeDesc desc;
  uint64_t seq = 0;            // order of first arrival: the join-order tie breaker
  TimePoint last_heard{};
  int local_world_size = 0;
  int64_t member_of = -1;      // the last round its workers ran in, as it says (-1: none)
  bool joined = false;         // a participant of the round being formed
  bool succeeded = false;      // of the running round
  std::string standby;         // its last join's standby reason ("": it may train)
};

enum class RendezvousPhase { kJoining, kRunning, kFinishing, kClosed };

struct RendezvousState {
  RendezvousPhase phase = RendezvousPhase::kJoining;
  uint64_t round = 0;                 // round being formed, or running
  bool any_round_completed = false;
  std::map<NodeId, NodeRecord> nodes; // every connected, authenticated node
  size_t num_joined = 0;              // participants of the round being formed
  std::vector<NodeId> members;        // of the running round, in group-rank order
  std::set<NodeId> pending_rejoin;    // survivors of the last round that have not rejoined
  std::vector<NodeId> wait_list;      // arrived while a round runs
  std::optional<TimePoint> last_call_deadline;
  TimePoint join_deadline{};
  int restarts_used = 0;
  WorkerFailure last_failure;         // the last worker failure counted (global_rank -1: none)
  // Why the last running round was stopped for the next one: a member's success that
  // crossed the stop ends the job with this reason (late_success.h).
  std::string stop_reason;
  EndReason stop_cause = EndReason::kUnknown;  // kWorkerFailed, kNodesLost (counted); else churn
  int restarts_before_stop = 0;                // restarts_used before the stop was counted
  uint64_t next_seq = 0;
  // The majority rule (docs/design.md "Failover"): once a round completed, the
  // next one forms only when a strict majority of that round's members rejoined.
  // Members count by node id (this host saw them) or, after a takeover, by the
  // round they say they ran (quorum_round).
  std::set<NodeId> quorum;            // voters of the last completed round: members and spares
  int64_t quorum_round = -1;          // its number (-1: no round yet, no rule)
  size_t quorum_size = 0;             // its voter count
  size_t quorum_awaited = 0;          // after a takeover: members expected back (no ids known)
  // After a takeover: the lost round's first members by name (RoundInfo::successors). A
  // joiner listed here votes for quorum_round even when it says an earlier round: the
  // host died after telling only some members that the round had completed (VotesFor).
  std::set<std::string> quorum_names;
  // Nodes that left since the last round completed because a signal stopped their agent:
  // when the job falls below MIN only through them, Slurm is ending it (kStopped, no requeue).
  size_t left_by_signal = 0;
};

// What a successor carries into the rendezvous it hosts after the host's loss.
struct CarriedRound {
  uint64_t next_round = 0;    // the first round it forms (past every round run)
  int restarts_used = 0;      // the host's loss counted
  uint64_t last_round = 0;    // the round that was lost: its members form the quorum
  size_t last_members = 0;    // its voters: members and spares (RoundInfo::spares)
  size_t awaited = 0;         // of them, the ones not known to be gone (itself included)
  // When this node saw the host's loss (the event record's recovery starts there); unset: now.
  std::optional<TimePoint> host_lost_at = std::nullopt;
  std::set<std::string> known_members = {};  // its first members' names (RoundInfo::successors)
};

// Events (from the network, the local agent, or the clock).
struct EvConnect { NodeDesc desc; };
// `standby`: why the node should not train (Slurm's verdict: "n2 is DRAIN in Slurm
// (reason: ...)"); "": it may. Its latest join says: a spare whose verdict clears joins again.
struct EvJoin { NodeId node; int local_world_size; int64_t member_of = -1; std::string standby = {}; };
// A node's agent is gone. `notice`: it said so itself (`leave`: its job ends, scancel,
// time limit, preemption) and never comes back: it stops being a voter, so the next
// round forms at once without it and the majority is weighed without it; not a
// failure (no restart counted). Without notice (connection lost, heartbeat timeout)
// it may be behind a partition: it stays a voter and its loss counts.
// `signal`: the notice says a signal stops its agent (Slurm is ending the job on that node).
struct EvLeave { NodeId node; std::string reason; bool notice = false; int signal = 0; };
struct EvHeartbeat { NodeId node; };
struct EvWorkerFailed { NodeId node; uint64_t round; WorkerFailure failure; };
struct EvSucceeded { NodeId node; uint64_t round; };
struct EvTick {};
struct EvHostFailure { std::string message; };  // the host cannot go on (ends the job)
// A node ends the job for all (its workers' crash loop): job failed with `reason`.
struct EvEndJob { NodeId node; EndReason reason; WorkerFailure failure; std::string message; };
using RendezvousEvent = std::variant<EvConnect, EvJoin, EvLeave, EvHeartbeat, EvWorkerFailed,
                                     EvSucceeded, EvTick, EvHostFailure, EvEndJob>;

enum class RendezvousActionKind {
  kRoundComplete,    // node: start workers with `round`
  kRestartRequired,  // node: stop workers and Join again (message: why)
  kJobFailed,        // node: restarts exhausted (failure)
  kDone,             // node: job finished (for a remote node: its success is acknowledged)
  kFatal,            // node: cannot continue (message)
  kDisconnect,       // node: close its connection (heartbeat timeout); a leave follows
  kStandBy,          // node: stands by as a spare of `round` (successors set: a voter of it)
};

struct RendezvousAction {
  RendezvousActionKind kind;
  NodeId node = 0;
  RoundInfo round;  // kRoundComplete (store_addr/port left for the shell), kStandBy; for the
                    // others round.round and round.restarts_used as they stand
  std::string message;
  WorkerFailure failure;
  EndReason end_reason = EndReason::kUnknown;  // kJobFailed, kDone, kFatal: why the job ended
  bool worker_failed = false;  // kRestartRequired: a worker's failure (not churn) ended the round
};

// The allowed round sizes: multiples of node_multiple within min_nodes..max_nodes.
// RoundSize: the largest allowed size with `joined` nodes (0: none yet).
size_t SmallestRound(const RendezvousSettings& settings);
size_t LargestRound(const RendezvousSettings& settings);
size_t RoundSize(const RendezvousSettings& settings, size_t joined);

RendezvousState InitialState(const RendezvousSettings& settings, TimePoint now);
// A successor's state when it takes over: forming carried.next_round under the majority rule.
RendezvousState TakeoverState(const RendezvousSettings& settings, TimePoint now,
                              const CarriedRound& carried);
// Previous-round members among the participants of the round being formed.
size_t QuorumRejoined(const RendezvousState& state);
// Whether a node votes for the last completed round (quorum_round): known as its voter
// (this host completed it), or it says it ran it, or, after a takeover, it is one of the
// round's members by name and says an earlier round. The last: a host can die after
// telling only some members that the round completed; those that missed it say the
// round before, and the new host, which heard of the round, would never count them
// (its round then waited out join_timeout: CI, Debian 13, 2026-12-06). Counting them
// counts real members of the round only, each where it joined, so no two hosts can
// both hold a majority of its voters.
bool VotesFor(const RendezvousState& state, NodeId id, const NodeRecord& rec);

// What one event does: the next state and the actions for the shell
// (rendezvous_host.cc) to carry out, in order.
struct RendezvousTransition {
  RendezvousState state;
  std::vector<RendezvousAction> actions;
};

// Applies one event. Pure and deterministic: same (settings, state, event, now)
// => same transition. The state is taken by value so that the shell moves its
// state in and the result back (no copy of the node table per event).
RendezvousTransition StepRendezvous(const RendezvousSettings& settings, RendezvousState state,
                                    const RendezvousEvent& event, TimePoint now);

// Earliest time a Tick can change anything besides heartbeats (last call, join
// timeout); nullopt when nothing is due. Heartbeats are checked by periodic ticks.
std::optional<TimePoint> NextDeadline(const RendezvousState& state);

// "2/3 nodes joined; missing: node ranks 2" for the console while joining.
std::string DescribeWaiting(const RendezvousSettings& settings, const RendezvousState& state);

const char* PhaseName(RendezvousPhase phase);

}  // namespace elastic
