// RendezvousClient: the RendezvousHandler of an agent that joins a host's
// rendezvous over TCP. Connects (retrying while the host is not up yet, until
// join_timeout), answers the host's challenge and checks the host's proof in its
// welcome (mutual authentication, auth.h), then relays the agent's calls as
// messages and the host's pushes as callbacks. Every stage has a deadline: no
// challenge or no welcome within auth_timeout, no round within join_timeout +
// last_call_timeout of joining (renewed by each `waiting`), a host silent for
// heartbeat_timeout; each, like losing the connection, a bad message or a
// message that cannot apply now (a `done` before this agent's workers
// succeeded), is fatal with a message naming the host and what was wrong.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/event_loop.h"
#include "rendezvous/auth.h"
#include "rendezvous/connection.h"
#include "common/net.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/rendezvous_settings.h"

namespace elastic {

struct ClientConfig {
  RendezvousSettings settings;
  std::string run_id;
  std::string node_name;
  std::string host;  // as given in --rdzv-endpoint
  int port = 29400;
  // host:port resolved before the loop runs (CreateC10dRendezvous resolves the
  // endpoint once, up front). Unset, `host` must be a numeric address (the
  // failover successors: addresses a host saw): the client never calls
  // getaddrinfo for a name, so no DNS lookup ever blocks the event loop.
  std::optional<SocketAddress> address;
  // Failover (failover_rendezvous.h); unset, the client behaves as described above.
  // The port this agent advertises in its hello as its own rendezvous port, given
  // the local address of its connection to the host (0: none).
  std::function<int(const std::string& local_addr)> listen_port;
  // Set: losing the host after its welcome (closed, silent) calls this instead of on_fatal.
  std::function<void(const std::string& why)> on_host_lost;
  // Set: a host that cannot be reached, or sends no challenge within
  // candidate_timeout_ms, or is stale (HostIsStale) calls this instead of retrying.
  std::function<void(const std::string& why)> on_unreachable;
  int64_t candidate_timeout_ms = 0;
  std::optional<uint64_t> last_round_run;  // fencing, and member_of in joins
  // Set (a stuck host probing for a newer one): a host whose challenge names no
  // later completed round than this is unreachable (ShouldYield); on_welcomed
  // is called once one is joined.
  std::optional<int64_t> only_ahead_of;
  // The regime (RoundInfo::regime) a host must belong to: one that names another is
  // unreachable (it hosts a later run with the same run id, not ours). "": any.
  std::string regime;
  std::function<void()> on_welcomed;
  // Set: a status request (`elasticrun status`): once welcomed, the client asks
  // the host for its view and calls this with it (launcher/job_status.h), instead
  // of joining; whatever else ends it calls on_fatal.
  std::function<void(const nlohmann::json& view)> on_status;
};

class RendezvousClient : public RendezvousHandler {
 public:
  RendezvousClient(EventLoop& loop, ClientConfig config);
  ~RendezvousClient() override;

  void SetCallbacks(Callbacks callbacks) override { callbacks_ = std::move(callbacks); }
  void Join(int local_world_size) override;
  void SetStandBy(std::string reason) override { standby_reason_ = std::move(reason); }
  void Watch() override;  // connects like Join, sends no join (the host keeps it as an observer)
  void ReportWorkerFailure(const WorkerFailure& failure) override;
  void ReportSucceeded() override;
  void EndJob(EndReason reason, const WorkerFailure& failure, const std::string& message) override;
  void Shutdown(int signal) override;
  std::string Describe() const override;

  AuthMethod auth_method() const { return auth_; }  // as the host's challenge asked
  // The round this agent stands by for as a spare, since its last round (group_rank -1;
  // no successors: a latecomer, not a voter).
  const std::optional<RoundInfo>& standby() const { return standby_; }
  // The job-wide restarts used, as the host last told (a round, or a restart that
  // it counted while the next round forms); -1 before any.
  int restarts_used() const { return restarts_used_; }
  const TrafficCounters* traffic() const { return conn_ ? &conn_->counters() : nullptr; }

 private:
  // An agent's connection to its host, one way through:
  //   kIdle -Start-> kConnecting -connected-> kAuthenticating -welcome-> kReady
  //   kConnecting -refused/unreachable-> kConnecting (retry until join_timeout)
  //   kAuthenticating -closed before a challenge-> kConnecting (retry)
  //   any -done / fatal / host lost / unreachable candidate / Shutdown-> kFinished
  // kFinished is final: every timer is cancelled and the owner's callback runs
  // on a later turn of the loop (Finish).
  enum class Stage { kIdle, kConnecting, kAuthenticating, kReady, kFinished };

  void StartConnecting();
  void Connect();
  void OnConnectEvent();
  void RetryConnect(const std::string& why);
  void OnMessage(const Message& msg);
  void OnAuthMessage(const HostMessage& msg);
  void OnChallenge(const ChallengeMsg& challenge);
  bool RequiredAuth(AuthMethod* method, std::string* why) const;
  void OnWelcome(const WelcomeMsg& welcome);
  void OnReady();
  void OnHostPush(const HostMessage& msg);
  void OnDone(const std::string& message);
  void OnStandBy(const RoundInfo& round, const std::string& why);
  void SendJoin(int local_world_size);
  void ArmRoundDeadline();
  void OnAuthDeadline();
  void OnClosed(const std::string& reason);
  void OnHeartbeatTimer();
  void Fatal(const std::string& message, EndReason reason = EndReason::kError);
  void HostLost(const std::string& why);
  void Unreachable(const std::string& why);
  void OnCandidateDeadline();
  void Finish(std::function<void()> fn);
  void Send(std::string_view type, nlohmann::json body = nlohmann::json::object());
  std::string HostName() const;

  EventLoop& loop_;
  ClientConfig config_;
  Callbacks callbacks_;
  Stage stage_ = Stage::kIdle;
  SocketAddress addr_;          // resolved once, in the constructor (see ClientConfig::address)
  std::string resolve_error_;  // why addr_ could not be had; fatal at the first Join
  UniqueFd connecting_fd_;
  std::unique_ptr<RendezvousConnection> conn_;
  MonoClock::time_point connect_deadline_{};
  Millis retry_delay_{0};
  std::string last_connect_error_;
  std::optional<int> pending_join_;         // Join() called before the host welcomed us
  std::optional<uint64_t> running_round_;   // workers run in this round
  std::optional<uint64_t> succeeded_round_; // ReportSucceeded() for this round
  bool awaiting_round_ = false;             // Join() called, no round since: maybe wait-listed
  bool watching_ = false;                   // Watch() called, no Join() since: an observer
  uint64_t last_round_ = 0;
  int restarts_used_ = -1;                  // restarts_used()
  Handshake handshake_;  // this connection's challenge and hello: what both proofs cover
  AuthMethod auth_ = AuthMethod::kNone;     // what the host's challenge asked for
  AuthMethod proof_auth_ = AuthMethod::kNone;  // how both proofs are made: auth_, or munge for a
                                               // status asker without a token host's token
  std::string last_waiting_;                // printed once, not every tick
  std::optional<RoundInfo> standby_;        // a spare's round (waiting {standby})
  std::string standby_reason_;              // SetStandBy: sent with every join
  bool challenged_ = false;                 // the challenge came (then: await welcome)
  MonoClock::time_point last_heard_{};
  Timer retry_timer_;
  Timer heartbeat_timer_;  // every heartbeat_interval while kReady
  Timer auth_timer_;       // challenge + welcome within auth_timeout
  Timer round_timer_;      // a round after join
  Timer candidate_timer_;  // a candidate host's challenge (on_unreachable)
  std::string local_addr_;  // of the connection to the host
  Posted finish_;           // the owner's terminal callback (Finish), dropped with the client
};

}  // namespace elastic
