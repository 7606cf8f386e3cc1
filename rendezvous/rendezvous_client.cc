#include "rendezvous/rendezvous_client.h"

#include <unistd.h>

#include <cstring>

#include <fmt/format.h>

#include "common/log.h"
#include "rendezvous/auth.h"

namespace elastic {

RendezvousClient::RendezvousClient(EventLoop& loop, ClientConfig config)
    : loop_(loop), config_(std::move(config)) {}

RendezvousClient::~RendezvousClient() {
  *alive_ = false;
  for (auto id : {retry_timer_, heartbeat_timer_})
    if (id) loop_.CancelTimer(id);
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
  if (stage_ == Stage::kFinished) return;
  if (stage_ == Stage::kReady) return Send("join", {{"local_world_size", local_world_size}});
  pending_join_ = local_world_size;
  if (stage_ == Stage::kIdle) {
    connect_deadline_ = MonoClock::now() + Millis(config_.settings.join_timeout_ms);
    retry_delay_ = Millis(config_.settings.connect_retry_ms);
    Connect();
  }
}

void RendezvousClient::ReportWorkerFailure(const WorkerFailure& failure) {
  Send("failure", {{"round", last_round_}, {"failure", FailureToJson(failure)}});
  running_round_.reset();
}

void RendezvousClient::ReportSucceeded() { Send("succeeded", {{"round", last_round_}}); }

void RendezvousClient::Shutdown() {
  callbacks_ = {};
  if (retry_timer_) loop_.CancelTimer(retry_timer_);
  retry_timer_ = 0;
  if (conn_ && stage_ == Stage::kReady) {
    conn_->Send("leave");
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
  std::string err;
  if (!ResolveAddress(config_.host, config_.port, &addr_, &err)) return RetryConnect(err);
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
  RendezvousConnection::Callbacks cb;
  cb.on_message = [this](const Message& m) { OnMessage(m); };
  cb.on_close = [this](const std::string& reason) { OnClosed(reason); };
  conn_ = std::make_unique<RendezvousConnection>(loop_, std::move(connecting_fd_),
                                                 config_.settings.max_frame_bytes, cb);
  std::string err;
  if (!conn_->Start(&err)) return Fatal(err);
  stage_ = Stage::kAuthenticating;
  last_heard_ = MonoClock::now();
}

void RendezvousClient::RetryConnect(const std::string& why) {
  last_connect_error_ = why;
  auto now = MonoClock::now();
  if (now >= connect_deadline_)
    return Fatal(fmt::format("could not reach the rendezvous host {} within join_timeout ({} s): {}",
                             HostName(), config_.settings.join_timeout_ms / 1000.0, why));
  Log(LogLevel::kDebug, "rendezvous: host {} not reachable yet ({}); retrying", HostName(), why);
  auto delay = std::min(retry_delay_, std::chrono::duration_cast<Millis>(connect_deadline_ - now));
  retry_delay_ = std::min(retry_delay_ * 2, Millis(1000));
  retry_timer_ = loop_.AddTimer(delay, [this] {
    retry_timer_ = 0;
    Connect();
  });
}

// ---- messages ----

void RendezvousClient::OnMessage(const Message& msg) {
  last_heard_ = MonoClock::now();
  if (stage_ == Stage::kAuthenticating) {
    if (msg.type == "challenge") return OnChallenge(msg);
    if (msg.type == "welcome") return OnReady();
    if (msg.type == "error")
      return Fatal(fmt::format("the rendezvous host {} refused this agent: {}", HostName(),
                               msg.body.value("message", std::string("?"))));
    return Fatal(fmt::format("unexpected '{}' from the rendezvous host {} before welcome",
                             msg.type, HostName()));
  }
  if (stage_ == Stage::kReady) OnHostPush(msg);
}

void RendezvousClient::OnChallenge(const Message& msg) {
  std::string challenge, method_name, run_id, err;
  AuthMethod method;
  if (!GetString(msg.body, "challenge", &challenge, &err) ||
      !GetString(msg.body, "auth", &method_name, &err) ||
      !GetString(msg.body, "run_id", &run_id, &err) || !ParseAuthMethod(method_name, &method))
    return Fatal(fmt::format("bad challenge from the rendezvous host {}: {}", HostName(), err));
  if (run_id != config_.run_id)
    return Fatal(fmt::format("the rendezvous host {} runs '{}', not '{}' (--rdzv-id)", HostName(),
                             run_id, config_.run_id));
  std::string proof;
  if (!MakeProof(method, config_.settings.token, config_.settings.munge_socket, challenge, &proof,
                 &err))
    return Fatal(fmt::format("cannot authenticate to the rendezvous host {} ({}): {}", HostName(),
                             method_name, err));
  conn_->Send("hello", {{"version", kRendezvousProtocolVersion},
                        {"run_id", config_.run_id},
                        {"name", config_.node_name},
                        {"pid", static_cast<int64_t>(getpid())},
                        {"preferred_rank", config_.settings.preferred_rank},
                        {"proof", proof}});
}

void RendezvousClient::OnReady() {
  stage_ = Stage::kReady;
  heartbeat_timer_ = loop_.AddTimer(Millis(config_.settings.heartbeat_interval_ms),
                                    [this] { OnHeartbeatTimer(); });
  if (pending_join_) Send("join", {{"local_world_size", *pending_join_}});
  pending_join_.reset();
}

void RendezvousClient::OnHostPush(const Message& msg) {
  std::string err;
  if (msg.type == "heartbeat") return;
  if (msg.type == "waiting") {
    Log(LogLevel::kInfo, "rendezvous: waiting at {}: {}", HostName(),
        msg.body.value("message", std::string()));
    return;
  }
  if (msg.type == "round") {
    RoundInfo info;
    if (!RoundFromJson(msg.body, &info, &err))
      return Fatal(fmt::format("bad round from the rendezvous host {}: {}", HostName(), err));
    running_round_ = info.round;
    last_round_ = info.round;
    if (callbacks_.on_round) callbacks_.on_round(info);
    return;
  }
  if (msg.type == "restart") {
    int64_t round = -1;
    GetInt(msg.body, "round", &round, &err);
    // Only a restart of the round our workers run; after a local failure we rejoin anyway.
    if (!running_round_ || static_cast<int64_t>(*running_round_) != round) {
      Log(LogLevel::kDebug, "rendezvous: ignoring a restart of round {} from {} (workers run {})",
          round, HostName(), running_round_ ? std::to_string(*running_round_) : "no round");
      return;
    }
    running_round_.reset();
    if (callbacks_.on_restart_required)
      callbacks_.on_restart_required(msg.body.value("reason", std::string("restart")));
    return;
  }
  if (msg.type == "job_failed") {
    WorkerFailure failure;
    if (msg.body.contains("failure")) FailureFromJson(msg.body["failure"], &failure, &err);
    if (failure.message.empty()) failure.message = msg.body.value("message", std::string());
    return Finish([this, failure] {
      if (callbacks_.on_job_failed) callbacks_.on_job_failed(failure);
    });
  }
  if (msg.type == "done")
    return Finish([this] {
      if (callbacks_.on_done) callbacks_.on_done();
    });
  if (msg.type == "fatal")
    return Fatal(fmt::format("rendezvous host {}: {}", HostName(),
                             msg.body.value("message", std::string("fatal"))));
  Log(LogLevel::kDebug, "rendezvous: ignoring '{}' from {}", msg.type, HostName());
}

void RendezvousClient::OnClosed(const std::string& reason) {
  if (stage_ == Stage::kFinished) return;
  Fatal(fmt::format("lost the rendezvous host {}: {}", HostName(), reason));
}

void RendezvousClient::OnHeartbeatTimer() {
  heartbeat_timer_ = 0;
  if (stage_ != Stage::kReady) return;
  auto silent = MonoClock::now() - last_heard_;
  if (silent >= Millis(config_.settings.heartbeat_timeout_ms))
    return Fatal(fmt::format("lost the rendezvous host {}: silent for {} ms (heartbeat_timeout)",
                             HostName(), std::chrono::duration_cast<Millis>(silent).count()));
  Send("heartbeat");
  heartbeat_timer_ = loop_.AddTimer(Millis(config_.settings.heartbeat_interval_ms),
                                    [this] { OnHeartbeatTimer(); });
}

// ---- the end ----

void RendezvousClient::Fatal(const std::string& message) {
  Finish([this, message] {
    if (callbacks_.on_fatal) callbacks_.on_fatal(message);
  });
}

void RendezvousClient::Finish(std::function<void()> fn) {
  if (stage_ == Stage::kFinished) return;
  stage_ = Stage::kFinished;
  if (heartbeat_timer_) loop_.CancelTimer(heartbeat_timer_);
  heartbeat_timer_ = 0;
  // Called from inside the connection's callbacks: tear it down from the loop.
  auto alive = alive_;
  loop_.AddTimer(Millis(0), [this, alive, fn = std::move(fn)] {
    if (!*alive) return;
    conn_.reset();
    fn();
  });
}

}  // namespace elastic
