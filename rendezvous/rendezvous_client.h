// RendezvousClient: the RendezvousHandler of an agent that joins a host's
// rendezvous over TCP. Connects (retrying while the host is not up yet, until
// join_timeout), answers the host's challenge, then relays the agent's calls as
// messages and the host's pushes as callbacks. Losing the host (connection
// closed, or silent for heartbeat_timeout) is fatal and names the host.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/event_loop.h"
#include "rendezvous/connection.h"
#include "rendezvous/net.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/rendezvous_settings.h"

namespace elastic {

struct ClientConfig {
  RendezvousSettings settings;
  std::string run_id;
  std::string node_name;
  std::string host;  // as given in --rdzv-endpoint
  int port = 29400;
};

class RendezvousClient : public RendezvousHandler {
 public:
  RendezvousClient(EventLoop& loop, ClientConfig config);
  ~RendezvousClient() override;

  void SetCallbacks(Callbacks callbacks) override { callbacks_ = std::move(callbacks); }
  void Join(int local_world_size) override;
  void ReportWorkerFailure(const WorkerFailure& failure) override;
  void ReportSucceeded() override;
  void Shutdown() override;
  std::string Describe() const override;

  const TrafficCounters* traffic() const { return conn_ ? &conn_->counters() : nullptr; }

 private:
  enum class Stage { kIdle, kConnecting, kAuthenticating, kReady, kFinished };

  void Connect();
  void OnConnectEvent();
  void RetryConnect(const std::string& why);
  void OnMessage(const Message& msg);
  void OnChallenge(const Message& msg);
  void OnReady();
  void OnHostPush(const Message& msg);
  void OnClosed(const std::string& reason);
  void OnHeartbeatTimer();
  void Fatal(const std::string& message);
  void Finish(std::function<void()> fn);
  void Send(std::string_view type, nlohmann::json body = nlohmann::json::object());
  std::string HostName() const;

  EventLoop& loop_;
  ClientConfig config_;
  Callbacks callbacks_;
  Stage stage_ = Stage::kIdle;
  SocketAddress addr_;
  UniqueFd connecting_fd_;
  std::unique_ptr<RendezvousConnection> conn_;
  MonoClock::time_point connect_deadline_{};
  Millis retry_delay_{0};
  std::string last_connect_error_;
  std::optional<int> pending_join_;         // Join() called before the host welcomed us
  std::optional<uint64_t> running_round_;   // workers run in this round
  uint64_t last_round_ = 0;
  MonoClock::time_point last_heard_{};
  EventLoop::TimerId retry_timer_ = 0;
  EventLoop::TimerId heartbeat_timer_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace elastic
