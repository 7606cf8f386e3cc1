// RendezvousHost: the agent that hosts the rendezvous. It runs the state machine
// (rendezvous_state.h) for every agent, talks the framed protocol (messages.h)
// with the others over TCP, and serves the workers' TCPStore: a new StoreServer on
// a new ephemeral port for every round (only round members' addresses and loopback
// may connect). The previous round's store is closed when the next round
// completes, with its listener and every connection: the workers of a round never
// see an earlier round's keys (PyTorch 2.x clients use no per-attempt prefix), and
// a straggler of an old round cannot reach the new keyspace. It is also the
// RendezvousHandler of its own agent (node id kLocalNode).
//
// The host never ends before the others: its own terminal callback (on_done,
// on_fatal, on_job_failed) waits until every other agent has disconnected, or
// close_timeout passed, so the store outlives every worker that needs it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/event_loop.h"
#include "common/log_limit.h"
#include "common/socket_owner.h"
#include "common/unique_fd.h"
#include "rendezvous/auth.h"
#include "rendezvous/connection.h"
#include "rendezvous/host_observer.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/rendezvous_settings.h"
#include "rendezvous/rendezvous_state.h"
#include "store/store_server.h"

namespace elastic {

struct HostConfig {
  RendezvousSettings settings;
  std::string run_id;
  std::string node_name;   // this agent, in messages
  std::string store_addr;  // MASTER_ADDR: how every node reaches this machine
  std::string bind_addr;   // where the store listens ("0.0.0.0" or the endpoint's address)
  AuthMethod auth = AuthMethod::kNone;
  // Where the other agents reach this rendezvous (successor lists); "" = store_addr.
  std::string rdzv_addr;
  // A successor taking over after the host's loss (failover_rendezvous.h): the
  // state it continues from, and the last round its own workers ran.
  std::optional<CarriedRound> carried;
  int64_t local_member_of = -1;
  // Told every step of the state machine (the job's event record); null: none.
  HostObserver* observer = nullptr;
  // The regime it hosts (RoundInfo::regime): a taking-over successor carries its
  // round's; "" = a fresh regime (a new nonce).
  std::string regime;
  // Who owns the socket of a local peer of the workers' store (it admits the
  // job's user and root: store_peers.h); null: the kernel's (KernelSocketOwners).
  std::shared_ptr<SocketOwners> socket_owners;
};

class RendezvousHost : public RendezvousHandler {
 public:
  static constexpr NodeId kLocalNode = 1;

  // `listener` is the bound, listening rendezvous socket (host selection binds it).
  static std::unique_ptr<RendezvousHost> Create(EventLoop& loop, HostConfig config,
                                                UniqueFd listener, std::string* err);
  ~RendezvousHost() override;

  void SetCallbacks(Callbacks callbacks) override { callbacks_ = std::move(callbacks); }
  void Join(int local_world_size) override;
  void SetStandBy(std::string reason) override { local_standby_ = std::move(reason); }
  void Watch() override;  // the local agent connected, not joined: told the end like any node
  void ReportWorkerFailure(const WorkerFailure& failure) override;
  void ReportSucceeded() override;
  void EndJob(EndReason reason, const WorkerFailure& failure, const std::string& message) override;
  void Shutdown(int signal) override;
  std::string Describe() const override;

  int port() const;
  int store_port() const { return store_ ? store_->port() : 0; }  // this round's; 0 before
  const RendezvousState& state() const { return state_; }
  TrafficCounters Traffic() const;  // summed over every connection so far

 private:
  struct Peer {
    std::unique_ptr<RendezvousConnection> conn;
    Handshake handshake;  // what this connection's challenge said (its nonce, round...), then the hello
    std::string addr;
    bool authenticated = false;
    bool refused = false;  // an error is on its way; closing
    bool status_only = false;  // a munge-proven status asker of a token host (hello's observer)
    Timer auth_deadline;   // a hello within auth_timeout (cancelled with the peer)
  };

  RendezvousHost(EventLoop& loop, HostConfig config, UniqueFd listener);
  bool Start(std::string* err);
  void ConnectLocal();
  void OnAccept();
  // At max_unauthenticated the listener is taken out of the loop: further
  // agents wait in the kernel's accept queue (not closed, so they need no
  // retry) until a pre-authentication place frees up.
  void PauseAccepting();
  void LeftPreAuth();  // one fewer unauthenticated peer: accept again if paused
  void OnPeerMessage(NodeId id, const Message& msg);
  void OnStatusRequest(NodeId id, Peer& peer);
  void OnStatusAskerMessage(NodeId id, Peer& peer, const AgentMessage& msg);
  void OnHello(NodeId id, Peer& peer, const AgentMessage& msg);
  void OnAuthDeadline(NodeId id);
  void TellSpares();
  void OnPeerClosed(NodeId id, const std::string& reason);
  void Refuse(Peer& peer, const std::string& why);
  void Feed(const RendezvousEvent& event);
  void Carry(const RendezvousAction& action);
  void CarryLocal(const RendezvousAction& action);
  void OpenRoundStore(uint64_t round);               // a fresh store for this round
  RoundInfo RoundWithStore(RoundInfo round) const;  // + the agent store workers use
  void SendToPeer(const RendezvousAction& action);
  void AllowRoundPeers();
  void ScheduleDeadline();
  void OnHeartbeatTick();
  void FinishLocal(std::function<void()> terminal);
  void MaybeRunTerminal();
  // A warning whoever reaches the port can cause: a few lines per second, then
  // a count of those held back (common/log_limit.h).
  void Warn(LogRateLimiter& limiter, const std::string& message);

  EventLoop& loop_;
  HostConfig config_;
  UniqueFd listener_;
  std::unique_ptr<StoreServer> store_;  // the current round's (null before the first)
  std::optional<uint64_t> store_round_;
  RendezvousState state_;
  Callbacks callbacks_;
  std::map<NodeId, Peer> peers_;
  NodeId next_id_ = kLocalNode + 1;
  int unauthenticated_ = 0;       // peers not (yet) authenticated, refused ones included
  bool accept_paused_ = false;    // at max_unauthenticated: the listener is not watched
  uint64_t accept_pauses_ = 0;    // times accepting paused (logged rate-limited)
  LogRateLimiter refuse_log_;     // strangers refused before (or at) their hello
  LogRateLimiter drop_log_;       // authenticated peers dropped for what they (or a relay) sent
  std::set<std::string> member_addrs_;  // the store admits these remote peers (the round's nodes)
  std::set<std::string> local_addrs_;   // this machine's: a peer from one is local (its user is checked)
  uint32_t job_uid_ = 0;                // the store's local peers must be this user (or root)
  uint64_t local_round_ = 0;
  int64_t local_member_of_ = -1;  // the last round the local workers ran in
  bool local_connected_ = false;
  std::string local_standby_;      // SetStandBy: sent with the local agent's joins
  Timer deadline_timer_;   // the state machine's next deadline (NextDeadline)
  Timer heartbeat_timer_;  // every heartbeat_interval
  Timer close_timer_;      // the end: the others get close_timeout to disconnect
  std::function<void()> terminal_;  // local terminal callback, run once peers are gone
  bool shut_down_ = false;
  std::string last_waiting_;
  TrafficCounters closed_traffic_;
  // The local agent's callbacks run from the loop, never inside a peer's
  // message: dropped if the host is destroyed first.
  Posted posted_;
};

}  // namespace elastic
