// StoreServer: a TCP key-value server that speaks PyTorch's TCPStore wire
// protocol (both the 1.13 and the 2.x dialect, chosen per connection), so real
// PyTorch clients (init_process_group with TORCHELASTIC_USE_AGENT_STORE=True)
// and our agents share one store.
//
// Single-threaded on the caller's EventLoop: non-blocking sockets, one input
// buffer per connection fed to the incremental frame parser, output buffered
// with EPOLLOUT backpressure. A client that breaks the limits or sends garbage
// is disconnected with a logged reason; nobody else is affected.
//
// Every bound is in StoreLimits (store_protocol.h): connections (a cap below
// RLIMIT_NOFILE, and a spare descriptor to refuse clients with when out of
// them), unread output per connection, bytes of a half-sent frame and how long
// it may stay half-sent, pending WAITs and watches per connection, and the
// keyspace's memory budget. Warnings a peer can trigger are rate-limited and
// anything from the network in them is escaped (common/log_limit.h).
//
// Contracts: the server owns the listening socket and every connection; the
// loop must outlive it. Not thread-safe (like EventLoop).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/event_loop.h"
#include "common/log_limit.h"
#include "common/unique_fd.h"
#include "store/store_protocol.h"
#include "store/store_state.h"

namespace elastic {

class StoreServer {
 public:
  StoreServer(EventLoop& loop, StoreLimits limits = {});
  ~StoreServer();  // closes listener and all connections
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // Binds and listens; port 0 picks an ephemeral port; "0.0.0.0" and "::" ok.
  // Also raises RLIMIT_NOFILE's soft limit to the hard limit (thousands of
  // clients each hold two connections).
  bool Listen(const std::string& host, int port, std::string* err);
  int port() const { return port_; }

  // Connections from peers for which this returns false are closed at accept,
  // counted and logged (rate-limited) with the reason it gives in *why. `local`
  // is the address of ours the peer reached (getsockname of the accepted
  // socket). Default: accept all. Listening on "::" makes IPv4 peers appear as
  // v4-mapped IPv6 addresses (::ffff:a.b.c.d); "0.0.0.0" gives AF_INET. Called
  // on the loop: it must not block (rendezvous/store_peers.h's asks the kernel).
  using PeerFilter =
      std::function<bool(const sockaddr_storage& peer, const sockaddr_storage& local, std::string* why)>;
  void SetPeerFilter(PeerFilter filter);

  // Called as each connection is closed, with the reason (peer closed,
  // protocol error, a limit). For tests and metrics; may not close others.
  void SetCloseObserver(std::function<void(StoreConnId id, const std::string& reason)> observer) {
    close_observer_ = std::move(observer);
  }

  // In-process access for the agent hosting the store (no socket), same
  // keyspace. Keys are raw (PyTorch clients prefix theirs with "/").
  void Set(const std::string& key, const std::string& value);  // wakes waiters
  std::optional<std::string> Get(const std::string& key) const;
  int64_t Add(const std::string& key, int64_t delta);  // a non-integer value counts as 0
  size_t NumConnections() const { return conns_.size(); }
  // Connections accepted and closed at once: over max_connections, out of
  // descriptors, or rejected by the peer filter.
  uint64_t RefusedConnections() const { return refused_; }
  size_t MaxConnections() const { return max_connections_; }
  size_t StoreBytes() const { return state_.bytes(); }  // held, overhead included (StoreState)

 private:
  struct Connection;
  void OnAccept();
  bool AcceptOne();                          // false: nothing more to accept now
  bool PeerAdmitted(int fd, const sockaddr_storage& peer, std::string* why) const;  // the filter, given our address
  void RefuseOutOfDescriptors();
  void PauseAccept();
  void ResumeAccept();
  void Refused(const std::string& who, const std::string& why);
  bool Admit(const Connection& c, const StoreRequest& req, std::string* err) const;
  bool ReplyFits(const Connection& c, size_t bytes, std::string* err) const;
  void PushEvent(StoreConnId id, const std::string& bytes);  // a WAIT or watch reply
  void Doom(Connection& c, std::string reason);  // close from the loop, not from here
  void CloseDoomed();
  void ArmTimers(Connection& c);
  void OnPartialFrameTimer(StoreConnId id);
  void OnStallTimer(StoreConnId id);
  void OnConnectionEvent(StoreConnId id, uint32_t events);
  bool ReadInput(Connection& c);            // false: connection closed
  bool ProcessInput(Connection& c);         // false: connection closed
  bool Execute(Connection& c, const StoreRequest& req, std::string* err);
  void StepListings();                      // LIST_KEYS a step per loop turn
  void FinishListing(Connection& c);
  void ScheduleSweep();                     // dropped WAITs' keys, a step per loop turn
  void Flush(Connection& c);                // writes what the socket takes
  void CountOutput(Connection& c);          // brings output_bytes_ up to date
  void UpdateInterest(Connection& c);
  void Close(StoreConnId id, const std::string& reason, bool warn);
  void Warn(LogRateLimiter& limiter, const std::string& message);
  Connection* Find(StoreConnId id);

  EventLoop& loop_;
  StoreLimits limits_;
  StoreState state_;
  UniqueFd listen_fd_;
  int port_ = -1;
  PeerFilter peer_filter_;
  std::function<void(StoreConnId, const std::string&)> close_observer_;
  StoreConnId next_id_ = 1;
  std::unordered_map<StoreConnId, std::unique_ptr<Connection>> conns_;
  UniqueFd spare_fd_;  // released to refuse a client when out of descriptors
  size_t max_connections_ = 0;
  size_t input_bytes_ = 0;   // sum of every connection's buffered input
  size_t output_bytes_ = 0;  // sum of every connection's unread output, as of its last Flush
  uint64_t refused_ = 0;
  bool accept_paused_ = false;
  Timer accept_timer_;
  std::vector<StoreConnId> doomed_;
  std::vector<std::string> doomed_reasons_;
  Timer doom_timer_;  // closes the doomed connections on the next turn
  std::vector<StoreConnId> listing_conns_;  // with a LIST_KEYS under way
  Timer listing_timer_;
  Timer sweep_timer_;
  LogRateLimiter refuse_log_;  // one per kind of warning a peer can cause
  LogRateLimiter client_log_;
  StoreRequest scratch_;        // reused across requests to avoid allocations
  std::vector<char> read_buf_;  // one recv buffer for all connections
};

}  // namespace elastic
