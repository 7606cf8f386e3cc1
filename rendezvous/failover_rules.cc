#include "rendezvous/failover_rules.h"

#include <algorithm>

namespace elastic {

std::optional<int> NextCandidate(size_t members, const std::set<int>& excluded) {
  for (size_t rank = 0; rank < members; ++rank)
    if (!excluded.count(static_cast<int>(rank))) return static_cast<int>(rank);
  return std::nullopt;
}

bool HasMajority(size_t rejoined, size_t previous_members) {
  return 2 * rejoined > previous_members;
}

size_t MajorityOf(size_t previous_members) { return previous_members / 2 + 1; }

bool HostIsStale(uint64_t host_round, std::optional<uint64_t> last_round_run) {
  return last_round_run && host_round <= *last_round_run;
}

bool ShouldYield(int64_t my_last_completed, int64_t their_last_completed) {
  return their_last_completed > my_last_completed;
}

std::optional<int64_t> PauseAfterAFruitlessWalk(int walks, int64_t left_ms,
                                                int64_t heartbeat_interval_ms,
                                                int64_t heartbeat_timeout_ms) {
  if (left_ms <= 0) return std::nullopt;
  int64_t cap = std::max<int64_t>({heartbeat_timeout_ms, heartbeat_interval_ms, 1});
  int64_t pause = std::max<int64_t>(heartbeat_interval_ms, 1);
  for (int i = 1; i < walks && pause < cap; ++i) pause *= 2;
  return std::min({pause, cap, left_ms});
}

int64_t ProbeYieldsAfter(int64_t quorum_round, int probed_rank, int own_rank) {
  return own_rank >= 0 && probed_rank < own_rank ? quorum_round - 1 : quorum_round;
}

int RestartsBeforeLoss(const RestartsKnown& known) {
  int used = known.round_used + (known.reported_failure ? 1 : 0);
  return std::max(used, known.told);
}

int CarriedRestarts(const RestartsKnown& known) { return RestartsBeforeLoss(known) + 1; }

int RunRestartBudget(int round_max_restarts, int own_max_restarts) {
  return round_max_restarts >= 0 ? round_max_restarts : own_max_restarts;
}

}  // namespace elastic
