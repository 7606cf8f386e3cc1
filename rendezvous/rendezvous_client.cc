#include "rendezvous/rendezvous_client.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/log.h"
#include "common/log_escape.h"
#include "rendezvous/auth.h"
#include "rendezvous/failover_rules.h"

namespace elastic {

RendezvousClient::RendezvousClient(EventLoop& loop, ClientConfig config)
    : loop_(loop), config_(std::move(config)), finish_(loop) {
  // Off the loop: the address comes resolved, or is a literal (no lookup).
  if (config_.address)
    addr_ = *config_.address;
  else if (!ResolveNumericAddress(config_.host, config_.port, &addr_, &resolve_error_))
    resolve_error_ = fmt::format("cannot reach the rendezvous host {}: {}", HostName(), resolve_error_);
}

RendezvousClient::~RendezvousClient() {
  if (connecting_fd_) loop_.Remove(connecting_fd_.get());
}

std::string RendezvousClient::HostName() const {
  return fmt::format("{}:{}", config_.host, config_.port);
}

std::string RendezvousClient::Describe() const {
  return fmt::format("c10d client of host {}, run {}", HostName(), config_.run_id);
}

// ---- the agent's calls ----

void RendezvousClient::Join(int local_world_size) {
  running_round_.reset();
  awaiting_round_ = true;
  watching_ = false;
  if (stage_ == Stage::kFinished) return;
  if (stage_ == Stage::kReady) return SendJoin(local_world_size);
  pending_join_ = local_world_size;
  if (stage_ == Stage::kIdle) StartConnecting();
}

// An observer is an authenticated, heartbeating peer that never sends `join`:
// the host's state machine keeps its node record (it hears its heartbeats) and
// tells it the end with every other connected node, but never counts it.
void RendezvousClient::Watch() {
  running_round_.reset();
  pending_join_.reset();
  watching_ = true;
  if (stage_ == Stage::kIdle) StartConnecting();
}

void RendezvousClient::StartConnecting() {
  connect_deadline_ = loop_.Now() + Millis(config_.settings.join_timeout_ms);
  retry_delay_ = Millis(config_.settings.connect_retry_ms);
  if (config_.on_unreachable)
    candidate_timer_ = loop_.After(Millis(config_.candidate_timeout_ms),
                                   [this] { OnCandidateDeadline(); });
  Connect();
}

void RendezvousClient::ReportWorkerFailure(const WorkerFailure& failure) {
  Send("failure", {{"round", last_round_}, {"failure", FailureToJson(failure)}});
  running_round_.reset();
}

void RendezvousClient::EndJob(EndReason reason, const WorkerFailure& failure, const std::string& message) {
  Send("end_job", {{"end_reason", EndReasonName(reason)}, {"failure", FailureToJson(failure)},
                   {"message", message}});
}

void RendezvousClient::ReportSucceeded() {
  succeeded_round_ = last_round_;
  Send("succeeded", {{"round", last_round_}});
}

void RendezvousClient::Shutdown(int signal) {
  callbacks_ = {};
  retry_timer_.Cancel();
  if (conn_ && stage_ == Stage::kReady) {
    conn_->Send("leave", signal > 0 ? nlohmann::json{{"signal", signal}} : nlohmann::json::object());
    conn_->CloseAfterFlush();
  }
  stage_ = Stage::kFinished;
}

void RendezvousClient::Send(std::string_view type, nlohmann::json body) {
  if (conn_ && stage_ == Stage::kReady) conn_->Send(type, std::move(body));
}

// ---- connecting ----

void RendezvousClient::Connect() {
  if (stage_ == Stage::kFinished) return;  // shut down while waiting to retry
  stage_ = Stage::kConnecting;
  if (!resolve_error_.empty())
    return config_.on_unreachable ? Unreachable(resolve_error_) : Fatal(resolve_error_);
  std::string err;
  connecting_fd_ = StartConnect(addr_, &err);
  if (!connecting_fd_) return RetryConnect(err);
  if (!loop_.Add(connecting_fd_.get(), EPOLLOUT, [this](uint32_t) { OnConnectEvent(); }, &err))
    return Fatal(err);
}

void RendezvousClient::OnConnectEvent() {
  int fd = connecting_fd_.get();
  loop_.Remove(fd);
  if (stage_ == Stage::kFinished) return connecting_fd_.Reset();
  int error = ConnectError(fd);
  if (error != 0) {
    connecting_fd_.Reset();
    return RetryConnect(std::strerror(error));
  }
  local_addr_ = LocalAddress(fd);
  RendezvousConnection::Callbacks cb;
  cb.on_message = [this](const Message& m) { OnMessage(m); };
  cb.on_close = [this](const std::string& reason) { OnClosed(reason); };
  // A small frame limit until the host proved itself (then max_frame_bytes).
  conn_ = std::make_unique<RendezvousConnection>(loop_, std::move(connecting_fd_),
                                                 config_.settings.auth_max_frame_bytes, cb);
  std::string err;
  if (!conn_->Start(&err)) return Fatal(err);
  stage_ = Stage::kAuthenticating;
  challenged_ = false;
  last_heard_ = loop_.Now();
  // A candidate host may still be noticing the loss: its challenge has candidate_timeout.
  if (!config_.on_unreachable)
    auth_timer_ = loop_.After(Millis(config_.settings.auth_timeout_ms), [this] { OnAuthDeadline(); });
}

void RendezvousClient::RetryConnect(const std::string& why) {
  last_connect_error_ = why;
  if (config_.on_unreachable) return Unreachable(why);
  auto now = loop_.Now();
  if (now >= connect_deadline_)
    return Fatal(fmt::format("could not reach the rendezvous host {} within join_timeout ({} s): {}",
                             HostName(), config_.settings.join_timeout_ms / 1000.0, why));
  Log(LogLevel::kDebug, "rendezvous: host {} not reachable yet ({}); retrying", HostName(), why);
  auto delay = std::min(retry_delay_, std::chrono::duration_cast<Millis>(connect_deadline_ - now));
  retry_delay_ = std::min(retry_delay_ * 2, Millis(1000));
  retry_timer_ = loop_.After(delay, [this] { Connect(); });
}

// ---- messages ----

void RendezvousClient::OnMessage(const Message& raw) {
  last_heard_ = loop_.Now();
  HostMessage msg;
  std::string err;
  if (!DecodeHostMessage(raw, &msg, &err))
    return Fatal(fmt::format("protocol error from the rendezvous host {}: {}", HostName(), err));
  if (stage_ == Stage::kAuthenticating) return OnAuthMessage(msg);
  if (stage_ == Stage::kReady) OnHostPush(msg);
}

void RendezvousClient::OnAuthMessage(const HostMessage& msg) {
  using K = HostMessage::Kind;
  if (msg.kind == K::kChallenge && !challenged_) return OnChallenge(msg.challenge);
  if (msg.kind == K::kWelcome && challenged_) return OnWelcome(msg.welcome);
  // Nothing before the welcome is authenticated: an `error` may come from a man
  // in the middle as well as from the host, so it ends the agent as a lost
  // connection would (exit 3), never as a verdict on the job (exit 2: do not requeue).
  if (msg.kind == K::kError)
    return Fatal(fmt::format("the rendezvous host {} refused this agent (unauthenticated, before "
                             "its welcome): {}", HostName(), EscapeForLog(msg.text)),
                 EndReason::kHostLost);
  Fatal(fmt::format("protocol error from the rendezvous host {}: '{}' while awaiting its {}",
                    HostName(), HostMessageName(msg.kind), challenged_ ? "welcome" : "challenge"));
}

// What this agent insists on: an agent that holds a token, or has munge, never
// joins a host that says "none" (a host without the secret, or a man in the middle).
bool RendezvousClient::RequiredAuth(AuthMethod* method, std::string* why) const {
  const RendezvousSettings& s = config_.settings;
  if (!s.token.empty()) return *method = AuthMethod::kToken, true;
  if (s.use_munge && MungeAvailable(s.munge_socket, why)) return *method = AuthMethod::kMunge, true;
  *method = AuthMethod::kNone;
  return false;
}

void RendezvousClient::OnChallenge(const ChallengeMsg& c) {
  challenged_ = true;
  candidate_timer_.Cancel();
  if (!auth_timer_.armed())
    auth_timer_ = loop_.After(Millis(config_.settings.auth_timeout_ms), [this] { OnAuthDeadline(); });
  // The challenge is unauthenticated (its fields are proven only by the welcome):
  // what it says can refuse the host, never end the job as bad input.
  if (c.version != kRendezvousProtocolVersion)
    return Fatal(fmt::format("the rendezvous host {} speaks protocol version {}, this agent {}: "
                             "use the same slurm-elastic on every node", HostName(), c.version,
                             kRendezvousProtocolVersion), EndReason::kHostLost);
  if (c.run_id != config_.run_id)
    return Fatal(fmt::format("the rendezvous host {} runs '{}', not '{}' (--rdzv-id)", HostName(),
                             c.run_id, config_.run_id), EndReason::kHostLost);
  if (HostIsStale(c.round, config_.last_round_run)) {
    std::string why = fmt::format("it forms round {}, but this agent already ran round {}: a "
                                  "former host", c.round, *config_.last_round_run);
    if (config_.on_unreachable) return Unreachable(why);
    return Fatal(fmt::format("the rendezvous host {} is stale: {}", HostName(), why));
  }
  if (config_.only_ahead_of && !ShouldYield(*config_.only_ahead_of, c.last_completed)) {
    std::string why = fmt::format("its last completed round is {}, not past {}", c.last_completed,
                                  *config_.only_ahead_of);
    if (config_.on_unreachable) return Unreachable(why);
    return Fatal(fmt::format("the rendezvous host {}: {}", HostName(), why));
  }
  if (!config_.regime.empty() && !c.regime.empty() && c.regime != config_.regime) {
    std::string why = "it hosts another regime of this run id (an earlier or a later run)";
    if (config_.on_unreachable) return Unreachable(why);
    return Fatal(fmt::format("the rendezvous host {}: {}", HostName(), why), EndReason::kHostLost);
  }
  ParseAuthMethod(c.auth, &auth_);  // the decoder checked the name
  AuthMethod required = AuthMethod::kNone;
  std::string why;
  if (RequiredAuth(&required, &why) && auth_ == AuthMethod::kNone)
    return Fatal(fmt::format(
        "the rendezvous host {} asks for no authentication, but this agent has {}: refusing the "
        "downgrade (a host without the secret, or a man in the middle){}", HostName(),
        required == AuthMethod::kToken ? "a token" : "munge",
        required == AuthMethod::kMunge ? "; --rdzv-conf munge=0 allows it" : ""),
        EndReason::kHostLost);
  // Our proof covers the challenge as we read it and our whole hello (protocol 4).
  Handshake& h = handshake_;
  h = Handshake{};
  h.host_nonce = c.nonce;
  h.agent_nonce = MakeNonce();
  h.auth = c.auth;
  h.round = c.round;
  h.last_completed = c.last_completed;
  h.regime = c.regime;
  h.run_id = config_.run_id;
  h.name = config_.node_name;
  h.pid = static_cast<int64_t>(getpid());
  h.preferred_rank = config_.settings.preferred_rank;
  h.listen_port = config_.listen_port ? config_.listen_port(local_addr_) : 0;
  h.guest = config_.settings.guest;
  // `elasticrun status` from outside the step holds no per-step token: it asks a host in token
  // mode as a munge-proven observer of the same user, for status only (messages.h).
  proof_auth_ = auth_;
  std::string proof, err;
  if (auth_ == AuthMethod::kToken && config_.settings.token.empty() && config_.on_status) {
    if (!config_.settings.use_munge || !MungeAvailable(config_.settings.munge_socket, &err))
      return Fatal(fmt::format("cannot ask the rendezvous host {} for the status: it authenticates with "
                               "the step's token, which only the step's tasks hold, and munge, which "
                               "proves this user otherwise, is {}", HostName(),
                               config_.settings.use_munge ? "not available: " + err : "off (munge=0)"));
    proof_auth_ = AuthMethod::kMunge;
    h.observer = true;
  }
  if (!MakeProof(proof_auth_, config_.settings.token, config_.settings.munge_socket,
                 AuthTranscript(AuthDirection::kAgentToHost, h), &proof, &err))
    return Fatal(fmt::format("cannot authenticate to the rendezvous host {} ({}): {}", HostName(),
                             AuthMethodName(proof_auth_), err));
  nlohmann::json hello = {{"version", kRendezvousProtocolVersion},
                          {"run_id", h.run_id},
                          {"name", h.name},
                          {"pid", h.pid},
                          {"preferred_rank", h.preferred_rank},
                          {"nonce", h.agent_nonce},
                          {"proof", proof},
                          {"listen_port", h.listen_port}};
  if (h.guest) hello["guest"] = true;  // absent otherwise: hellos of older agents alike
  if (h.observer) hello["observer"] = true;
  conn_->Send("hello", std::move(hello));
}

// The host proves it knows the token (or is of our munge realm) over this
// connection's nonces before anything it says is believed.
void RendezvousClient::OnWelcome(const WelcomeMsg& welcome) {
  handshake_.node_id = welcome.node_id;
  std::string transcript = AuthTranscript(AuthDirection::kHostToAgent, handshake_);
  std::string err;
  // Unproven: a relay or a stranger, not a verdict on this job (fail as a network failure).
  if (!VerifyProof(proof_auth_, config_.settings.token, config_.settings.munge_socket, transcript,
                   welcome.proof, &err))
    return Fatal(fmt::format("the rendezvous host {} failed to prove itself ({}): {}", HostName(),
                             AuthMethodName(proof_auth_), err), EndReason::kHostLost);
  if (proof_auth_ == AuthMethod::kToken) {  // every frame after the welcome is authenticated
    RendezvousConnection::FrameKeys keys;
    const std::string& token = config_.settings.token;
    if (!SessionKey(token, AuthDirection::kAgentToHost, handshake_, &keys.send, &err) ||
        !SessionKey(token, AuthDirection::kHostToAgent, handshake_, &keys.receive, &err))
      return Fatal("cannot derive the rendezvous session keys: " + err);
    conn_->AuthenticateFrames(std::move(keys));
  }
  OnReady();
}

void RendezvousClient::OnReady() {
  stage_ = Stage::kReady;
  auth_timer_.Cancel();
  conn_->SetMaxFrameBytes(config_.settings.max_frame_bytes);
  heartbeat_timer_ = loop_.Every(Millis(config_.settings.heartbeat_interval_ms),
                                 [this] { OnHeartbeatTimer(); });
  if (config_.on_status) Send("status");
  if (pending_join_) SendJoin(*pending_join_);
  pending_join_.reset();
  if (config_.on_welcomed) config_.on_welcomed();
}

void RendezvousClient::OnAuthDeadline() {
  if (stage_ != Stage::kAuthenticating) return;
  Fatal(fmt::format("no {} from the rendezvous host {} within auth_timeout ({} s)",
                    challenged_ ? "welcome" : "challenge", HostName(),
                    config_.settings.auth_timeout_ms / 1000.0));
}

void RendezvousClient::SendJoin(int local_world_size) {
  int64_t member_of = config_.last_round_run ? static_cast<int64_t>(*config_.last_round_run) : -1;
  nlohmann::json body = {{"local_world_size", local_world_size}, {"member_of", member_of}};
  if (!standby_reason_.empty()) body["standby"] = standby_reason_;
  Send("join", std::move(body));
  ArmRoundDeadline();
}

// The host completes a round within join_timeout + last_call_timeout of a join,
// or ends the job (rendezvous_state.h); a host that says neither is broken.
void RendezvousClient::ArmRoundDeadline() {
  const RendezvousSettings& s = config_.settings;
  int64_t ms = s.join_timeout_ms + s.last_call_timeout_ms + s.heartbeat_timeout_ms;
  round_timer_ = loop_.After(Millis(ms), [this, ms] {
    if (stage_ == Stage::kReady)
      Fatal(fmt::format("no round from the rendezvous host {} within {} s of joining "
                        "(join_timeout + last_call_timeout + heartbeat_timeout)",
                        HostName(), ms / 1000.0));
  });
}

void RendezvousClient::OnHostPush(const HostMessage& msg) {
  using K = HostMessage::Kind;
  switch (msg.kind) {
    case K::kHeartbeat:
      return;
    case K::kWaiting:
      if (msg.standby) OnStandBy(*msg.standby, msg.text);
      if (msg.text != last_waiting_)
        Log(LogLevel::kDebug, "rendezvous: waiting at {}: {}", HostName(), EscapeForLog(msg.text));
      last_waiting_ = msg.text;
      if (round_timer_.armed()) ArmRoundDeadline();  // the host is still forming the round
      return;
    case K::kRound:
      standby_.reset();
      round_timer_.Cancel();
      running_round_ = msg.round.round;
      awaiting_round_ = false;
      last_round_ = msg.round.round;
      restarts_used_ = msg.round.restarts_used;
      config_.last_round_run = msg.round.round;
      succeeded_round_.reset();
      if (callbacks_.on_round) callbacks_.on_round(msg.round);
      return;
    case K::kRestart: {
      uint64_t round = msg.restart.round;
      restarts_used_ = std::max(restarts_used_, msg.restart.restarts_used);
      // Only a restart of the round our workers run; after a local failure we rejoin anyway.
      if (!running_round_ || *running_round_ != round) {
        Log(LogLevel::kDebug, "rendezvous: ignoring a restart of round {} from {} (workers run {})",
            round, HostName(), running_round_ ? std::to_string(*running_round_) : "no round");
        return;
      }
      running_round_.reset();
      std::string reason = msg.restart.reason.empty() ? "restart" : msg.restart.reason;
      if (callbacks_.on_restart_required)
        callbacks_.on_restart_required(reason, msg.restart.worker_failed
                                                   ? RestartCause::kWorkerFailure
                                                   : RestartCause::kMembership);
      return;
    }
    case K::kJobFailed: {
      WorkerFailure failure = msg.job_failed.failure;
      if (failure.message.empty()) failure.message = msg.job_failed.message;
      return Finish([this, failure, end = JobEnd{msg.job_failed.end_reason, false}] {
        if (callbacks_.on_job_failed) callbacks_.on_job_failed(failure, end);
      });
    }
    case K::kDone:
      return OnDone(msg.text);
    case K::kFatal:
      return Fatal(fmt::format("rendezvous host {}: {}", HostName(),
                               msg.text.empty() ? "fatal" : EscapeForLog(msg.text, 4096)),
                   msg.end_reason);
    case K::kError:
      return Fatal(fmt::format("the rendezvous host {} dropped this agent: {}", HostName(),
                               EscapeForLog(msg.text)));
    case K::kStatus:  // only for a status request; to an agent, a protocol error
      if (config_.on_status) return Finish([this, view = msg.status_view] { config_.on_status(view); });
      [[fallthrough]];
    case K::kChallenge:
    case K::kWelcome:
      return Fatal(fmt::format("protocol error from the rendezvous host {}: '{}' after welcome",
                               HostName(), HostMessageName(msg.kind)));
  }
}

// One console line per round a spare stands by for (not an error: it waits for a
// loss, or for the end of the job).
void RendezvousClient::OnStandBy(const RoundInfo& round, const std::string& why) {
  if (standby_ && standby_->round == round.round) return;
  standby_ = round;
  if (!standby_reason_.empty())  // its own verdict, already escaped (slurm_node_state.h)
    return Log(LogLevel::kInfo, "{}: standing by (a spare of round {})", standby_reason_, round.round);
  Log(LogLevel::kInfo, "rendezvous: this node stands by as a spare: {}; it joins the next round "
      "if a node is lost", EscapeForLog(why));
}

// `done` ends the agent successfully after its workers of the last round
// succeeded, or while it waits for a round (it stood by on the host's wait
// list and the job finished without it: no failure, as torchrun's graceful
// exit of a node left out), or while it watches (kept out by its health check).
// Any other `done` cannot apply (workers running, or stopping after a failure),
// and waiting on would hang the agent.
void RendezvousClient::OnDone(const std::string& message) {
  if ((succeeded_round_ && *succeeded_round_ == last_round_) || awaiting_round_ || watching_)
    return Finish([this] {
      if (callbacks_.on_done) callbacks_.on_done();
    });
  std::string when = running_round_ ? fmt::format("while its workers run round {}", *running_round_)
                                    : std::string("before this agent's workers ran a round");
  Fatal(fmt::format("protocol error from the rendezvous host {}: 'done' ({}) {}", HostName(),
                    EscapeForLog(message), when));
}

void RendezvousClient::OnClosed(const std::string& reason) {
  if (stage_ == Stage::kFinished) return;
  // Closed before any challenge: a host at its max_unauthenticated closes at
  // accept. Like a refused connect, try again until join_timeout.
  if (stage_ == Stage::kAuthenticating && !challenged_) {
    auth_timer_.Cancel();
    conn_.reset();  // allowed from its own on_close (connection.h)
    return RetryConnect("closed before its challenge: " + reason);
  }
  if (stage_ == Stage::kReady && config_.on_host_lost) return HostLost(reason);
  // A candidate successor lost after its challenge, before its welcome (it died as this
  // agent said hello), is not the host: the next one may be. It used to end the agent
  // (exit 3) while the others went on to the next successor (the fault run, issue 19).
  if (config_.on_unreachable) return Unreachable("lost before its welcome: " + reason);
  Fatal(fmt::format("lost the rendezvous host {}: {}", HostName(), reason), EndReason::kHostLost);
}

void RendezvousClient::OnHeartbeatTimer() {
  if (stage_ != Stage::kReady) return heartbeat_timer_.Cancel();
  auto silent = loop_.Now() - last_heard_;
  if (silent >= Millis(config_.settings.heartbeat_timeout_ms)) {
    std::string why = fmt::format("silent for {} ms (heartbeat_timeout)",
                                  std::chrono::duration_cast<Millis>(silent).count());
    if (config_.on_host_lost) return HostLost(why);
    return Fatal(fmt::format("lost the rendezvous host {}: {}", HostName(), why),
                 EndReason::kHostLost);
  }
  Send("heartbeat");
}

// ---- the end ----

void RendezvousClient::Fatal(const std::string& message, EndReason reason) {
  Finish([this, message, reason] {
    if (callbacks_.on_fatal) callbacks_.on_fatal(JobEnd{reason, false}, message);
  });
}

void RendezvousClient::HostLost(const std::string& why) {
  Finish([this, why] { config_.on_host_lost(why); });
}

void RendezvousClient::Unreachable(const std::string& why) {
  Finish([this, why] { config_.on_unreachable(why); });
}

void RendezvousClient::OnCandidateDeadline() {
  if (stage_ == Stage::kFinished || challenged_) return;
  Unreachable(fmt::format("no challenge within {} s", config_.candidate_timeout_ms / 1000.0));
}

void RendezvousClient::Finish(std::function<void()> fn) {
  if (stage_ == Stage::kFinished) return;
  stage_ = Stage::kFinished;
  for (Timer* t : {&heartbeat_timer_, &auth_timer_, &round_timer_, &candidate_timer_, &retry_timer_})
    t->Cancel();
  // Called from inside the connection's callbacks: tear it down from the loop.
  finish_.Post([this, fn = std::move(fn)] {
    conn_.reset();
    fn();
  });
}

}  // namespace elastic
