// The pure rules of host failover (docs/design.md "Failover"): which successor
// an agent turns to when the host is lost, when a round may form after a loss
// (a strict majority of the previous round), and which hosts are stale (fencing
// by round number). No I/O: rendezvous_state.cc and failover_rendezvous.cc use
// them; failover_rules_test.cc tests them as tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>

namespace elastic {

// The next successor to try: the first group rank in [0, members) that is not
// excluded (the lost host, candidates found unreachable). The agent's own rank
// is a candidate like any other: reaching it means "take over". nullopt when
// every rank is excluded.
std::optional<int> NextCandidate(size_t members, const std::set<int>& excluded);

// A round after a loss forms only with a strict majority of the previous
// round's members: two groups of one run can never both have one.
bool HasMajority(size_t rejoined, size_t previous_members);

// The smallest number of the previous round's members that is a strict majority.
size_t MajorityOf(size_t previous_members);

// A host whose round is not past the last round this agent ran is of an older
// regime (a former host back from a partition or a SIGSTOP): never join it.
bool HostIsStale(uint64_t host_round, std::optional<uint64_t> last_round_run);

// A host stuck without a majority (a former host back from a partition) gives
// way to a host of the same run that completed a later round than the last one
// it knows of (-1: none), and joins it as a latecomer. Two stuck hosts of the
// same last round: see ProbeYieldsAfter.
bool ShouldYield(int64_t my_last_completed, int64_t their_last_completed);

// What a stuck host's probe passes to ShouldYield as its own last completed round,
// `quorum_round`, when it probes successor `probed_rank` of that round and is itself
// `own_rank` of it (-1: none). Two hosts stuck on the same round (the former host back
// from a SIGSTOP, and a successor that took over meanwhile) may each hold part of a
// majority that they hold together: neither giving way, both waited for it until
// join_timeout and the job ended (the randomized fault run, issue 19). So the later of
// the two in the round's successor order gives way to the earlier one (which never
// gives way to it: exactly one of the two moves), as to a host past that round.
int64_t ProbeYieldsAfter(int64_t quorum_round, int probed_rank, int own_rank);

// A walk of the successors that found no host (each refused, was silent or stale: the
// ones that could host may be cut off, or restarting) by an agent that does not take
// over itself (a latecomer, a spare, a member ranked past the successors) is walked
// again, until join_timeout: the cut may heal. `walks` is how many fruitless walks were
// made in a row (>= 1), `left` the time left to the walk's deadline. The pause before
// the next walk: heartbeat_interval, doubled after each walk, at most heartbeat_timeout,
// and never past the deadline (the last walk is made at it); nullopt once the deadline
// has passed: the agent ends (host lost). Before, one fruitless walk ended it at once.
std::optional<int64_t> PauseAfterAFruitlessWalk(int walks, int64_t left_ms,
                                                int64_t heartbeat_interval_ms,
                                                int64_t heartbeat_timeout_ms);

// What an agent knows of the job-wide restarts used (--max-restarts is one budget
// kept by the host) when it loses the host.
struct RestartsKnown {
  int round_used = 0;             // as the last round its workers ran said
  int told = -1;                  // as a later restart said (-1: none): the host counted it
                                  // and started forming the next round
  bool reported_failure = false;  // this node reported its worker's failure since that round:
                                  // the host counts it but tells every node but this one
};

// The restarts the lost host had used: the most this agent knows of (a reported failure
// counts as one more than the round's, the safe side when the host was lost before it
// read the report).
int RestartsBeforeLoss(const RestartsKnown& known);

// What a successor carries into the rendezvous it hosts: the host's count plus the
// host's loss itself. Carrying only the last round's count plus one was one short
// when the host was lost while a restart round formed.
int CarriedRestarts(const RestartsKnown& known);

// The run's restart budget as this agent knows it: the host's, said in the last round
// (RoundInfo::max_restarts), else this agent's own --max-restarts (a host that did not
// say it). A joined job's agents count the run's budget, not their own.
int RunRestartBudget(int round_max_restarts, int own_max_restarts);

}  // namespace elastic
