#include "rendezvous/rendezvous_host.h"

#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/log.h"
#include "common/log_escape.h"
#include "common/net.h"
#include "rendezvous/store_peers.h"

namespace elastic {

RendezvousHost::RendezvousHost(EventLoop& loop, HostConfig config, UniqueFd listener)
    : loop_(loop), config_(std::move(config)), listener_(std::move(listener)), posted_(loop) {
  state_ = config_.carried ? TakeoverState(config_.settings, loop_.Now(), *config_.carried)
                           : InitialState(config_.settings, loop_.Now());
  local_member_of_ = config_.local_member_of;
  if (config_.regime.empty()) config_.regime = MakeNonce();
  if (!config_.socket_owners) config_.socket_owners = std::make_shared<KernelSocketOwners>();
  job_uid_ = geteuid();
}

RendezvousHost::~RendezvousHost() {
  if (listener_) loop_.Remove(listener_.get());
}

std::unique_ptr<RendezvousHost> RendezvousHost::Create(EventLoop& loop, HostConfig config,
                                                       UniqueFd listener, std::string* err) {
  std::unique_ptr<RendezvousHost> host(new RendezvousHost(loop, std::move(config), std::move(listener)));
  if (!host->Start(err)) return nullptr;
  return host;
}

bool RendezvousHost::Start(std::string* err) {
  if (config_.bind_addr != "0.0.0.0" && config_.bind_addr != "::")
    local_addrs_.insert(config_.bind_addr);
  if (!loop_.Add(listener_.get(), EPOLLIN, [this](uint32_t) { OnAccept(); }, err)) return false;
  heartbeat_timer_ = loop_.Every(Millis(config_.settings.heartbeat_interval_ms),
                                 [this] { OnHeartbeatTick(); });
  ScheduleDeadline();
  if (config_.observer)
    config_.observer->OnHostStart(config_.settings, config_.run_id, config_.node_name,
                                  config_.carried ? &*config_.carried : nullptr, loop_.Now());
  return true;
}

int RendezvousHost::port() const { return LocalPort(listener_.get()); }

std::string RendezvousHost::Describe() const {
  return fmt::format("c10d host on port {} (auth {}), run {}, store on {} (a new port each round)",
                     port(), AuthMethodName(config_.auth), config_.run_id, config_.store_addr);
}

TrafficCounters RendezvousHost::Traffic() const {
  TrafficCounters t = closed_traffic_;
  for (const auto& [id, peer] : peers_) {
    const auto& c = peer.conn->counters();
    t.bytes_in += c.bytes_in;
    t.bytes_out += c.bytes_out;
    t.messages_in += c.messages_in;
    t.messages_out += c.messages_out;
  }
  return t;
}

// ---- the local agent ----

void RendezvousHost::Join(int local_world_size) {
  ConnectLocal();
  Feed(EvJoin{kLocalNode, local_world_size, local_member_of_, local_standby_});
}

void RendezvousHost::Watch() { ConnectLocal(); }

void RendezvousHost::ConnectLocal() {
  if (local_connected_) return;
  local_connected_ = true;
  NodeDesc desc{kLocalNode, config_.node_name, config_.bind_addr,
                config_.settings.preferred_rank, /*local=*/true,
                config_.rdzv_addr.empty() ? config_.store_addr : config_.rdzv_addr, port(),
                config_.settings.guest};
  Feed(EvConnect{desc});
}

void RendezvousHost::ReportWorkerFailure(const WorkerFailure& failure) {
  Feed(EvWorkerFailed{kLocalNode, local_round_, failure});
}

void RendezvousHost::ReportSucceeded() { Feed(EvSucceeded{kLocalNode, local_round_}); }

void RendezvousHost::EndJob(EndReason reason, const WorkerFailure& failure, const std::string& message) {
  Feed(EvEndJob{kLocalNode, reason, failure, message});
}

void RendezvousHost::Shutdown(int /*signal*/) {
  if (shut_down_) return;
  shut_down_ = true;
  callbacks_ = {};
  // Like a client's leave: the others see the connection close and fail over
  // (failover_rendezvous.h); under scancel they are being stopped themselves.
  for (auto& [id, peer] : peers_)
    if (peer.authenticated) peer.conn->CloseAfterFlush();
}

// ---- peers ----

void RendezvousHost::OnAccept() {
  while (true) {
    // Strangers may not pile up: at the cap, the rest wait unaccepted.
    if (unauthenticated_ >= config_.settings.max_unauthenticated) return PauseAccepting();
    UniqueFd fd = AcceptConnection(listener_.get());
    if (!fd) return;
    NodeId id = next_id_++;
    Peer peer;
    peer.addr = PeerAddress(fd.get());
    local_addrs_.insert(LocalAddress(fd.get()));  // our own workers may come from it
    // What the challenge says; the hello adds its fields and both proofs cover all.
    peer.handshake.host_nonce = MakeNonce();
    peer.handshake.auth = AuthMethodName(config_.auth);
    peer.handshake.round = state_.round;
    peer.handshake.last_completed = static_cast<int64_t>(state_.quorum_round);
    peer.handshake.regime = config_.regime;
    peer.handshake.run_id = config_.run_id;
    RendezvousConnection::Callbacks cb;
    cb.on_message = [this, id](const Message& m) { OnPeerMessage(id, m); };
    cb.on_close = [this, id](const std::string& reason) { OnPeerClosed(id, reason); };
    // Until the hello is verified a peer may send only small frames (auth_max_frame_bytes).
    peer.conn = std::make_unique<RendezvousConnection>(loop_, std::move(fd),
                                                       config_.settings.auth_max_frame_bytes, cb);
    std::string err;
    if (!peer.conn->Start(&err)) {
      Warn(refuse_log_, fmt::format("rendezvous: cannot watch connection from {}: {}", peer.addr, err));
      continue;
    }
    const Handshake& h = peer.handshake;
    peer.conn->Send("challenge", {{"version", kRendezvousProtocolVersion},
                                  {"run_id", h.run_id},
                                  {"nonce", h.host_nonce},
                                  {"auth", h.auth},
                                  {"round", h.round},
                                  {"last_completed", h.last_completed},
                                  {"regime", h.regime}});
    // Whoever does not authenticate in time is dropped: no fd is held by strangers.
    peer.auth_deadline = loop_.After(Millis(config_.settings.auth_timeout_ms),
                                     [this, id] { OnAuthDeadline(id); });
    peers_.emplace(id, std::move(peer));
    ++unauthenticated_;
  }
}

void RendezvousHost::OnAuthDeadline(NodeId id) {
  auto it = peers_.find(id);
  if (it == peers_.end() || it->second.authenticated) return;
  if (!it->second.refused) return Refuse(it->second, "no hello before auth_timeout");
  // Refused and still not gone (it does not read its error): drop it now.
  peers_.erase(it);
  LeftPreAuth();
  MaybeRunTerminal();
}

void RendezvousHost::PauseAccepting() {
  if (accept_paused_ || !listener_) return;
  accept_paused_ = true;
  loop_.Modify(listener_.get(), 0, nullptr);
  if (accept_pauses_++ % 1000 == 0)
    Log(LogLevel::kDebug, "rendezvous: {} unauthenticated connections (max_unauthenticated): "
        "accepting paused until one authenticates or goes ({} pauses so far)", unauthenticated_,
        accept_pauses_);
}

void RendezvousHost::LeftPreAuth() {
  --unauthenticated_;
  if (!accept_paused_ || !listener_ || unauthenticated_ >= config_.settings.max_unauthenticated)
    return;
  accept_paused_ = false;
  loop_.Modify(listener_.get(), EPOLLIN, nullptr);  // level-triggered: waiting agents fire it
}

void RendezvousHost::Refuse(Peer& peer, const std::string& why) {
  if (peer.refused) return;
  peer.refused = true;
  Warn(refuse_log_, fmt::format("rendezvous: refused connection from {}: {}", peer.addr, why));
  peer.conn->Send("error", {{"message", why}});
  peer.conn->CloseAfterFlush();
}

void RendezvousHost::OnHello(NodeId id, Peer& peer, const AgentMessage& msg) {
  if (msg.kind != AgentMessage::Kind::kHello) return Refuse(peer, "expected hello first");
  const HelloMsg& hello = msg.hello;
  if (hello.version != kRendezvousProtocolVersion)
    return Refuse(peer, fmt::format("protocol version {} is not {}", hello.version,
                                    kRendezvousProtocolVersion));
  if (hello.run_id != config_.run_id)
    return Refuse(peer, fmt::format("this host runs rendezvous '{}', not '{}' (--rdzv-id)",
                                    config_.run_id, hello.run_id));
  const RendezvousSettings& s = config_.settings;
  std::string err, proof;
  // The agent's proof covers the challenge as it read it and its whole hello
  // (protocol 4): a field rewritten on the way either way fails here.
  Handshake& h = peer.handshake;
  h.agent_nonce = hello.nonce;
  h.name = hello.name;
  h.pid = hello.pid;
  h.preferred_rank = hello.preferred_rank;
  h.listen_port = hello.listen_port;
  h.guest = hello.guest;
  h.observer = hello.observer;
  h.node_id = static_cast<int64_t>(id);
  // A status asker without the step's token proves its uid with munge (token mode only: a
  // munge host takes it as any peer, a host without authentication checks the socket's owner).
  AuthMethod method = config_.auth;
  if (hello.observer) {
    if (config_.auth != AuthMethod::kToken || !s.use_munge)
      return Refuse(peer, fmt::format("a munge-proven status request is for a host in token mode with "
                                      "munge; this host authenticates with {}{}", AuthMethodName(config_.auth),
                                      s.use_munge ? "" : " (munge=0)"));
    method = AuthMethod::kMunge;
  }
  if (!VerifyProof(method, s.token, s.munge_socket, AuthTranscript(AuthDirection::kAgentToHost, h),
                   hello.proof, &err))
    return Refuse(peer, fmt::format("authentication ({}) failed: {}", AuthMethodName(method), err));
  // Our own proof, over the same fields the other way: the agent checks it.
  std::string down = AuthTranscript(AuthDirection::kHostToAgent, h);
  if (!MakeProof(method, s.token, s.munge_socket, down, &proof, &err))
    return Refuse(peer, fmt::format("cannot prove this host ({}): {}", AuthMethodName(method), err));
  peer.authenticated = true;
  LeftPreAuth();
  peer.conn->SetMaxFrameBytes(s.max_frame_bytes);
  peer.conn->Send("welcome", {{"node_id", id}, {"proof", proof}});
  if (hello.observer) {  // never a node: no session keys (munge shares no secret), no record
    peer.status_only = true;
    Log(LogLevel::kDebug, "rendezvous: status asker {}:{} (munge, same user) from {}", hello.name, hello.pid,
        peer.addr);
    return;
  }
  if (config_.auth == AuthMethod::kToken) {  // every frame after the welcome is authenticated
    RendezvousConnection::FrameKeys keys;
    if (!SessionKey(s.token, AuthDirection::kHostToAgent, h, &keys.send, &err) ||
        !SessionKey(s.token, AuthDirection::kAgentToHost, h, &keys.receive, &err))
      return Refuse(peer, "cannot derive the session keys: " + err);
    peer.conn->AuthenticateFrames(std::move(keys));
  }
  NodeDesc desc{id, fmt::format("{}:{}", hello.name, hello.pid), peer.addr,
                hello.preferred_rank, false, peer.addr, hello.listen_port, hello.guest};
  Log(LogLevel::kDebug, "rendezvous: {} connected from {}", desc.name, peer.addr);
  Feed(EvConnect{desc});
}

void RendezvousHost::OnPeerMessage(NodeId id, const Message& raw) {
  auto it = peers_.find(id);
  if (it == peers_.end()) return;
  Peer& peer = it->second;
  if (peer.refused) return;
  AgentMessage msg;
  std::string err;
  if (!DecodeAgentMessage(raw, &msg, &err)) {
    if (!peer.authenticated) return Refuse(peer, err);
    Warn(drop_log_, fmt::format("rendezvous: dropping {} after a bad message: {}", peer.addr, err));
    peer.conn->Send("error", {{"message", err}});
    return peer.conn->CloseAfterFlush();
  }
  if (!peer.authenticated) return OnHello(id, peer, msg);
  using K = AgentMessage::Kind;
  if (peer.status_only) return OnStatusAskerMessage(id, peer, msg);
  switch (msg.kind) {
    case K::kHeartbeat:
      peer.conn->Send("heartbeat");
      return Feed(EvHeartbeat{id});
    case K::kJoin:
      return Feed(EvJoin{id, msg.local_world_size, msg.member_of, msg.standby});
    case K::kSucceeded:
      return Feed(EvSucceeded{id, msg.round});
    case K::kFailure:
      return Feed(EvWorkerFailed{id, msg.round, msg.failure});
    case K::kEndJob:
      return Feed(EvEndJob{id, msg.end_reason, msg.failure, msg.message});
    case K::kLeave:
      peer.conn->CloseAfterFlush();
      // Its agent says it leaves (a signal: scancel, time limit, preemption; or workers it
      // cannot kill, a failing health check): notice.
      return Feed(EvLeave{id,
                          msg.leave_signal > 0
                              ? fmt::format("its agent got signal {}", msg.leave_signal)
                              : std::string("its agent was stopped"),
                          /*notice=*/true, msg.leave_signal});
    case K::kStatus:
      return OnStatusRequest(id, peer);
    case K::kHello:
      break;
  }
  Warn(drop_log_, fmt::format("rendezvous: dropping {} after a second hello", peer.addr));
  peer.conn->Send("error", {{"message", "hello after welcome"}});
  peer.conn->CloseAfterFlush();
}

// A munge-proven status asker (OnHello's observer): status and heartbeats, nothing a node
// could say; it is not in the state machine, so nothing it sends reaches it.
void RendezvousHost::OnStatusAskerMessage(NodeId id, Peer& peer, const AgentMessage& msg) {
  using K = AgentMessage::Kind;
  if (msg.kind == K::kStatus) return OnStatusRequest(id, peer);
  if (msg.kind == K::kHeartbeat) return peer.conn->Send("heartbeat");
  if (msg.kind == K::kLeave) return peer.conn->CloseAfterFlush();
  Warn(drop_log_, fmt::format("rendezvous: dropping status asker {}: it may ask for status only", peer.addr));
  peer.conn->Send("error", {{"message", "a status asker may ask for status only"}});
  peer.conn->CloseAfterFlush();
}

// `elasticrun status` (launcher/job_status.h): for the job's own user only. A token
// or munge credential proved that in the handshake (auth.h: munge checks the uid; a
// token host's status asker without the token proves itself with munge, OnHello);
// without authentication (loopback) the asking socket must be owned by the job's user.
void RendezvousHost::OnStatusRequest(NodeId id, Peer& peer) {
  if (config_.auth == AuthMethod::kNone) {
    sockaddr_storage remote{}, local{};
    socklen_t remote_len = sizeof remote, local_len = sizeof local;
    SocketOwner owner;
    if (getpeername(peer.conn->fd(), reinterpret_cast<sockaddr*>(&remote), &remote_len) == 0 &&
        getsockname(peer.conn->fd(), reinterpret_cast<sockaddr*>(&local), &local_len) == 0)
      owner = config_.socket_owners->PeerOwner(remote, local);
    if (owner.status != OwnerStatus::kFound || owner.uid != job_uid_) {
      Warn(refuse_log_, fmt::format("rendezvous: refused a status request from {}: not the job's user",
                                    peer.addr));
      peer.conn->Send("error", {{"message", "status: refused: this host runs without authentication "
                                            "and the asking process is not the job's user"}});
      return peer.conn->CloseAfterFlush();
    }
  }
  nlohmann::json view = config_.observer ? config_.observer->Status(state_, id) : nlohmann::json();
  peer.conn->Send("status", {{"view", std::move(view)}});
  peer.conn->CloseAfterFlush();
}

void RendezvousHost::OnPeerClosed(NodeId id, const std::string& reason) {
  auto it = peers_.find(id);
  if (it == peers_.end()) return;
  const auto& c = it->second.conn->counters();
  closed_traffic_.bytes_in += c.bytes_in;
  closed_traffic_.bytes_out += c.bytes_out;
  closed_traffic_.messages_in += c.messages_in;
  closed_traffic_.messages_out += c.messages_out;
  bool authenticated = it->second.authenticated, node = !it->second.status_only;
  // E.g. a frame that failed authentication (a man in the middle): worth a line.
  if (authenticated && reason.rfind("protocol error", 0) == 0)
    Warn(drop_log_, fmt::format("rendezvous: dropping {}: {}", it->second.addr, EscapeForLog(reason)));
  // Destroying the connection from its own on_close is allowed (connection.h).
  peers_.erase(it);
  if (!authenticated) LeftPreAuth();
  if (authenticated && node) Feed(EvLeave{id, reason});
  MaybeRunTerminal();
}

void RendezvousHost::Warn(LogRateLimiter& limiter, const std::string& message) {
  uint64_t dropped = 0;
  if (limiter.Allow(loop_.Now(), &dropped)) Log(LogLevel::kWarning, "{}{}", message, MoreLikeIt(dropped));
}

// ---- the state machine ----

// The node an event is about, by name, as the host knew it before the event (a
// leave erases it): for the observer's record only.
static std::string EventNodeName(const RendezvousState& state, const RendezvousEvent& event) {
  NodeId id = 0;
  if (const auto* e = std::get_if<EvJoin>(&event)) id = e->node;
  else if (const auto* e = std::get_if<EvLeave>(&event)) id = e->node;
  else if (const auto* e = std::get_if<EvWorkerFailed>(&event)) id = e->node;
  auto it = state.nodes.find(id);
  return it == state.nodes.end() ? std::string() : it->second.desc.name;
}

void RendezvousHost::Feed(const RendezvousEvent& event) {
  RendezvousPhase phase = state_.phase;
  uint64_t round = state_.round;
  int restarts = state_.restarts_used;
  std::string node = config_.observer ? EventNodeName(state_, event) : std::string();
  RendezvousTransition t = StepRendezvous(config_.settings, std::move(state_), event, loop_.Now());
  state_ = std::move(t.state);
  if (config_.observer)
    config_.observer->OnHostStep(HostStep{event, phase, round, restarts, std::move(node), state_,
                                          t.actions, loop_.Now()});
  for (const auto& action : t.actions) Carry(action);
  ScheduleDeadline();
}

void RendezvousHost::Carry(const RendezvousAction& state_action) {
  RendezvousAction action = state_action;
  action.round.regime = config_.regime;  // every round and standby names the regime
  if (action.kind == RendezvousActionKind::kRoundComplete) {
    if (store_round_ != action.round.round) OpenRoundStore(action.round.round);
    if (!store_) return;  // no store for this round: the job is being closed
  }
  if (action.kind == RendezvousActionKind::kRoundComplete && action.round.group_rank == 0) {
    AllowRoundPeers();
    // One-node runs (standalone) keep the console to the workers' output.
    Log(config_.settings.max_nodes > 1 ? LogLevel::kInfo : LogLevel::kDebug,
        "rendezvous: round {} complete: {} node(s), {} worker(s)",
        action.round.round, action.round.group_world_size, action.round.world_size);
  }
  if (action.kind == RendezvousActionKind::kRestartRequired ||
      action.kind == RendezvousActionKind::kFatal ||
      action.kind == RendezvousActionKind::kJobFailed)
    Log(LogLevel::kDebug, "rendezvous: {} -> node {}", action.message, action.node);
  if (action.node == kLocalNode) return CarryLocal(action);
  SendToPeer(action);
}

// The workers' store accepts the job's user's processes on this machine and the
// nodes of the round just completed (nobody else: it speaks PyTorch's
// unauthenticated protocol).
void RendezvousHost::AllowRoundPeers() {
  member_addrs_.clear();
  for (NodeId id : state_.members) {
    auto it = state_.nodes.find(id);
    if (it != state_.nodes.end()) member_addrs_.insert(it->second.desc.addr);
  }
}

// Replacing the server closes the previous round's listener and connections.
// Failing to listen (out of descriptors) ends the job on every node: workers on
// the old store would read the previous round's keys.
void RendezvousHost::OpenRoundStore(uint64_t round) {
  store_round_ = round;
  store_.reset();
  auto store = std::make_unique<StoreServer>(loop_);
  std::string err;
  if (!store->Listen(config_.bind_addr, 0, &err)) {
    Log(LogLevel::kError, "rendezvous: cannot open the workers' store of round {}: {}", round, err);
    Feed(EvHostFailure{fmt::format("cannot open the workers' store of round {}: {}", round, err)});
    return;
  }
  store->SetPeerFilter([this](const sockaddr_storage& peer, const sockaddr_storage& local, std::string* why) {
    StoreAdmission admission =
        CheckStorePeer(peer, local, local_addrs_, member_addrs_, *config_.socket_owners, job_uid_);
    *why = std::move(admission.why);
    return admission.admitted;
  });
  store_ = std::move(store);
  Log(LogLevel::kDebug, "rendezvous: round {}: workers' store on port {}", round, store_->port());
}

RoundInfo RendezvousHost::RoundWithStore(RoundInfo round) const {
  round.store_addr = config_.store_addr;
  round.store_port = store_port();
  round.use_agent_store = true;
  return round;
}

void RendezvousHost::SendToPeer(const RendezvousAction& action) {
  auto it = peers_.find(action.node);
  if (it == peers_.end()) return;
  RendezvousConnection& conn = *it->second.conn;
  switch (action.kind) {
    case RendezvousActionKind::kRoundComplete: {
      RoundInfo info = RoundWithStore(action.round);
      return conn.Send("round", RoundToJson(info));
    }
    case RendezvousActionKind::kRestartRequired:
      return conn.Send("restart", {{"round", action.round.round}, {"reason", action.message},
                                   {"restarts_used", action.round.restarts_used},
                                   {"worker_failed", action.worker_failed}});
    case RendezvousActionKind::kJobFailed:
      return conn.Send("job_failed", {{"failure", FailureToJson(action.failure)},
                                      {"message", action.message},
                                      {"end_reason", EndReasonName(action.end_reason)}});
    case RendezvousActionKind::kDone:
      return conn.Send("done", {{"message", action.message}});
    case RendezvousActionKind::kFatal:
      return conn.Send("fatal", {{"message", action.message},
                                 {"end_reason", EndReasonName(action.end_reason)}});
    case RendezvousActionKind::kDisconnect:
      Log(LogLevel::kWarning, "rendezvous: dropping silent node {}", it->second.addr);
      return conn.CloseAfterFlush();
    case RendezvousActionKind::kStandBy: {
      // No successors: a latecomer, not a voter of the round (it cannot follow a failover).
      return conn.Send("waiting", {{"message", action.message},
                                   {"standby", StandbyToJson(action.round)}});
    }
  }
}

// The host's own agent acts for the job at its end (it requeues, once).
static JobEnd LocalEnd(const RendezvousAction& action) {
  return JobEnd{action.end_reason, /*acts_for_job=*/true, action.round.restarts_used};
}

void RendezvousHost::CarryLocal(const RendezvousAction& action) {
  switch (action.kind) {
    case RendezvousActionKind::kRoundComplete: {
      RoundInfo info = RoundWithStore(action.round);
      local_round_ = info.round;
      local_member_of_ = static_cast<int64_t>(info.round);
      return posted_.Post([this, info] {
        if (callbacks_.on_round) callbacks_.on_round(info);
      });
    }
    case RendezvousActionKind::kRestartRequired:
      return posted_.Post([this, reason = action.message, failed = action.worker_failed] {
        if (callbacks_.on_restart_required)
          callbacks_.on_restart_required(reason, failed ? RestartCause::kWorkerFailure
                                                        : RestartCause::kMembership);
      });
    case RendezvousActionKind::kJobFailed: {
      WorkerFailure failure = action.failure;
      if (failure.message.empty()) failure.message = action.message;  // as a client's (rendezvous_client.cc)
      return FinishLocal([this, f = std::move(failure), end = LocalEnd(action)] {
        if (callbacks_.on_job_failed) callbacks_.on_job_failed(f, end);
      });
    }
    case RendezvousActionKind::kDone:
      return FinishLocal([this] {
        if (callbacks_.on_done) callbacks_.on_done();
      });
    case RendezvousActionKind::kFatal:
      return FinishLocal([this, m = action.message, end = LocalEnd(action)] {
        if (callbacks_.on_fatal) callbacks_.on_fatal(end, m);
      });
    case RendezvousActionKind::kDisconnect:
      return;
    case RendezvousActionKind::kStandBy:
      if (!local_standby_.empty())  // its own verdict, already escaped (slurm_node_state.h)
        Log(LogLevel::kInfo, "{}: standing by (a spare of round {})", local_standby_, action.round.round);
      else
        Log(LogLevel::kInfo, "rendezvous: this node stands by as a spare: {}; it joins the next "
            "round if a node is lost", action.message);
      return;
  }
}

// ---- timers and the end ----

void RendezvousHost::ScheduleDeadline() {
  deadline_timer_.Cancel();
  auto due = NextDeadline(state_);
  if (!due) return;
  auto delay = std::chrono::duration_cast<Millis>(*due - loop_.Now()) + Millis(1);
  deadline_timer_ = loop_.After(std::max(delay, Millis(0)), [this] { Feed(EvTick{}); });
}

void RendezvousHost::OnHeartbeatTick() {
  Feed(EvTick{});
  TellSpares();
  if (state_.phase != RendezvousPhase::kJoining || state_.num_joined == 0) return;
  std::string waiting = DescribeWaiting(config_.settings, state_);
  if (waiting == last_waiting_) return;
  last_waiting_ = waiting;
  Log(LogLevel::kInfo, "rendezvous: waiting: {}", waiting);
  for (const auto& [id, rec] : state_.nodes) {
    auto it = peers_.find(id);
    if (rec.joined && it != peers_.end()) it->second.conn->Send("waiting", {{"message", waiting}});
  }
}

// Wait-listed nodes of a running round wait (for a failure or the end) with no
// deadline of their own: say so every tick, which renews their round deadline.
void RendezvousHost::TellSpares() {
  if (state_.phase != RendezvousPhase::kRunning && state_.phase != RendezvousPhase::kFinishing)
    return;
  for (NodeId id : state_.wait_list) {
    auto it = peers_.find(id);
    if (it != peers_.end())
      it->second.conn->Send("waiting", {{"message", "standing by: the running round is full"}});
  }
}

void RendezvousHost::FinishLocal(std::function<void()> terminal) {
  if (terminal_) return;
  terminal_ = std::move(terminal);
  if (listener_) {
    loop_.Remove(listener_.get());
    listener_.Reset();
  }
  close_timer_ = loop_.After(Millis(config_.settings.close_timeout_ms), [this] {
    if (!peers_.empty())
      Log(LogLevel::kWarning, "rendezvous: {} agent(s) still connected after close_timeout",
          peers_.size());
    peers_.clear();
    unauthenticated_ = 0;
    MaybeRunTerminal();
  });
  posted_.Post([this] { MaybeRunTerminal(); });
}

void RendezvousHost::MaybeRunTerminal() {
  if (!terminal_ || !peers_.empty()) return;
  close_timer_.Cancel();
  auto fn = std::move(terminal_);
  terminal_ = [] {};  // keeps FinishLocal from arming again
  fn();
}

}  // namespace elastic
