#include "store/store_server.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>

#include "common/log.h"
#include "store/store_net.h"

namespace elastic {
namespace {

constexpr size_t kReadBudget = 1 << 20;  // per event, so one client cannot starve others
constexpr int kAcceptBudget = 64;        // per event, then back to epoll
constexpr size_t kKeepCapacity = 1 << 20;  // an idle buffer above this is freed
// LIST_KEYS keys per listing per loop turn: about a millisecond, so a PING waits
// no longer behind a listing of millions of keys.
constexpr size_t kListingStep = 16384;
constexpr size_t kSweepStep = 16384;  // keys of dropped WAITs unlisted per loop turn, likewise

// Raises the soft limit to the hard one; returns the soft limit in force.
size_t RaiseFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      rl = raised;
    } else {
      Log(LogLevel::kWarning, "store: could not raise the open-file limit: {}", strerror(errno));
    }
  }
  return rl.rlim_cur == RLIM_INFINITY ? size_t{1} << 20 : static_cast<size_t>(rl.rlim_cur);
}

// The connection cap: explicit, or the descriptor limit less the agent's reserve.
size_t ConnectionCap(const StoreLimits& limits, size_t fd_limit) {
  if (limits.max_connections != 0) return limits.max_connections;
  if (fd_limit > 2 * limits.fd_reserve) return fd_limit - limits.fd_reserve;
  return std::max<size_t>(1, fd_limit / 2);
}

void ShrinkIfIdle(std::string* buf) {
  if (buf->empty() && buf->capacity() > kKeepCapacity) std::string().swap(*buf);
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
  bool doomed = false;  // closing from the loop (Doom); nothing more is done for it
  Timer partial_timer;  // armed while a frame is half-sent
  MonoClock::time_point last_input{};
  MonoClock::time_point frame_start{};  // when the first byte of the buffered frame arrived
  Timer stall_timer;  // armed while output is above the high-water mark
  size_t pending() const { return out.size() - out_pos; }
  size_t counted_out = 0;  // its share of output_bytes_
  // A LIST_KEYS under way (StepListings): its keys so far, framed; the count goes
  // in front once it is complete. Nothing else of this connection runs meanwhile.
  StoreState::ListingId listing = 0;
  std::string listing_out;
  int64_t listing_keys = 0;
  bool partial() const { return !in.empty() && in.size() < need; }
};

StoreServer::StoreServer(EventLoop& loop, StoreLimits limits)
    : loop_(loop),
      limits_(limits),
      state_(StoreState::Events{[this](StoreConnId id) { PushEvent(id, std::string(1, kWaitStopWaiting)); },
                                [this](StoreConnId id, uint8_t type, std::string_view key,
                                       std::string_view old_value, std::string_view new_value) {
                                  // 1.13 watch callbacks: same output cap as replies.
                                  std::string event;
                                  PutU8(&event, type);
                                  PutString(&event, key);
                                  PutString(&event, old_value);
                                  PutString(&event, new_value);
                                  PushEvent(id, event);
                                }},
             limits),
      spare_fd_(open("/dev/null", O_RDONLY | O_CLOEXEC)),
      read_buf_(64 * 1024) {}

StoreServer::~StoreServer() {
  for (auto& [id, c] : conns_) loop_.Remove(c->fd.get());
  if (listen_fd_) loop_.Remove(listen_fd_.get());
  // The timers (connections' and ours) are handles: they cancel themselves.
}

bool StoreServer::Listen(const std::string& host, int port, std::string* err) {
  max_connections_ = ConnectionCap(limits_, RaiseFileLimit());
  UniqueFd fd;
  if (!ListenTcp(host, port, &fd, &port_, err)) return false;
  listen_fd_ = std::move(fd);
  if (!loop_.Add(listen_fd_.get(), EPOLLIN, [this](uint32_t) { OnAccept(); }, err)) return false;
  Log(LogLevel::kDebug, "store: listening on {}:{} (at most {} connections)", host, port_,
      max_connections_);
  return true;
}

void StoreServer::SetPeerFilter(PeerFilter filter) {
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
  for (int i = 0; i < kAcceptBudget; ++i) {
    if (!AcceptOne()) return;
  }
  // More may be pending: the level-triggered listener fires again after the
  // other ready descriptors had their turn.
}

bool StoreServer::PeerAdmitted(int fd, const sockaddr_storage& peer, std::string* why) const {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) local = sockaddr_storage{};
  return peer_filter_(peer, local, why);
}

bool StoreServer::AcceptOne() {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  int fd = accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno == EINTR || errno == ECONNABORTED) return true;
    if (errno == EMFILE || errno == ENFILE) {
      RefuseOutOfDescriptors();
      return false;  // back to epoll: never retry the same pending client here
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) Warn(refuse_log_, fmt::format("store: accept: {}", strerror(errno)));
    return false;
  }
  UniqueFd owned(fd);
  std::string who = PeerName(peer);
  if (conns_.size() >= max_connections_) {
    Refused(who, "the store has its maximum of connections");
    return true;
  }
  std::string why;
  if (peer_filter_ && !PeerAdmitted(fd, peer, &why)) {
    Refused(who, "rejected by the peer filter: " + why);
    return true;
  }
  // TCP_NODELAY comes with the socket: ListenTcp set it on the listener.
  auto c = std::make_unique<Connection>();
  c->id = next_id_++;
  c->peer = std::move(who);
  StoreConnId id = c->id;
  std::string err;
  if (!loop_.Add(fd, EPOLLIN, [this, id](uint32_t ev) { OnConnectionEvent(id, ev); }, &err)) {
    Warn(refuse_log_, "store: " + err);
    return true;
  }
  c->fd = std::move(owned);
  Log(LogLevel::kDebug, "store: connection {} from {}", id, c->peer);
  conns_.emplace(id, std::move(c));
  return true;
}

// Out of descriptors: free the spare, accept the pending client into it and
// close it at once (it sees EOF, not a hang), take the spare back. Without a
// spare (it could not be reopened) stop listening until a connection closes
// or accept_retry_ms passed, so the level-triggered listener cannot spin.
void StoreServer::RefuseOutOfDescriptors() {
  if (!spare_fd_) {
    PauseAccept();
    return;
  }
  spare_fd_.Reset();
  UniqueFd refused(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  bool accepted = refused.valid();
  refused.Reset();  // closed before the spare is reopened: that is the descriptor it needs
  spare_fd_.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (accepted) {
    Refused("a client", "out of file descriptors");
  }
  if (!accepted || !spare_fd_) PauseAccept();
}

void StoreServer::PauseAccept() {
  if (accept_paused_) return;
  accept_paused_ = true;
  std::string err;
  if (!loop_.Modify(listen_fd_.get(), 0, &err)) Warn(refuse_log_, "store: " + err);
  Warn(refuse_log_, fmt::format("store: out of file descriptors with {} connections: not accepting for up to {} ms",
                                conns_.size(), limits_.accept_retry_ms));
  accept_timer_ = loop_.After(Millis(limits_.accept_retry_ms), [this] { ResumeAccept(); });
}

void StoreServer::ResumeAccept() {
  if (!accept_paused_) return;
  accept_paused_ = false;
  accept_timer_.Cancel();
  if (!spare_fd_) spare_fd_.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  std::string err;
  if (!loop_.Modify(listen_fd_.get(), EPOLLIN, &err)) Warn(refuse_log_, "store: " + err);
}

void StoreServer::Refused(const std::string& who, const std::string& why) {
  ++refused_;
  Warn(refuse_log_, fmt::format("store: refused connection from {}: {} ({} refused so far)", who, why, refused_));
}

void StoreServer::Warn(LogRateLimiter& limiter, const std::string& message) {
  uint64_t dropped = 0;
  if (limiter.Allow(loop_.Now(), &dropped)) Log(LogLevel::kWarning, "{}{}", message, MoreLikeIt(dropped));
}

void StoreServer::OnConnectionEvent(StoreConnId id, uint32_t events) {
  Connection* c = Find(id);
  if (!c || c->doomed) return;
  if (events & EPOLLOUT) {
    Flush(*c);
    if (!(c = Find(id))) return;
    // Below the high-water mark again: resume requests held back.
    if (c->pending() < limits_.output_high_water && !ProcessInput(*c)) return;
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
  ArmTimers(*c);
}

bool StoreServer::ReadInput(Connection& c) {
  size_t budget = kReadBudget;
  while (budget > 0 && c.pending() < limits_.output_high_water && !c.listing) {
    // Into a shared buffer, then append: growing c.in by a zero-filled chunk
    // per read would cost more than the small requests themselves.
    ssize_t n = recv(c.fd.get(), read_buf_.data(), read_buf_.size(), 0);
    if (n > 0) {
      c.last_input = loop_.Now();
      if (c.in.empty()) c.frame_start = c.last_input;
      c.in.append(read_buf_.data(), n);
      input_bytes_ += n;
      if (input_bytes_ > limits_.max_input_total) {
        Close(c.id, fmt::format("the store's input budget of {} bytes is exhausted ({} buffered here)",
                                limits_.max_input_total, c.in.size()),
              true);
        return false;
      }
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
    while (c.in.size() - pos >= c.need && c.pending() < limits_.output_high_water && !c.listing) {
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
      if (!Admit(c, scratch_, &err) || !Execute(c, scratch_, &err)) {
        Close(c.id, err, true);
        return false;
      }
      if (c.doomed) return false;  // an event it caused overflowed its own output
      pos += r.consumed;
    }
    Flush(c);
    // Stopped at the high-water mark but the socket took it all: go on with
    // the requests already buffered (no further event would announce them).
    if (c.pending() >= limits_.output_high_water || c.eof || c.in.size() - pos < c.need ||
        c.listing)
      break;
  }
  c.in.erase(0, pos);
  input_bytes_ -= pos;
  // What is left is the start of the next frame; it came with the last read.
  if (pos > 0 && !c.in.empty()) c.frame_start = c.last_input;
  // need counted from the frame's start, which is now the buffer's start.
  ShrinkIfIdle(&c.in);
  return true;
}

// Refuses, before anything changes, a write that breaks max_value or the
// memory budget, a WAIT/BARRIER or WATCH_KEY past the per-connection bound.
bool StoreServer::Admit(const Connection& c, const StoreRequest& req, std::string* err) const {
  const auto& a = req.args;
  std::string why;
  bool ok = true;
  switch (req.op) {
    case StoreOp::kSet:
    case StoreOp::kQueuePush:
      ok = state_.Admit(a[0], a[1].size(), 0, &why);
      break;
    case StoreOp::kCompareSet:
      ok = state_.Admit(a[0], a[2].size(), 0, &why);
      break;
    case StoreOp::kAdd:
    case StoreOp::kBarrier:
      ok = state_.Admit(a[0], 20, 0, &why);  // an int64 in decimal
      break;
    case StoreOp::kAppend: {
      const std::string* cur = state_.Find(a[0]);
      ok = state_.Admit(a[0], (cur ? cur->size() : 0) + a[1].size(), 0, &why);
      break;
    }
    case StoreOp::kWait:
      ok = state_.AdmitWait(a, &why);
      break;
    case StoreOp::kMultiSet: {
      size_t extra = 0;
      for (size_t i = 0; ok && i + 1 < a.size(); i += 2) {
        ok = state_.Admit(a[i], a[i + 1].size(), extra, &why);
        extra += state_.Growth(a[i], a[i + 1].size());
      }
      break;
    }
    default:
      break;
  }
  if (ok && (req.op == StoreOp::kWait || req.op == StoreOp::kBarrier) &&
      state_.NumWaits(c.id) >= limits_.max_waits_per_connection) {
    ok = false;
    why = "more than " + std::to_string(limits_.max_waits_per_connection) + " pending WAITs/BARRIERs";
  }
  if (ok && req.op == StoreOp::kWatchKey && state_.NumWatches(c.id) >= limits_.max_watches_per_connection) {
    ok = false;
    why = "more than " + std::to_string(limits_.max_watches_per_connection) + " watched keys";
  }
  if (!ok) *err = std::string(StoreOpName(req.op)) + " refused: " + why;
  return ok;
}

bool StoreServer::ReplyFits(const Connection& c, size_t bytes, std::string* err) const {
  if (c.pending() + bytes > limits_.max_output) {
    *err = fmt::format("a reply of {} bytes on top of {} unread exceeds the output cap of {}", bytes, c.pending(),
                       limits_.max_output);
    return false;
  }
  size_t total = output_bytes_ - c.counted_out + c.pending();  // this one's share as it is now
  if (total + bytes > limits_.max_output_total) {
    *err = fmt::format("a reply of {} bytes exceeds the store's output budget of {} ({} unread in all)", bytes,
                       limits_.max_output_total, total);
    return false;
  }
  return true;
}

void StoreServer::PushEvent(StoreConnId id, const std::string& bytes) {
  Connection* c = Find(id);
  if (!c || c->doomed) return;
  std::string err;
  if (!ReplyFits(*c, bytes.size(), &err)) {
    Doom(*c, err);
    return;
  }
  c->out += bytes;
  Flush(*c);
  ArmTimers(*c);
}

// Called from inside StoreState callbacks, where the connection (maybe the
// one whose request is running) must stay alive: drop its output, stop
// serving it, and close it from a zero-delay timer.
void StoreServer::Doom(Connection& c, std::string reason) {
  c.doomed = true;
  c.out.clear();
  c.out_pos = 0;
  CountOutput(c);
  Log(LogLevel::kDebug, "store: connection {} doomed: {}", c.id, reason);
  doomed_.push_back(c.id);
  doomed_reasons_.push_back(std::move(reason));
  if (!doom_timer_.armed()) doom_timer_ = loop_.After(Millis(0), [this] { CloseDoomed(); });
}

void StoreServer::CloseDoomed() {
  std::vector<StoreConnId> ids = std::move(doomed_);
  std::vector<std::string> reasons = std::move(doomed_reasons_);
  doomed_.clear();
  doomed_reasons_.clear();
  for (size_t i = 0; i < ids.size(); ++i) Close(ids[i], reasons[i], true);
}

// Deadlines: a half-sent frame (slowloris: idle too long, or not complete
// frame_deadline_ms after its first byte) and unread output above the
// high-water mark (a client that stopped reading). Armed once, re-checked
// when they fire, so a busy connection costs no timer churn.
void StoreServer::ArmTimers(Connection& c) {
  StoreConnId id = c.id;
  if (c.partial() && !c.partial_timer.armed()) {
    Millis first = Millis(std::min(limits_.partial_frame_timeout_ms, limits_.frame_deadline_ms));
    c.partial_timer = loop_.After(first, [this, id] { OnPartialFrameTimer(id); });
  }
  bool stalled = c.pending() >= limits_.output_high_water;
  if (stalled && !c.stall_timer.armed()) {
    c.stall_timer = loop_.After(Millis(limits_.output_stall_timeout_ms), [this, id] { OnStallTimer(id); });
  } else if (!stalled) {
    c.stall_timer.Cancel();
  }
}

void StoreServer::OnPartialFrameTimer(StoreConnId id) {
  Connection* c = Find(id);
  if (!c) return;
  if (!c->partial()) return;
  if (c->pending() >= limits_.output_high_water) {
    ArmTimers(*c);  // we stopped reading it, not the other way round: the stall deadline applies
    return;
  }
  MonoClock::time_point now = loop_.Now();
  auto idle = std::chrono::duration_cast<Millis>(now - c->last_input);
  auto age = std::chrono::duration_cast<Millis>(now - c->frame_start);
  if (idle.count() >= limits_.partial_frame_timeout_ms) {
    Close(id, fmt::format("sent {} bytes of a frame, then nothing for {} ms", c->in.size(), idle.count()), true);
    return;
  }
  if (age.count() >= limits_.frame_deadline_ms) {
    Close(id, fmt::format("sent {} bytes of a frame in {} ms without completing it (frame deadline {} ms)",
                          c->in.size(), age.count(), limits_.frame_deadline_ms),
          true);
    return;
  }
  Millis next = std::min(Millis(limits_.partial_frame_timeout_ms) - idle, Millis(limits_.frame_deadline_ms) - age);
  c->partial_timer = loop_.After(next, [this, id] { OnPartialFrameTimer(id); });
}

void StoreServer::OnStallTimer(StoreConnId id) {
  Connection* c = Find(id);
  if (!c) return;
  if (c->pending() < limits_.output_high_water) return;
  Close(id, fmt::format("left {} bytes of replies unread for {} ms", c->pending(), limits_.output_stall_timeout_ms),
        true);
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
      if (!ReplyFits(c, 8 + (v ? v->size() : 0), err)) return false;
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
      return state_.Append(a[0], a[1], err);
    case StoreOp::kMultiGet: {
      // Sized first: 100 copies of an 8 MiB key in a 1 KB request must not
      // become 800 MiB of output.
      size_t bytes = 0;
      for (std::string_view k : a) {
        const std::string* v = state_.Find(k);
        bytes += 8 + (v ? v->size() : 0);
      }
      if (!ReplyFits(c, bytes, err)) return false;
      for (std::string_view k : a) {
        const std::string* v = state_.Find(k);
        PutString(&out, v ? std::string_view(*v) : std::string_view());
      }
      return true;
    }
    case StoreOp::kMultiSet:
      for (size_t i = 0; i + 1 < a.size(); i += 2) state_.Set(a[i], a[i + 1]);
      return true;
    case StoreOp::kCancelWait:
      state_.CancelWaits(c.id);
      ScheduleSweep();
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
      // Sized first from running totals, then listed a step per loop turn
      // (StepListings): walking 3 million keys at once stalled the loop 2 s, and
      // a reply too big was found only after the walk.
      size_t bytes = 8 + 8 * state_.NumKeys() + state_.key_bytes();
      if (!ReplyFits(c, bytes, err)) return false;
      c.listing = state_.StartListing();
      c.listing_out.clear();
      c.listing_keys = 0;
      listing_conns_.push_back(c.id);
      if (!listing_timer_.armed()) listing_timer_ = loop_.After(Millis(0), [this] { StepListings(); });
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

// One step of every LIST_KEYS under way, then back to the loop (a zero-delay
// timer: ready sockets are served before the next step).
void StoreServer::StepListings() {
  std::vector<StoreConnId> ids = std::move(listing_conns_);
  listing_conns_.clear();
  for (StoreConnId id : ids) {
    Connection* c = Find(id);
    if (!c || !c->listing || c->doomed) continue;
    bool restarted = false;
    bool done = state_.ContinueListing(c->listing, kListingStep, &restarted, [c](std::string_view k) {
      PutString(&c->listing_out, k);
      ++c->listing_keys;
    });
    if (restarted) {
      c->listing_out.clear();
      c->listing_keys = 0;
    }
    if (!done) {
      listing_conns_.push_back(id);
      continue;
    }
    FinishListing(*c);
  }
  if (!listing_conns_.empty() && !listing_timer_.armed())
    listing_timer_ = loop_.After(Millis(0), [this] { StepListings(); });
}

// The keys of dropped WAITs (cancelled, or their connection closed) are
// unlisted a step per loop turn: a connection with 4,096 WAITs of many keys
// each stalled the loop 10-18 s as it closed (issue 19 item 2).
void StoreServer::ScheduleSweep() {
  if (sweep_timer_.armed() || !state_.HasDropped()) return;
  sweep_timer_ = loop_.After(Millis(0), [this] {
    if (state_.SweepDropped(kSweepStep)) ScheduleSweep();
  });
}

void StoreServer::FinishListing(Connection& c) {
  c.listing = 0;
  std::string err;
  // Keys set meanwhile may have made it bigger than when it was admitted.
  if (!ReplyFits(c, 8 + c.listing_out.size(), &err)) {
    std::string().swap(c.listing_out);
    Close(c.id, err, true);
    return;
  }
  PutI64(&c.out, c.listing_keys);
  c.out += c.listing_out;
  std::string().swap(c.listing_out);
  StoreConnId id = c.id;
  Flush(c);
  // The requests that came after it, already buffered.
  Connection* again = Find(id);
  if (!again || !ProcessInput(*again)) return;
  if (again->eof) return Close(id, "closed by peer", false);
  UpdateInterest(*again);
  ArmTimers(*again);
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
    ShrinkIfIdle(&c.out);
  } else if (c.out_pos > (1 << 20)) {
    c.out.erase(0, c.out_pos);
    c.out_pos = 0;
  }
  CountOutput(c);
  UpdateInterest(c);
}

void StoreServer::CountOutput(Connection& c) {
  output_bytes_ = output_bytes_ - c.counted_out + c.pending();
  c.counted_out = c.pending();
}

void StoreServer::UpdateInterest(Connection& c) {
  uint32_t want = 0;
  // Not while a LIST_KEYS is under way: its later requests wait in the socket.
  if (c.pending() < limits_.output_high_water && !c.listing) want |= EPOLLIN;
  if (c.pending() > 0) want |= EPOLLOUT;
  if (c.eof) {
    // Read EOF: OnConnectionEvent closes it next, a Modify would be wasted
    // (one epoll_ctl per connection at 16K ranks). A failed send with
    // nothing left to send: EPOLLIN stays, the error reads as EOF or an
    // error and closes it.
    if (c.pending() == 0) return;
    want = EPOLLOUT;  // no more reads; EPOLLHUP/ERR still arrive
  }
  if (want == c.interest) return;
  c.interest = want;
  std::string err;
  if (!loop_.Modify(c.fd.get(), want, &err)) Log(LogLevel::kWarning, "store: {}", err);
}

void StoreServer::Close(StoreConnId id, const std::string& reason, bool warn) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Connection& c = *it->second;
  if (warn || LogVerbose()) {  // formatted only when it is printed: 16K ranks close at once
    std::string line = fmt::format("store: disconnecting {} (connection {}): {}", c.peer, id, EscapeForLog(reason));
    if (warn) {
      Warn(client_log_, line);
    } else {
      Log(LogLevel::kDebug, "{}", line);
    }
  }
  input_bytes_ -= c.in.size();
  output_bytes_ -= c.counted_out;
  loop_.Remove(c.fd.get());
  if (c.listing) state_.EndListing(c.listing);
  state_.ForgetConnection(id);
  ScheduleSweep();
  conns_.erase(it);
  ResumeAccept();
  if (close_observer_) close_observer_(id, reason);  // a descriptor is free again
}

}  // namespace elastic
