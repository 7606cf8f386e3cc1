#include "rendezvous/store_server.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>

#include "common/log.h"
#include "rendezvous/store_net.h"

namespace elastic {
namespace {

constexpr size_t kReadBudget = 1 << 20;        // per event, so one client cannot starve others
constexpr size_t kOutputHighWater = 4 << 20;   // stop reading a client that does not read replies

void RaiseFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      Log(LogLevel::kWarning, "store: could not raise the open-file limit: {}", strerror(errno));
    }
  }
}

}  // namespace

struct StoreServer::Connection {
  StoreConnId id;
  UniqueFd fd;
  std::string peer;
  StoreDialect dialect = StoreDialect::kUnknown;
  std::string in;
  size_t need = 1;  // bytes of input needed before parsing again
  std::string out;
  size_t out_pos = 0;
  uint32_t interest = EPOLLIN;
  bool eof = false;
  size_t pending() const { return out.size() - out_pos; }
};

StoreServer::StoreServer(EventLoop& loop, StoreLimits limits)
    : loop_(loop),
      limits_(limits),
      state_(StoreState::Events{
          [this](StoreConnId id) {
            if (Connection* c = Find(id)) {
              PutU8(&c->out, kWaitStopWaiting);
              Flush(*c);
            }
          },
          [this](StoreConnId id, uint8_t type, std::string_view key, std::string_view old_value,
                 std::string_view new_value) {
            if (Connection* c = Find(id)) {
              PutU8(&c->out, type);
              PutString(&c->out, key);
              PutString(&c->out, old_value);
              PutString(&c->out, new_value);
              Flush(*c);
            }
          }}),
      spare_fd_(open("/dev/null", O_RDONLY | O_CLOEXEC)),
      read_buf_(64 * 1024) {}

StoreServer::~StoreServer() {
  for (auto& [id, c] : conns_) loop_.Remove(c->fd.get());
  if (listen_fd_) loop_.Remove(listen_fd_.get());
}

bool StoreServer::Listen(const std::string& host, int port, std::string* err) {
  RaiseFileLimit();
  UniqueFd fd;
  if (!ListenTcp(host, port, &fd, &port_, err)) return false;
  listen_fd_ = std::move(fd);
  if (!loop_.Add(listen_fd_.get(), EPOLLIN, [this](uint32_t) { OnAccept(); }, err)) return false;
  Log(LogLevel::kDebug, "store: listening on {}:{}", host, port_);
  return true;
}

void StoreServer::SetPeerFilter(std::function<bool(const sockaddr_storage&)> filter) {
  peer_filter_ = std::move(filter);
}

void StoreServer::Set(const std::string& key, const std::string& value) { state_.Set(key, value); }

std::optional<std::string> StoreServer::Get(const std::string& key) const {
  const std::string* v = state_.Find(key);
  if (!v) return std::nullopt;
  return *v;
}

int64_t StoreServer::Add(const std::string& key, int64_t delta) {
  int64_t result = 0;
  std::string err;
  if (!state_.Add(key, delta, &result, &err)) {
    Log(LogLevel::kWarning, "store: Add({}): {}; resetting it to {}", key, err, delta);
    state_.Set(key, std::to_string(delta));
    result = delta;
  }
  return result;
}

StoreServer::Connection* StoreServer::Find(StoreConnId id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}

void StoreServer::OnAccept() {
  for (;;) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    int fd = accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&peer), &len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: refuse this one (free the spare, accept, close)
        // so the level-triggered listener does not spin.
        spare_fd_.Reset();
        UniqueFd refused(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        spare_fd_.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
        Log(LogLevel::kWarning, "store: out of file descriptors ({} connections): refused a client",
            conns_.size());
        continue;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        Log(LogLevel::kWarning, "store: accept: {}", strerror(errno));
      }
      return;
    }
    UniqueFd owned(fd);
    std::string who = PeerName(peer);
    if (peer_filter_ && !peer_filter_(peer)) {
      Log(LogLevel::kWarning, "store: refused connection from {}: rejected by the peer filter", who);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Connection>();
    c->id = next_id_++;
    c->peer = std::move(who);
    StoreConnId id = c->id;
    std::string err;
    if (!loop_.Add(fd, EPOLLIN, [this, id](uint32_t ev) { OnConnectionEvent(id, ev); }, &err)) {
      Log(LogLevel::kWarning, "store: {}", err);
      continue;
    }
    c->fd = std::move(owned);
    Log(LogLevel::kDebug, "store: connection {} from {}", id, c->peer);
    conns_.emplace(id, std::move(c));
  }
}

void StoreServer::OnConnectionEvent(StoreConnId id, uint32_t events) {
  Connection* c = Find(id);
  if (!c) return;
  if (events & EPOLLOUT) {
    Flush(*c);
    if (!(c = Find(id))) return;
    // Below the high-water mark again: resume requests held back.
    if (c->pending() < kOutputHighWater && !ProcessInput(*c)) return;
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    if (!ReadInput(*c)) return;
    if (!ProcessInput(*c)) return;
    if (c->eof) {
      Close(id, "closed by peer", false);
      return;
    }
  }
  UpdateInterest(*c);
}

bool StoreServer::ReadInput(Connection& c) {
  size_t budget = kReadBudget;
  while (budget > 0 && c.pending() < kOutputHighWater) {
    // Into a shared buffer, then append: growing c.in by a zero-filled chunk
    // per read would cost more than the small requests themselves.
    ssize_t n = recv(c.fd.get(), read_buf_.data(), read_buf_.size(), 0);
    if (n > 0) {
      c.in.append(read_buf_.data(), n);
      budget -= std::min<size_t>(budget, n);
      if (static_cast<size_t>(n) < read_buf_.size()) return true;  // drained for now
      continue;
    }
    if (n == 0) {
      c.eof = true;
      return true;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    Close(c.id, std::string("read: ") + strerror(errno), false);
    return false;
  }
  return true;
}

bool StoreServer::ProcessInput(Connection& c) {
  size_t pos = 0;
  std::string err;
  for (;;) {
    while (c.in.size() - pos >= c.need && c.pending() < kOutputHighWater) {
      std::string_view buf(c.in.data() + pos, c.in.size() - pos);
      ParseResult r = ParseStoreRequest(buf, limits_, &c.dialect, &scratch_);
      if (r.status == ParseStatus::kNeedMore) {
        c.need = r.need;
        break;
      }
      if (r.status == ParseStatus::kError) {
        Close(c.id, "protocol error: " + r.error, true);
        return false;
      }
      c.need = 1;
      if (!Execute(c, scratch_, &err)) {
        Close(c.id, err, true);
        return false;
      }
      pos += r.consumed;
    }
    Flush(c);
    // Stopped at the high-water mark but the socket took it all: go on with
    // the requests already buffered (no further event would announce them).
    if (c.pending() >= kOutputHighWater || c.eof || c.in.size() - pos < c.need) break;
  }
  c.in.erase(0, pos);
  return true;
}

bool StoreServer::Execute(Connection& c, const StoreRequest& req, std::string* err) {
  const auto& a = req.args;
  std::string& out = c.out;
  switch (req.op) {
    case StoreOp::kValidate:
      return true;
    case StoreOp::kPing:
      PutU32(&out, req.number);
      return true;
    case StoreOp::kSet:
      state_.Set(a[0], a[1]);
      return true;
    case StoreOp::kCompareSet:
      PutString(&out, state_.CompareSet(a[0], a[1], a[2]));
      return true;
    case StoreOp::kGet: {
      // A missing key reads as empty, as the 2.x server (clients WAIT first).
      const std::string* v = state_.Find(a[0]);
      PutString(&out, v ? std::string_view(*v) : std::string_view());
      return true;
    }
    case StoreOp::kAdd: {
      int64_t result = 0;
      if (!state_.Add(a[0], req.delta, &result, err)) return false;
      PutI64(&out, result);
      return true;
    }
    case StoreOp::kCheck:
      PutU8(&out, state_.Check(a) ? kCheckReady : kCheckNotReady);
      return true;
    case StoreOp::kWait:
      if (state_.Wait(c.id, a)) PutU8(&out, kWaitStopWaiting);
      return true;
    case StoreOp::kNumKeys:
      PutI64(&out, static_cast<int64_t>(state_.NumKeys()));
      return true;
    case StoreOp::kWatchKey:
      state_.Watch(c.id, a[0]);
      PutU8(&out, kWatchCallbackRegistered);
      return true;
    case StoreOp::kDeleteKey:
      PutI64(&out, state_.Delete(a[0]) ? 1 : 0);
      return true;
    case StoreOp::kAppend:
      state_.Append(a[0], a[1]);
      return true;
    case StoreOp::kMultiGet:
      for (std::string_view k : a) {
        const std::string* v = state_.Find(k);
        PutString(&out, v ? std::string_view(*v) : std::string_view());
      }
      return true;
    case StoreOp::kMultiSet:
      for (size_t i = 0; i + 1 < a.size(); i += 2) state_.Set(a[i], a[i + 1]);
      return true;
    case StoreOp::kCancelWait:
      state_.CancelWaits(c.id);
      PutU8(&out, kWaitCanceled);
      return true;
    case StoreOp::kQueuePush:
      state_.QueuePush(a[0], a[1]);
      return true;
    case StoreOp::kQueuePop: {
      std::string value;
      int64_t len = state_.QueuePop(a[0], &value);
      PutI64(&out, len);
      if (len > 0) PutString(&out, value);
      return true;
    }
    case StoreOp::kQueueLen:
      PutI64(&out, state_.QueueLen(a[0]));
      return true;
    case StoreOp::kListKeys: {
      std::vector<std::string_view> keys = state_.Keys();
      PutI64(&out, static_cast<int64_t>(keys.size()));
      for (std::string_view k : keys) PutString(&out, k);
      return true;
    }
    case StoreOp::kBarrier: {
      bool done = false;
      if (!state_.Barrier(c.id, a[0], req.delta, &done, err)) return false;
      if (done) PutU8(&out, kWaitStopWaiting);
      return true;
    }
  }
  *err = "protocol error: unhandled operation";
  return false;
}

void StoreServer::Flush(Connection& c) {
  while (c.pending() > 0) {
    ssize_t n = send(c.fd.get(), c.out.data() + c.out_pos, c.pending(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out_pos += n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    // The peer is gone; the read side reports it (EOF or error) and closes.
    c.out.clear();
    c.out_pos = 0;
    c.eof = true;
    break;
  }
  if (c.pending() == 0) {
    c.out.clear();
    c.out_pos = 0;
  } else if (c.out_pos > (1 << 20)) {
    c.out.erase(0, c.out_pos);
    c.out_pos = 0;
  }
  UpdateInterest(c);
}

void StoreServer::UpdateInterest(Connection& c) {
  uint32_t want = 0;
  if (c.pending() < kOutputHighWater) want |= EPOLLIN;
  if (c.pending() > 0) want |= EPOLLOUT;
  if (c.eof) want = EPOLLOUT;  // no more reads; EPOLLHUP/ERR still arrive
  if (want == c.interest) return;
  c.interest = want;
  std::string err;
  if (!loop_.Modify(c.fd.get(), want, &err)) Log(LogLevel::kWarning, "store: {}", err);
}

void StoreServer::Close(StoreConnId id, const std::string& reason, bool warn) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Connection& c = *it->second;
  Log(warn ? LogLevel::kWarning : LogLevel::kDebug, "store: disconnecting {} (connection {}): {}", c.peer,
      id, reason);
  loop_.Remove(c.fd.get());
  state_.ForgetConnection(id);
  conns_.erase(it);
}

}  // namespace elastic
