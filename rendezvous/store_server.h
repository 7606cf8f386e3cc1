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
#include "common/unique_fd.h"
#include "rendezvous/store_protocol.h"
#include "rendezvous/store_state.h"

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

  // Connections from peers for which this returns false are closed at accept
  // (logged). Default: accept all. Listening on "::" makes IPv4 peers appear
  // as v4-mapped IPv6 addresses (::ffff:a.b.c.d); "0.0.0.0" gives AF_INET.
  void SetPeerFilter(std::function<bool(const sockaddr_storage& peer)> filter);

  // In-process access for the agent hosting the store (no socket), same
  // keyspace. Keys are raw (PyTorch clients prefix theirs with "/").
  void Set(const std::string& key, const std::string& value);  // wakes waiters
  std::optional<std::string> Get(const std::string& key) const;
  int64_t Add(const std::string& key, int64_t delta);  // a non-integer value counts as 0
  size_t NumConnections() const { return conns_.size(); }

 private:
  struct Connection;
  void OnAccept();
  void OnConnectionEvent(StoreConnId id, uint32_t events);
  bool ReadInput(Connection& c);            // false: connection closed
  bool ProcessInput(Connection& c);         // false: connection closed
  bool Execute(Connection& c, const StoreRequest& req, std::string* err);
  void Flush(Connection& c);                // writes what the socket takes
  void UpdateInterest(Connection& c);
  void Close(StoreConnId id, const std::string& reason, bool warn);
  Connection* Find(StoreConnId id);

  EventLoop& loop_;
  StoreLimits limits_;
  StoreState state_;
  UniqueFd listen_fd_;
  int port_ = -1;
  std::function<bool(const sockaddr_storage&)> peer_filter_;
  StoreConnId next_id_ = 1;
  std::unordered_map<StoreConnId, std::unique_ptr<Connection>> conns_;
  UniqueFd spare_fd_;  // released to refuse a client when out of descriptors
  StoreRequest scratch_;        // reused across requests to avoid allocations
  std::vector<char> read_buf_;  // one recv buffer for all connections
};

}  // namespace elastic
