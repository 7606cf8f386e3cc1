#include "rendezvous/failover_rendezvous.h"

#include <unistd.h>

#include <fmt/format.h>

#include "common/log.h"
#include "common/net.h"
#include "rendezvous/failover_rules.h"
#include "rendezvous/regime_record.h"

namespace elastic {

FailoverRendezvous::FailoverRendezvous(EventLoop& loop, FailoverParams params,
                                       std::unique_ptr<RendezvousHost> host)
    : loop_(loop), params_(std::move(params)), posted_(loop) {
  UseHost(std::move(host));
}

FailoverRendezvous::FailoverRendezvous(EventLoop& loop, FailoverParams params, std::string host,
                                       int port, std::optional<SocketAddress> address)
    : loop_(loop), params_(std::move(params)), posted_(loop) {
  UseClient(std::move(host), port, std::nullopt, address);
}

FailoverRendezvous::FailoverRendezvous(EventLoop& loop, FailoverParams params,
                                       const RoundInfo& regime, const std::string& why)
    : loop_(loop), params_(std::move(params)), posted_(loop) {
  last_round_ = regime;
  last_round_->group_rank = -1;  // never takes over from a record: it ran no round of it
  restarts_ = RestartsKnown{regime.restarts_used, -1, false};
  rejoining_ = true;
  failing_over_ = true;
  failover_deadline_ = loop_.Now() + Millis(params_.settings.join_timeout_ms);
  Log(LogLevel::kWarning, "rendezvous: run {} {}: joining it as a latecomer instead of starting "
      "a fresh one", params_.run_id, why);
  posted_.Post([this] { TryNext(); });
}

FailoverRendezvous::~FailoverRendezvous() = default;

std::string FailoverRendezvous::Describe() const {
  return inner_ ? inner_->Describe() + "; fails over to the next node if the host is lost"
                : fmt::format("c10d rendezvous of run {}, failing over", params_.run_id);
}

// ---- the agent's calls ----

void FailoverRendezvous::Join(int local_world_size) {
  running_ = false;
  watching_ = false;
  join_ = local_world_size;
  if (inner_) inner_->Join(local_world_size);
}

void FailoverRendezvous::SetStandBy(std::string reason) {
  standby_ = std::move(reason);
  if (inner_) inner_->SetStandBy(standby_);
  if (probe_) probe_->SetStandBy(standby_);
}

// An observer that loses its host walks the successors of the last round its
// workers ran, as every member does; one that never ran a round knows none and
// ends with the host lost (OnHostLost), as a latecomer does.
void FailoverRendezvous::Watch() {
  running_ = false;
  watching_ = true;
  join_.reset();
  if (inner_) inner_->Watch();
}

void FailoverRendezvous::ReportWorkerFailure(const WorkerFailure& failure) {
  running_ = false;
  restarts_.reported_failure = true;
  if (inner_) inner_->ReportWorkerFailure(failure);
}

void FailoverRendezvous::EndJob(EndReason reason, const WorkerFailure& failure, const std::string& message) {
  if (inner_) inner_->EndJob(reason, failure, message);
}

void FailoverRendezvous::ReportSucceeded() {
  if (inner_) inner_->ReportSucceeded();
}

void FailoverRendezvous::Shutdown(int signal) {
  shut_down_ = true;
  callbacks_ = {};
  if (inner_) inner_->Shutdown(signal);
}

// ---- the inner rendezvous ----

RendezvousHandler::Callbacks FailoverRendezvous::InnerCallbacks() {
  Callbacks cb;
  cb.on_round = [this](const RoundInfo& info) { OnRound(info); };
  cb.on_restart_required = [this](const std::string& reason, RestartCause cause) {
    running_ = false;
    if (callbacks_.on_restart_required) callbacks_.on_restart_required(reason, cause);
  };
  // The job ended for all: no regime is left to rejoin (the records would only pile up).
  cb.on_job_failed = [this](const WorkerFailure& f, const JobEnd& end) {
    ForgetRegime();
    if (callbacks_.on_job_failed) callbacks_.on_job_failed(f, end);
  };
  cb.on_done = [this] {
    ForgetRegime();
    if (callbacks_.on_done) callbacks_.on_done();
  };
  cb.on_fatal = [this](const JobEnd& end, const std::string& message) { Fatal(message, end); };
  return cb;
}

void FailoverRendezvous::UseHost(std::unique_ptr<RendezvousHost> host) {
  host_ = host.get();
  client_ = nullptr;
  host_text_ = fmt::format("this node (port {})", host->port());
  host->SetCallbacks(InnerCallbacks());
  inner_ = std::move(host);
  inner_->SetStandBy(standby_);
  if (join_) inner_->Join(*join_);
  if (watching_) inner_->Watch();
  if (!probe_timer_.armed())
    probe_timer_ = loop_.Every(Millis(params_.settings.heartbeat_timeout_ms),
                               [this] { OnProbeTimer(); });
}

void FailoverRendezvous::ForgetRegime() {
  if (!params_.regime_path.empty()) unlink(params_.regime_path.c_str());
}

// ---- a stuck host looks for a newer one ----

void FailoverRendezvous::OnProbeTimer() {
  if (shut_down_ || !host_) return probe_timer_.Cancel();
  const RendezvousState& s = host_->state();
  bool stuck = s.phase == RendezvousPhase::kJoining && s.quorum_round >= 0 &&
               !HasMajority(QuorumRejoined(s), s.quorum_size);
  if (stuck && join_ && !probe_ && last_round_) Probe();
}

void FailoverRendezvous::Probe() {
  const RoundInfo& r = *last_round_;
  for (size_t tries = 0; tries < r.successors.size(); ++tries) {
    int rank = next_probe_++ % static_cast<int>(r.successors.size());
    const Successor& s = r.successors[static_cast<size_t>(rank)];
    if (rank == r.group_rank || s.port == 0) continue;
    probe_text_ = fmt::format("{}:{}", s.addr, s.port);
    probe_ = MakeClient(s.addr, s.port, rank, /*probe=*/true);
    probe_->SetStandBy(standby_);
    probe_->Join(*join_);  // connects; the join is sent only once it is welcomed
    return;
  }
}

// The probe found a host past our last completed round and was welcomed: this
// agent stops hosting (its clients see the connection close and fail over in
// turn) and goes on as that host's client, a latecomer.
void FailoverRendezvous::Yield() {
  Log(LogLevel::kWarning, "rendezvous: {} hosts a later round of run {}: this node stops hosting "
      "(no majority came back) and joins it", probe_text_, params_.run_id);
  Retire();
  host_text_ = probe_text_;
  host_rank_ = -1;
  client_ = probe_.get();
  probe_->SetCallbacks(InnerCallbacks());
  inner_ = std::move(probe_);
}

void FailoverRendezvous::UseClient(std::string host, int port, std::optional<int> candidate_rank,
                                   std::optional<SocketAddress> address) {
  auto client = MakeClient(host, port, candidate_rank, /*probe=*/false, address);
  host_text_ = fmt::format("{}:{}", host, port);
  host_rank_ = candidate_rank.value_or(-1);
  client_ = client.get();
  host_ = nullptr;
  inner_ = std::move(client);
  inner_->SetStandBy(standby_);
  if (join_) inner_->Join(*join_);
  if (watching_) inner_->Watch();
}

std::unique_ptr<RendezvousClient> FailoverRendezvous::MakeClient(
    const std::string& host, int port, std::optional<int> candidate_rank, bool probe,
    std::optional<SocketAddress> address) {
  ClientConfig config;
  config.settings = params_.settings;
  config.run_id = params_.run_id;
  config.node_name = params_.node_name;
  config.host = host;
  config.port = port;
  config.address = address;  // unset on the loop: successors are numeric addresses
  config.listen_port = [this](const std::string& local_addr) { return ListenPort(local_addr); };
  config.on_host_lost = [this](const std::string& why) { OnHostLost(why); };
  config.on_welcomed = [this] { OnWelcomed(); };
  if (last_round_ && !rejoining_) config.last_round_run = last_round_->round;
  if (last_round_) config.regime = last_round_->regime;
  // Fencing for an agent that ran no round: only a host that completed the recorded
  // round or a later one (a fresh host has completed none).
  if (last_round_ && rejoining_) config.only_ahead_of = static_cast<int64_t>(last_round_->round) - 1;
  if (candidate_rank) {
    int rank = *candidate_rank;
    config.on_unreachable = [this, rank](const std::string& why) { OnUnreachable(rank, why); };
    config.candidate_timeout_ms =
        params_.settings.heartbeat_timeout_ms + params_.settings.heartbeat_interval_ms;
  }
  if (probe) {
    config.on_unreachable = [this](const std::string& why) {
      Log(LogLevel::kDebug, "rendezvous: {} is no newer host: {}", probe_text_, why);
      posted_.Post([this] { probe_.reset(); });
    };
    config.candidate_timeout_ms = params_.settings.heartbeat_interval_ms;
    // Ranks compare only within the round both hosts took over from (the probed ones).
    int64_t quorum = host_->state().quorum_round;
    bool same_round = last_round_ && static_cast<int64_t>(last_round_->round) == quorum;
    config.only_ahead_of = ProbeYieldsAfter(quorum, candidate_rank.value_or(-1),
                                            same_round ? last_round_->group_rank : -1);
    config.on_welcomed = [this] { Yield(); };
  }
  auto client = std::make_unique<RendezvousClient>(loop_, std::move(config));
  if (!probe) {
    client->SetCallbacks(InnerCallbacks());
    return client;
  }
  // Until it is welcomed, a probe's end is only the end of that probe.
  Callbacks cb;
  cb.on_fatal = [this](const JobEnd&, const std::string& why) {
    Log(LogLevel::kDebug, "rendezvous: probe of {} ended: {}", probe_text_, why);
    posted_.Post([this] { probe_.reset(); });
  };
  client->SetCallbacks(cb);
  return client;
}

void FailoverRendezvous::OnRound(const RoundInfo& info) {
  last_round_ = info;
  rejoining_ = false;
  std::string err;
  if (!params_.regime_path.empty() && !WriteRegimeRecord(params_.regime_path, info, &err))
    Log(LogLevel::kWarning, "rendezvous: {}: a restarted agent of this node may not find the "
        "run's regime", err);
  restarts_ = RestartsKnown{info.restarts_used, -1, false};
  running_ = true;
  join_.reset();
  failing_over_ = false;
  fruitless_walks_ = 0;
  host_lost_at_.reset();
  excluded_.clear();
  if (client_) auth_ = client_->auth_method();
  // Which of this round's successors is the host we talk to (by its address and port).
  host_rank_ = host_ ? info.group_rank : -1;
  for (size_t i = 0; i < info.successors.size() && client_; ++i)
    if (fmt::format("{}:{}", info.successors[i].addr, info.successors[i].port) == host_text_)
      host_rank_ = static_cast<int>(i);
  if (callbacks_.on_round) callbacks_.on_round(info);
}

// Bound when this agent first connects, on the address its host reached it by:
// from then on every successor's port accepts connections (into the backlog
// until a takeover), so a refused connection means that agent is gone.
int FailoverRendezvous::ListenPort(const std::string& local_addr) {
  if (listener_) return LocalPort(listener_.get());
  // The host needs none (it listens already), but a host's probe does: should it yield
  // and join that host, it must be able to take over later (a port of 0 never can).
  if ((host_ && !probe_) || cannot_listen_) return 0;
  SocketAddress addr;
  std::string err;
  int bind_errno = 0;
  // The endpoint's port where it is free on this address (a known port: host_discovery.h),
  // else any.
  if (params_.preferred_listen_port != 0 &&
      ResolveNumericAddress(local_addr, params_.preferred_listen_port, &addr, nullptr))
    listener_ = ListenOn(addr, &bind_errno, nullptr);
  if (!listener_ && ResolveNumericAddress(local_addr, 0, &addr, &err))
    listener_ = ListenOn(addr, &bind_errno, &err);
  if (!listener_) {
    Log(LogLevel::kWarning, "rendezvous: cannot listen on {} for a takeover ({}): this node will "
        "not become the host if the host is lost", local_addr, err);
    cannot_listen_ = true;
    return 0;
  }
  listen_addr_ = local_addr;
  return LocalPort(listener_.get());
}

// ---- failover ----

void FailoverRendezvous::OnHostLost(const std::string& why) {
  std::string lost = fmt::format("lost the rendezvous host {}: {}", host_text_, why);
  if (client_) FollowAsSpare(client_->standby());
  if (client_) restarts_.told = std::max(restarts_.told, client_->restarts_used());
  Retire();
  // The successors are the round's first few nodes (RendezvousSettings::failover_successors):
  // a node of a higher rank walks them too, it only never takes over itself.
  if (!last_round_ || last_round_->successors.empty() ||
      last_round_->group_rank >= last_round_->group_world_size)
    return Fatal(lost + " (before this node ran a round: no successor known)",
                 JobEnd{EndReason::kHostLost, false});
  const RoundInfo& r = *last_round_;
  int used = RestartsBeforeLoss(restarts_);
  int budget = RunRestartBudget(r.max_restarts, params_.settings.max_restarts);
  if (used >= budget) {
    WorkerFailure failure;
    failure.host = host_text_;
    failure.host_lost = true;
    failure.message = fmt::format("{}; restarts exhausted ({} of --max-restarts={} used)", lost,
                                  used, budget);
    // No host is left to speak for the job: the survivor that would have taken over does.
    if (host_rank_ >= 0 && host_rank_ != r.group_rank) excluded_.insert(host_rank_);
    bool first = NextCandidate(r.successors.size(), excluded_) == r.group_rank;
    if (callbacks_.on_job_failed)
      callbacks_.on_job_failed(failure, JobEnd{EndReason::kNodesLost, first, used});
    return;
  }
  if (host_rank_ >= 0 && host_rank_ != r.group_rank) excluded_.insert(host_rank_);
  if (!failing_over_) {
    failing_over_ = true;
    failover_deadline_ = loop_.Now() + Millis(params_.settings.join_timeout_ms);
    host_lost_at_ = loop_.Now();
  }
  Log(LogLevel::kWarning, "rendezvous: {}; failing over to the next node of round {}", lost,
      r.round);
  if (running_) {
    running_ = false;
    if (callbacks_.on_restart_required) callbacks_.on_restart_required(lost + "; failing over", RestartCause::kMembership);
  }
  posted_.Post([this] { TryNext(); });
}

// A spare that stood by as a voter of a round later than any its workers ran walks
// that round's successors like its members (never taking over itself: group_rank
// -1) and joins the new host as a voter of it (member_of in its join).
void FailoverRendezvous::FollowAsSpare(const std::optional<RoundInfo>& standby) {
  if (!standby || standby->successors.empty()) return;
  if (last_round_ && last_round_->round >= standby->round) return;
  last_round_ = *standby;
  last_round_->group_rank = -1;
  restarts_ = RestartsKnown{standby->restarts_used, -1, false};
  host_rank_ = -1;
  for (size_t i = 0; i < standby->successors.size(); ++i)
    if (fmt::format("{}:{}", standby->successors[i].addr, standby->successors[i].port) == host_text_)
      host_rank_ = static_cast<int>(i);
}

void FailoverRendezvous::OnUnreachable(int rank, const std::string& why) {
  const Successor& s = last_round_->successors.at(static_cast<size_t>(rank));
  Log(LogLevel::kInfo, "rendezvous: successor {} ({}:{}) is not the host: {}", s.name, s.addr,
      s.port, why);
  Retire();
  excluded_.insert(rank);
  if (loop_.Now() >= failover_deadline_) return WalkTimedOut("");
  posted_.Post([this] { TryNext(); });
}

void FailoverRendezvous::TryNext() {
  if (shut_down_ || inner_) return;
  const RoundInfo& r = *last_round_;
  std::optional<int> rank = NextCandidate(r.successors.size(), excluded_);
  if (!rank) return WalkAgain();
  const Successor& s = r.successors[static_cast<size_t>(*rank)];
  // A member without a port (it could not listen) is skipped by every node, itself too.
  if (*rank == r.group_rank && (s.port != 0 || listener_)) return TakeOver();
  if (s.port == 0 || *rank == r.group_rank) {
    excluded_.insert(*rank);
    return TryNext();
  }
  Log(LogLevel::kInfo, "rendezvous: trying successor {} ({}:{}) as the host", s.name, s.addr,
      s.port);
  UseClient(s.addr, s.port, *rank);
}

// Every successor refused, was silent or stale, and this agent does not take over itself:
// the ones that could host may be cut off or restarting, so it walks them all again after
// a pause, until join_timeout (PauseAfterAFruitlessWalk).
void FailoverRendezvous::WalkAgain() {
  const RoundInfo& r = *last_round_;
  auto left = std::chrono::duration_cast<Millis>(failover_deadline_ - loop_.Now()).count();
  std::optional<int64_t> pause =
      PauseAfterAFruitlessWalk(++fruitless_walks_, left, params_.settings.heartbeat_interval_ms,
                               params_.settings.heartbeat_timeout_ms);
  if (!pause) return WalkTimedOut(fmt::format("; walked {} time(s)", fruitless_walks_));
  Log(fruitless_walks_ == 1 ? LogLevel::kWarning : LogLevel::kInfo,
      "rendezvous: no successor of round {} answers as the host (walk {}); walking them again "
      "in {} s, until join_timeout ({} s left)", r.round, fruitless_walks_, *pause / 1000.0,
      left / 1000.0);
  excluded_.clear();
  walk_timer_ = loop_.After(Millis(*pause), [this] { TryNext(); });
}

void FailoverRendezvous::WalkTimedOut(const std::string& detail) {
  Fatal(fmt::format("no successor of round {} became the rendezvous host within join_timeout "
                    "({} s{})", last_round_->round, params_.settings.join_timeout_ms / 1000.0,
                    detail),
        JobEnd{EndReason::kHostLost, false});
}

// A host welcomed this agent: the walk found one. Should that host be lost in turn, the
// walk starts over with a join_timeout of its own.
void FailoverRendezvous::OnWelcomed() {
  fruitless_walks_ = 0;
  failing_over_ = false;
}

void FailoverRendezvous::TakeOver() {
  const RoundInfo& r = *last_round_;
  const Successor& me = r.successors[static_cast<size_t>(r.group_rank)];
  if (!listener_)
    return Fatal("the rendezvous host is lost and this node cannot take over: it has no "
                 "rendezvous socket of its own", JobEnd{EndReason::kHostLost, false});
  HostConfig config;
  config.settings = params_.settings;
  // The run's budget goes on with the run (a joined node hosts the run's, not its own).
  config.settings.max_restarts = RunRestartBudget(r.max_restarts, params_.settings.max_restarts);
  config.run_id = params_.run_id;
  config.node_name = params_.node_name;
  config.store_addr = me.addr;
  config.rdzv_addr = me.addr;
  config.bind_addr = listen_addr_;
  config.auth = auth_;
  config.observer = params_.observer;
  CarriedRound carried;
  carried.next_round = r.round + 1;
  carried.restarts_used = CarriedRestarts(restarts_);
  carried.last_round = r.round;
  // The round's spares vote too and follow the failover (FollowAsSpare): awaited as members are.
  // Counted over the whole round (group_world_size): the successors are only its first nodes.
  size_t members = static_cast<size_t>(r.group_world_size);
  carried.last_members = members + static_cast<size_t>(r.spares);
  carried.awaited = members - excluded_.size() + static_cast<size_t>(r.spares);
  carried.host_lost_at = host_lost_at_;
  for (const Successor& member : r.successors) carried.known_members.insert(member.name);
  config.carried = carried;
  config.local_member_of = static_cast<int64_t>(r.round);
  config.regime = r.regime;
  std::string err;
  auto host = RendezvousHost::Create(loop_, std::move(config), std::move(listener_), &err);
  if (!host) return Fatal("cannot take over as the rendezvous host: " + err, JobEnd{EndReason::kError, false});
  Log(LogLevel::kWarning, "rendezvous: taking over as the host of run {} on {}:{}: round {} forms "
      "among round {}'s survivors (a majority of its {} node(s) is needed)", params_.run_id,
      me.addr, host->port(), carried.next_round, r.round, members);
  UseHost(std::move(host));
}

// The inner rendezvous calls us from its own callbacks: destroy it from the loop.
void FailoverRendezvous::Retire() {
  if (!inner_) return;
  inner_->SetCallbacks({});
  retired_.push_back(std::move(inner_));
  client_ = nullptr;
  host_ = nullptr;
  posted_.Post([this] { retired_.clear(); });
}

void FailoverRendezvous::Fatal(const std::string& message, const JobEnd& end) {
  if (callbacks_.on_fatal) callbacks_.on_fatal(end, message);
}

}  // namespace elastic
