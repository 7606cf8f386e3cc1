#include "rendezvous/rendezvous_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <tuple>

#include "rendezvous/failover_rules.h"
#include "rendezvous/late_success.h"

namespace elastic {
namespace {

using Actions = std::vector<RendezvousAction>;

struct Ctx {
  const RendezvousSettings& settings;
  TimePoint now;
  RendezvousState& s;
  Actions& out;

  void Emit(RendezvousActionKind kind, NodeId node, std::string message = {}) {
    RendezvousAction a{kind, node, {}, std::move(message), {}, EndReason::kUnknown};
    a.round.round = s.round;  // the round this action is about
    a.round.restarts_used = s.restarts_used;
    out.push_back(std::move(a));
  }
  std::string Name(NodeId id) const {
    auto it = s.nodes.find(id);
    return it == s.nodes.end() ? fmt::format("node#{}", id) : it->second.desc.name;
  }
};

bool IsMember(const RendezvousState& s, NodeId id) {
  return std::find(s.members.begin(), s.members.end(), id) != s.members.end();
}

void EraseFrom(std::vector<NodeId>* v, NodeId id) { std::erase(*v, id); }

// Every node that is still connected, in id order (for broadcasts).
std::vector<NodeId> AllNodes(const RendezvousState& s) {
  std::vector<NodeId> ids;
  for (const auto& [id, rec] : s.nodes) ids.push_back(id);
  return ids;
}

void Close(Ctx& c, RendezvousActionKind kind, EndReason why, const std::string& message,
           const WorkerFailure* failure) {
  for (NodeId id : AllNodes(c.s)) {
    RendezvousAction a{kind, id, {}, message, failure ? *failure : WorkerFailure{}, why};
    a.round.round = c.s.round;
    a.round.restarts_used = c.s.restarts_used;
    c.out.push_back(std::move(a));
  }
  c.s.phase = RendezvousPhase::kClosed;
  c.s.last_call_deadline.reset();
}

void MarkJoined(Ctx& c, NodeRecord& rec, int local_world_size) {
  rec.local_world_size = local_world_size;
  if (!rec.joined) ++c.s.num_joined;
  rec.joined = true;
  c.s.pending_rejoin.erase(rec.desc.id);
}


// Rank order: the run's own job before joined jobs (guests), then preferred rank
// (node_rank / Slurm node id: a guest's counts within its own job), then first arrival.
// Successors are the first members, so the host stays on the run's own job.
bool RankBefore(const NodeRecord& a, const NodeRecord& b) {
  auto key = [](const NodeRecord& r) {
    int pref = r.desc.preferred_rank >= 0 ? r.desc.preferred_rank : std::numeric_limits<int>::max();
    return std::tuple<bool, int, uint64_t>(r.desc.guest, pref, r.seq);
  };
  return key(a) < key(b);
}

bool QuorumMet(const RendezvousState& s) {
  return s.quorum_round < 0 || HasMajority(QuorumRejoined(s), s.quorum_size);
}

// The round's first failover_successors members in group-rank order: failover walks
// them from rank 0 (NextCandidate), so the first few are all it needs, and a constant
// number keeps every agent's bytes per round the same whatever the number of nodes.
std::vector<Successor> Successors(const RendezvousSettings& settings, const RendezvousState& s) {
  std::vector<Successor> out;
  size_t n = std::min(s.members.size(), static_cast<size_t>(std::max(settings.failover_successors, 1)));
  for (size_t i = 0; i < n; ++i) {
    const NodeDesc& d = s.nodes.at(s.members[i]).desc;
    out.push_back(Successor{d.name, d.rdzv_addr.empty() ? d.addr : d.rdzv_addr, d.rdzv_port});
  }
  return out;
}

// A spare of the running round: a voter of it (successors set) when it stood by
// at completion, else a latecomer that only waits (it cannot follow a failover).
void EmitStandBy(Ctx& c, NodeId id, bool voter) {
  RendezvousAction a{RendezvousActionKind::kStandBy, id, {}, {}, {}};
  a.round.round = c.s.round;
  a.round.group_rank = -1;
  a.round.group_world_size = static_cast<int>(c.s.members.size());
  a.round.restarts_used = c.s.restarts_used;
  a.round.max_restarts = c.settings.max_restarts;
  if (voter) {
    a.round.successors = Successors(c.settings, c.s);
    a.round.spares = static_cast<int>(c.s.wait_list.size());
  }
  const std::string& standby = c.s.nodes.at(id).standby;
  a.message = !standby.empty()
                  ? fmt::format("{}: standing by (round {} has {} node(s) without it)", standby,
                                c.s.round, c.s.members.size())
                  : fmt::format("round {} is full ({} node(s){})", c.s.round, c.s.members.size(),
                                c.settings.node_multiple > 1
                                    ? fmt::format(", a multiple of {}", c.settings.node_multiple)
                                    : std::string());
  c.out.push_back(std::move(a));
}

void CompleteRound(Ctx& c) {
  std::vector<NodeRecord*> joined;
  for (auto& [id, rec] : c.s.nodes)
    if (rec.joined) joined.push_back(&rec);
  auto rank_order = [](const NodeRecord* a, const NodeRecord* b) { return RankBefore(*a, *b); };
  std::sort(joined.begin(), joined.end(), rank_order);
  // Nodes Slurm drained stand by unless the round needs them to reach MIN (never
  // below MIN because of a drain); then the lowest ranks of them train.
  size_t available = static_cast<size_t>(std::count_if(
      joined.begin(), joined.end(), [](const NodeRecord* r) { return r->standby.empty(); }));
  size_t size = RoundSize(c.settings, available);
  if (size == 0) size = std::min(joined.size(), SmallestRound(c.settings));
  std::stable_partition(joined.begin(), joined.end(), [](const NodeRecord* r) { return r->standby.empty(); });
  std::sort(joined.begin(), joined.begin() + static_cast<ptrdiff_t>(size), rank_order);
  std::sort(joined.begin() + static_cast<ptrdiff_t>(size), joined.end(), rank_order);
  c.s.members.clear();
  c.s.wait_list.clear();
  int world_size = 0;
  for (size_t i = 0; i < joined.size(); ++i) {
    joined[i]->joined = false;
    joined[i]->succeeded = false;
    if (i < size) {
      c.s.members.push_back(joined[i]->desc.id);
      world_size += joined[i]->local_world_size;
    } else {
      c.s.wait_list.push_back(joined[i]->desc.id);  // over max, or drained: next round
    }
  }
  int offset = 0;
  std::vector<Successor> successors = Successors(c.settings, c.s);
  for (size_t i = 0; i < c.s.members.size(); ++i) {
    const NodeRecord& rec = c.s.nodes.at(c.s.members[i]);
    RendezvousAction a{RendezvousActionKind::kRoundComplete, rec.desc.id, {}, {}, {}};
    a.round.round = c.s.round;
    a.round.group_rank = static_cast<int>(i);
    a.round.group_world_size = static_cast<int>(c.s.members.size());
    a.round.rank_offset = offset;
    a.round.world_size = world_size;
    a.round.restarts_used = c.s.restarts_used;
    a.round.max_restarts = c.settings.max_restarts;
    a.round.successors = successors;
    a.round.spares = static_cast<int>(c.s.wait_list.size());
    c.out.push_back(std::move(a));
    offset += rec.local_world_size;
  }
  for (NodeId id : c.s.wait_list) EmitStandBy(c, id, /*voter=*/true);
  c.s.num_joined = 0;
  c.s.pending_rejoin.clear();
  c.s.last_call_deadline.reset();
  c.s.any_round_completed = true;
  c.s.left_by_signal = 0;
  c.s.phase = RendezvousPhase::kRunning;
  // The spares vote as members do: a successor counts them the same way (RoundInfo::spares),
  // so every host of this run weighs a majority against the same voters.
  c.s.quorum = std::set<NodeId>(c.s.members.begin(), c.s.members.end());
  c.s.quorum.insert(c.s.wait_list.begin(), c.s.wait_list.end());
  c.s.quorum_round = static_cast<int64_t>(c.s.round);
  c.s.quorum_size = c.s.quorum.size();
  c.s.quorum_awaited = 0;
  c.s.quorum_names.clear();
}

// Closes the round being formed if a rule says so.
void MaybeComplete(Ctx& c) {
  if (c.s.phase != RendezvousPhase::kJoining) return;
  const auto& st = c.settings;
  size_t n = c.s.num_joined;
  if (n == 0) return;
  // The first round under Slurm waits for the step's nodes even past max, so that
  // the spares are the highest node ranks and stand by as voters from the start.
  bool first_round = !c.s.any_round_completed && st.expected_nodes > 0;
  bool at_expected = first_round && n >= static_cast<size_t>(st.expected_nodes);
  bool at_max = n >= LargestRound(st) && (!first_round || at_expected);
  bool enough = n >= SmallestRound(st);
  at_expected = at_expected && enough;
  bool survivors_back = c.s.any_round_completed && c.s.pending_rejoin.empty() &&
                        QuorumRejoined(c.s) >= c.s.quorum_awaited && enough;
  bool last_call_over = enough && c.s.last_call_deadline && c.now >= *c.s.last_call_deadline;
  // The majority (else: wait for more, or the join timeout) only where it decides
  // something: QuorumRejoined walks every node, and this runs on every join.
  bool complete = at_max || at_expected || survivors_back || last_call_over;
  if (complete && QuorumMet(c.s)) {
    CompleteRound(c);
    return;
  }
  if (enough && !complete && !c.s.last_call_deadline && QuorumMet(c.s))
    c.s.last_call_deadline = c.now + Millis(st.last_call_timeout_ms);
}

// Starts forming the next round: wait-listed nodes are already participants.
// `counted`: the stop counts against max_restarts (a worker's failure, a node's loss);
// kUnknown: churn, not counted.
void StartNextRound(Ctx& c, const std::string& reason, NodeId except,
                    EndReason counted = EndReason::kUnknown) {
  c.s.stop_reason = reason;
  c.s.stop_cause = counted;
  c.s.restarts_before_stop = c.s.restarts_used;
  if (counted != EndReason::kUnknown) c.s.restarts_used += 1;
  for (NodeId id : c.s.members) {
    if (id == except) continue;
    c.Emit(RendezvousActionKind::kRestartRequired, id, reason);
    c.out.back().worker_failed = counted == EndReason::kWorkerFailed;
  }
  c.s.pending_rejoin = std::set<NodeId>(c.s.members.begin(), c.s.members.end());
  c.s.members.clear();
  for (NodeId id : c.s.wait_list) {
    NodeRecord& rec = c.s.nodes.at(id);
    if (!rec.joined) MarkJoined(c, rec, rec.local_world_size);
  }
  c.s.wait_list.clear();
  c.s.round += 1;
  c.s.phase = RendezvousPhase::kJoining;
  c.s.join_deadline = c.now + Millis(c.settings.join_timeout_ms);
  c.s.last_call_deadline.reset();
  MaybeComplete(c);
}

// A failure-type restart: counted against max_restarts; over budget, the job fails
// (`exhausted` says why: a worker's failure, or a node's loss).
void RestartAfterFailure(Ctx& c, const std::string& reason, const WorkerFailure& failure,
                         NodeId except, EndReason exhausted) {
  if (c.s.restarts_used >= c.settings.max_restarts) {
    Close(c, RendezvousActionKind::kJobFailed, exhausted,
          fmt::format("{}; restarts exhausted ({} of --max-restarts={} used)", reason,
                      c.s.restarts_used, c.settings.max_restarts),
          &failure);
    return;
  }
  StartNextRound(c, reason, except, exhausted);
}

size_t SurvivorsAfterLoss(const RendezvousState& s) {
  return s.members.size() + s.wait_list.size() + s.pending_rejoin.size() + s.num_joined;
}

// The voters of the last completed round still connected here (known by id, or by the
// round they said they ran). Nodes not yet known as voters are not counted: the safe
// side (a host that undercounts waits instead of acting for the job).
// Silent ones (past heartbeat_timeout, about to be dropped on this tick) are not alive:
// a host cut off from all its peers drops them one by one, and the first drop must
// already see the minority it is in.
size_t VotersAlive(const Ctx& c) {
  const RendezvousState& s = c.s;
  size_t n = 0;
  for (const auto& [id, rec] : s.nodes) {
    bool voter = VotesFor(s, id, rec);
    bool silent = !rec.desc.local && c.now - rec.last_heard >= Millis(c.settings.heartbeat_timeout_ms);
    if (voter && !silent) ++n;
  }
  return n;
}

// A host left with no strict majority of the last round's voters may be the cut-off or
// frozen side: the others may train on. It never acts for the job (no job-wide end, no
// requeue): it waits out join_timeout for a majority (OnTick: no_majority) and may find
// the others' host meanwhile (FailoverRendezvous: it gives way and rejoins).
bool IsMinority(const Ctx& c) {
  return c.s.quorum_round >= 0 && !HasMajority(VotersAlive(c), c.s.quorum_size);
}

void BelowMinCheck(Ctx& c, const std::string& why) {
  // Everyone who may still take part: the round's members, survivors yet to
  // rejoin, participants and the wait list (disjoint sets by construction).
  size_t alive = SurvivorsAfterLoss(c.s);
  size_t smallest = SmallestRound(c.settings);
  if (alive >= smallest || IsMinority(c)) return;
  // Below MIN only because signals stopped nodes: Slurm is ending the job (scancel, a time
  // limit, preemption reach the nodes one by one); a requeue would bring back a cancelled job.
  bool stopped = alive + c.s.left_by_signal >= smallest;
  std::string limit = c.settings.node_multiple > 1
                          ? fmt::format("the smallest allowed round of {} (--nnodes MIN {}, "
                                        "--node-multiple {})", smallest, c.settings.min_nodes,
                                        c.settings.node_multiple)
                          : fmt::format("the minimum of {} (--nnodes)", c.settings.min_nodes);
  Close(c, RendezvousActionKind::kFatal, stopped ? EndReason::kStopped : EndReason::kTooFewNodes,
        fmt::format("{}; {} node(s) left, below {}{}", why, alive, limit,
                    stopped ? fmt::format(": {} node(s) were stopped by a signal (scancel, a time "
                                          "limit, preemption), so the job is ending (no requeue)",
                                          c.s.left_by_signal)
                            : ""),
        nullptr);
}

// A voter that left with notice never comes back: the majority is weighed without it.
// Safe against split brain: it votes in no group, so a strict majority of the voters
// left is still one that no other group can hold (a host that did not hear of the
// departure weighs against more voters, the safe side).
void DropVoter(RendezvousState& s, NodeId id, const NodeRecord& rec) {
  if (s.quorum_round < 0) return;
  bool by_id = s.quorum.erase(id) > 0;
  bool by_round = !by_id && VotesFor(s, id, rec);
  if (!by_id && !by_round) return;
  if (s.quorum_size > 0) --s.quorum_size;
  if (by_round && s.quorum_awaited > 0) --s.quorum_awaited;
}

void OnLeave(Ctx& c, const EvLeave& ev) {
  auto it = c.s.nodes.find(ev.node);
  if (it == c.s.nodes.end()) return;
  std::string name = it->second.desc.name;
  bool member = IsMember(c.s, ev.node);
  bool was_pending = c.s.pending_rejoin.erase(ev.node) > 0;
  bool took_part = member || was_pending || it->second.joined || std::ranges::count(c.s.wait_list, ev.node) > 0;
  if (ev.signal > 0 && took_part) ++c.s.left_by_signal;
  if (it->second.joined) --c.s.num_joined;
  if (ev.notice) DropVoter(c.s, ev.node, it->second);
  c.s.nodes.erase(it);
  EraseFrom(&c.s.members, ev.node);
  EraseFrom(&c.s.wait_list, ev.node);
  std::string why = ev.notice ? fmt::format("node {} left with notice ({})", name, ev.reason)
                              : fmt::format("node {} left ({})", name, ev.reason);
  switch (c.s.phase) {
    case RendezvousPhase::kJoining:
      // Back below min: the last call starts afresh when min is reached again.
      if (c.s.num_joined < SmallestRound(c.settings)) c.s.last_call_deadline.reset();
      if (c.s.any_round_completed) BelowMinCheck(c, why);
      // A departure on notice lowers the majority needed: the round may form now.
      if (c.s.phase == RendezvousPhase::kJoining && (was_pending || ev.notice)) MaybeComplete(c);
      return;
    case RendezvousPhase::kRunning: {
      if (!member) return;
      BelowMinCheck(c, why);
      if (c.s.phase != RendezvousPhase::kRunning) return;
      // Announced in time: the next round forms at once without it, and it is no
      // failure (not counted against max_restarts, like growth).
      if (ev.notice) return StartNextRound(c, why, 0);
      // A minority neither counts the loss nor ends the job when none is left: the
      // majority, if any, does; this side waits for one (OnTick).
      if (IsMinority(c)) return StartNextRound(c, why, 0);
      WorkerFailure failure;
      failure.host = name;
      failure.message = why;
      RestartAfterFailure(c, why, failure, 0, EndReason::kNodesLost);
      return;
    }
    case RendezvousPhase::kFinishing:
    case RendezvousPhase::kClosed:
      break;
  }
  if (c.s.phase == RendezvousPhase::kFinishing && member) {
    bool all = std::all_of(c.s.members.begin(), c.s.members.end(),
                           [&](NodeId id) { return c.s.nodes.at(id).succeeded; });
    if (all) Close(c, RendezvousActionKind::kDone, EndReason::kDone, "every node finished", nullptr);
  }
}

void OnJoin(Ctx& c, const EvJoin& ev) {
  auto it = c.s.nodes.find(ev.node);
  if (it == c.s.nodes.end()) return;
  NodeRecord& rec = it->second;
  rec.last_heard = c.now;
  rec.standby = ev.standby;
  switch (c.s.phase) {
    case RendezvousPhase::kJoining:
      rec.member_of = ev.member_of;
      MarkJoined(c, rec, ev.local_world_size);
      MaybeComplete(c);
      return;
    case RendezvousPhase::kRunning: {
      rec.local_world_size = ev.local_world_size;
      rec.member_of = ev.member_of;
      bool member = IsMember(c.s, ev.node);
      if (!member && std::find(c.s.wait_list.begin(), c.s.wait_list.end(), ev.node) ==
                         c.s.wait_list.end())
        c.s.wait_list.push_back(ev.node);
      // Growth only when the round can get bigger (a multiple of node_multiple, within max)
      // with nodes that may train: a drained spare whose verdict clears joins again.
      size_t may_train = static_cast<size_t>(std::count_if(
          c.s.wait_list.begin(), c.s.wait_list.end(), [&](NodeId id) { return c.s.nodes.at(id).standby.empty(); }));
      if (!member && RoundSize(c.settings, c.s.members.size() + may_train) <= c.s.members.size()) {
        EmitStandBy(c, ev.node, /*voter=*/false);
        return;
      }
      // Growth (a new node while below max) or a member starting over: not a failure.
      std::string reason = member ? fmt::format("node {} rejoined", rec.desc.name)
                                  : fmt::format("node {} joined; growing the job", rec.desc.name);
      if (member) {
        EraseFrom(&c.s.members, ev.node);
        c.s.wait_list.push_back(ev.node);
      }
      StartNextRound(c, reason, 0);
      return;
    }
    case RendezvousPhase::kFinishing:
      rec.local_world_size = ev.local_world_size;
      rec.member_of = ev.member_of;
      if (!IsMember(c.s, ev.node)) c.s.wait_list.push_back(ev.node);
      return;
    case RendezvousPhase::kClosed:
      c.Emit(RendezvousActionKind::kFatal, ev.node, "the job is already over");
      c.out.back().end_reason = EndReason::kError;
      return;
  }
}

// Why a job with restarts left cannot restart: `finished` names the nodes whose
// workers are done (they never rejoin).
std::string NoRestart(const std::vector<std::string>& finished) {
  std::string names;
  for (const std::string& name : finished) names += (names.empty() ? "" : ", ") + name;
  return fmt::format("node{} {} had finished (its workers all exited 0); a restart would need "
                     "{} workers again", finished.size() == 1 ? "" : "s", names,
                     finished.size() == 1 ? "its" : "their");
}

void OnWorkerFailed(Ctx& c, const EvWorkerFailed& ev) {
  if (ev.round != c.s.round || !IsMember(c.s, ev.node)) return;  // stale: already restarting
  c.s.last_failure = ev.failure;
  std::string why = fmt::format("worker {} (local rank {}) on {} failed", ev.failure.global_rank,
                                ev.failure.local_rank, c.Name(ev.node));
  if (c.s.phase == RendezvousPhase::kFinishing) {
    std::vector<std::string> finished;
    for (NodeId id : c.s.members)
      if (c.s.nodes.at(id).succeeded) finished.push_back(c.Name(id));
    Close(c, RendezvousActionKind::kJobFailed, EndReason::kWorkerFailed,
          fmt::format("{} after {}", why, NoRestart(finished)), &ev.failure);
    return;
  }
  if (c.s.phase != RendezvousPhase::kRunning) return;
  RestartAfterFailure(c, why, ev.failure, ev.node, EndReason::kWorkerFailed);
}

// A member's workers all succeeded in the round just stopped, and the news crossed the
// stop (late_success.h): they never rejoin, so the round being formed never would. The
// job ends as if the success had come first: the stop was no restart (not counted).
void EndCrossedStop(Ctx& c, NodeId finished) {
  c.s.restarts_used = c.s.restarts_before_stop;
  std::string why = fmt::format("{} as {}", c.s.stop_reason, NoRestart({c.Name(finished)}));
  if (c.s.stop_cause == EndReason::kWorkerFailed) {
    WorkerFailure failure = c.s.last_failure;
    Close(c, RendezvousActionKind::kJobFailed, EndReason::kWorkerFailed, why, &failure);
    return;
  }
  EndReason reason = c.s.stop_cause == EndReason::kUnknown ? EndReason::kError : c.s.stop_cause;
  Close(c, RendezvousActionKind::kFatal, reason, why, nullptr);
}

void OnSucceeded(Ctx& c, const EvSucceeded& ev) {
  SuccessFacts facts{c.s.phase, c.s.round, ev.round, IsMember(c.s, ev.node),
                     c.s.pending_rejoin.count(ev.node) > 0};
  switch (JudgeSuccess(facts)) {
    case SuccessVerdict::kIgnore:
      return;
    case SuccessVerdict::kEndsTheJob:
      return EndCrossedStop(c, ev.node);
    case SuccessVerdict::kFinished:
      break;
  }
  NodeRecord& rec = c.s.nodes.at(ev.node);
  rec.succeeded = true;
  c.s.phase = RendezvousPhase::kFinishing;
  bool all = std::all_of(c.s.members.begin(), c.s.members.end(),
                         [&](NodeId id) { return c.s.nodes.at(id).succeeded; });
  if (all) {
    Close(c, RendezvousActionKind::kDone, EndReason::kDone, "every node finished", nullptr);
    return;
  }
  // A remote node's workers are done: acknowledge so it can exit.
  if (!rec.desc.local) c.Emit(RendezvousActionKind::kDone, ev.node, "success acknowledged");
}

void OnTick(Ctx& c) {
  std::vector<NodeId> silent;
  for (const auto& [id, rec] : c.s.nodes)
    if (!rec.desc.local && c.now - rec.last_heard >= Millis(c.settings.heartbeat_timeout_ms))
      silent.push_back(id);
  for (NodeId id : silent) {
    c.Emit(RendezvousActionKind::kDisconnect, id, "no heartbeat");
    OnLeave(c, EvLeave{id, fmt::format("no heartbeat for {} s",
                                       c.settings.heartbeat_timeout_ms / 1000.0)});
  }
  if (c.s.phase != RendezvousPhase::kJoining) return;
  // Whether or not MIN nodes joined: without a majority this is no reason of its own to
  // end the job (too_few_nodes may requeue it while the majority trains).
  if (c.now >= c.s.join_deadline && !QuorumMet(c.s)) {
    Close(c, RendezvousActionKind::kFatal, EndReason::kNoMajority,
          fmt::format("no strict majority of round {}'s {} node(s) came back within join_timeout "
                      "({} s): {} of the {} needed; the others may go on without this group, so it "
                      "stops (no split brain)", c.s.quorum_round, c.s.quorum_size,
                      c.settings.join_timeout_ms / 1000.0, QuorumRejoined(c.s),
                      MajorityOf(c.s.quorum_size)),
          nullptr);
    return;
  }
  if (c.now >= c.s.join_deadline && c.s.num_joined < SmallestRound(c.settings)) {
    // No round ever formed: MIN asks for nodes that were never started (a
    // running Slurm step never gains nodes). That is the configuration, not a
    // lost node: requeueing would fail the same way (kBadInput: exit 2).
    bool never_formed = c.s.quorum_round < 0;
    Close(c, RendezvousActionKind::kFatal,
          never_formed ? EndReason::kBadInput : EndReason::kTooFewNodes,
          fmt::format("rendezvous timed out after {} s: {}{}", c.settings.join_timeout_ms / 1000.0,
                      DescribeWaiting(c.settings, c.s),
                      never_formed ? fmt::format("; round 0 never formed: start at least {} node(s) "
                                                 "(--nnodes MIN) or lower MIN",
                                                 SmallestRound(c.settings))
                                   : ""),
          nullptr);
    return;
  }
  MaybeComplete(c);
}

}  // namespace

size_t SmallestRound(const RendezvousSettings& st) {
  size_t k = static_cast<size_t>(std::max(st.node_multiple, 1));
  return (static_cast<size_t>(std::max(st.min_nodes, 1)) + k - 1) / k * k;
}

size_t LargestRound(const RendezvousSettings& st) {
  size_t k = static_cast<size_t>(std::max(st.node_multiple, 1));
  return static_cast<size_t>(std::max(st.max_nodes, 0)) / k * k;
}

size_t RoundSize(const RendezvousSettings& st, size_t joined) {
  size_t k = static_cast<size_t>(std::max(st.node_multiple, 1));
  size_t size = std::min(joined, LargestRound(st)) / k * k;
  return size >= SmallestRound(st) ? size : 0;
}

RendezvousState InitialState(const RendezvousSettings& settings, TimePoint now) {
  RendezvousState s;
  s.join_deadline = now + Millis(settings.join_timeout_ms);
  return s;
}

RendezvousState TakeoverState(const RendezvousSettings& settings, TimePoint now,
                              const CarriedRound& carried) {
  RendezvousState s = InitialState(settings, now);
  s.round = carried.next_round;
  s.any_round_completed = true;  // no expected_nodes: the survivors' rules
  s.restarts_used = carried.restarts_used;
  s.quorum_round = static_cast<int64_t>(carried.last_round);
  s.quorum_size = carried.last_members;
  s.quorum_awaited = carried.awaited;
  s.quorum_names = carried.known_members;
  return s;
}

bool VotesFor(const RendezvousState& s, NodeId id, const NodeRecord& rec) {
  if (s.quorum.count(id)) return true;
  if (s.quorum_round < 0) return false;
  if (rec.member_of == s.quorum_round) return true;
  return rec.member_of >= 0 && rec.member_of < s.quorum_round && s.quorum_names.count(rec.desc.name) > 0;
}

size_t QuorumRejoined(const RendezvousState& s) {
  size_t n = 0;
  for (const auto& [id, rec] : s.nodes)
    if (rec.joined && VotesFor(s, id, rec)) ++n;
  return n;
}

RendezvousTransition StepRendezvous(const RendezvousSettings& settings, RendezvousState state,
                                    const RendezvousEvent& event, TimePoint now) {
  RendezvousTransition t{std::move(state), {}};
  Ctx c{settings, now, t.state, t.actions};
  std::visit(
      [&](const auto& ev) {
        using T = std::decay_t<decltype(ev)>;
        if constexpr (std::is_same_v<T, EvConnect>) {
          NodeRecord rec;
          rec.desc = ev.desc;
          rec.seq = c.s.next_seq++;
          rec.last_heard = now;
          c.s.nodes[ev.desc.id] = std::move(rec);
        } else if constexpr (std::is_same_v<T, EvHeartbeat>) {
          auto it = c.s.nodes.find(ev.node);
          if (it != c.s.nodes.end()) it->second.last_heard = now;
        } else if constexpr (std::is_same_v<T, EvJoin>) {
          OnJoin(c, ev);
        } else if constexpr (std::is_same_v<T, EvLeave>) {
          OnLeave(c, ev);
        } else if constexpr (std::is_same_v<T, EvWorkerFailed>) {
          OnWorkerFailed(c, ev);
        } else if constexpr (std::is_same_v<T, EvSucceeded>) {
          OnSucceeded(c, ev);
        } else if constexpr (std::is_same_v<T, EvHostFailure>) {
          if (c.s.phase != RendezvousPhase::kClosed)
            Close(c, RendezvousActionKind::kFatal, EndReason::kError, ev.message, nullptr);
        } else if constexpr (std::is_same_v<T, EvEndJob>) {
          // A node that saw no failure of its own names the last one the host counted.
          const WorkerFailure& f = ev.failure.global_rank >= 0 ? ev.failure : c.s.last_failure;
          if (c.s.phase != RendezvousPhase::kClosed && c.s.nodes.count(ev.node))
            Close(c, RendezvousActionKind::kJobFailed, ev.reason, ev.message, &f);
        } else {
          OnTick(c);
        }
      },
      event);
  return t;
}

std::optional<TimePoint> NextDeadline(const RendezvousState& s) {
  if (s.phase != RendezvousPhase::kJoining) return std::nullopt;
  if (s.last_call_deadline) return std::min(*s.last_call_deadline, s.join_deadline);
  return s.join_deadline;
}

std::string DescribeWaiting(const RendezvousSettings& settings, const RendezvousState& s) {
  std::string text = fmt::format("round {}: {} node(s) joined (min {}, max {}", s.round,
                                 s.num_joined, settings.min_nodes, settings.max_nodes);
  if (settings.expected_nodes > 0) text += fmt::format(", expected {}", settings.expected_nodes);
  text += ")";
  std::vector<std::string> missing;
  for (NodeId id : s.pending_rejoin) missing.push_back(s.nodes.at(id).desc.name);
  if (!s.any_round_completed && settings.expected_nodes > 0) {
    std::set<int> seen;
    for (const auto& [id, rec] : s.nodes)
      if (rec.joined) seen.insert(rec.desc.preferred_rank);
    for (int r = 0; r < settings.expected_nodes && missing.size() < 16; ++r)
      if (!seen.count(r)) missing.push_back(fmt::format("node rank {}", r));
    if (seen.count(-1)) missing.clear();  // join-order ranks: only the count is known
  }
  if (!missing.empty()) {
    text += "; missing: ";
    for (size_t i = 0; i < missing.size() && i < 16; ++i) text += (i ? ", " : "") + missing[i];
    if (missing.size() > 16) text += ", ...";
  } else if (settings.expected_nodes > 0 && s.num_joined < static_cast<size_t>(settings.expected_nodes)) {
    text += fmt::format("; waiting for {} more", settings.expected_nodes - s.num_joined);
  }
  if (s.quorum_round >= 0 && !HasMajority(QuorumRejoined(s), s.quorum_size))
    text += fmt::format("; {} of round {}'s {} node(s) back, a majority ({}) is needed",
                        QuorumRejoined(s), s.quorum_round, s.quorum_size, MajorityOf(s.quorum_size));
  if (s.last_call_deadline) text += "; last call for more nodes";
  return text;
}

const char* PhaseName(RendezvousPhase phase) {
  switch (phase) {
    case RendezvousPhase::kJoining: return "joining";
    case RendezvousPhase::kRunning: return "running";
    case RendezvousPhase::kFinishing: return "finishing";
    case RendezvousPhase::kClosed: return "closed";
  }
  return "?";
}

}  // namespace elastic
