#include "rendezvous/connection.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "rendezvous/auth.h"

namespace elastic {

RendezvousConnection::RendezvousConnection(EventLoop& loop, UniqueFd fd, uint32_t max_frame_bytes, Callbacks callbacks)
    : loop_(loop), fd_(std::move(fd)), reader_(max_frame_bytes), callbacks_(std::move(callbacks)),
      deferred_(loop) {}

RendezvousConnection::~RendezvousConnection() {
  if (fd_) loop_.Remove(fd_.get());
}

bool RendezvousConnection::Start(std::string* err) {
  return loop_.Add(fd_.get(), EPOLLIN, [this](uint32_t ev) { OnEvents(ev); }, err);
}

namespace {

constexpr size_t kTagChars = 64;  // HMAC-SHA256 in hex

std::string FrameNumber(uint64_t n) {
  std::string b(8, '\0');
  for (int i = 7; i >= 0; --i, n >>= 8) b[i] = static_cast<char>(n & 0xff);
  return b;
}

bool Tag(const std::string& key, uint64_t number, std::string_view payload, std::string* tag,
         std::string* err) {
  std::string data = FrameNumber(number);
  data.append(payload);
  return HmacSha256Hex(key, data, tag, err);
}

}  // namespace

void RendezvousConnection::AuthenticateFrames(FrameKeys keys) {
  keys_ = std::move(keys);
  sent_frames_ = 0;
  received_frames_ = 0;
}

// Takes the tag off *payload if it is that of the next frame number.
bool RendezvousConnection::CheckTag(std::string* payload, std::string* err) {
  uint64_t number = received_frames_++;
  if (payload->size() < kTagChars) {
    *err = fmt::format("frame {} after the handshake has no authentication tag", number);
    return false;
  }
  std::string got = payload->substr(payload->size() - kTagChars);
  payload->resize(payload->size() - kTagChars);
  std::string want, why;
  if (!Tag(keys_->receive, number, *payload, &want, &why)) {
    *err = fmt::format("cannot check frame {}: {}", number, why);
    return false;
  }
  if (!ConstantTimeEquals(got, want)) {
    *err = fmt::format("frame {} after the handshake failed authentication (altered, injected, "
                       "replayed or out of order)", number);
    return false;
  }
  return true;
}

void RendezvousConnection::SendFrame(const std::string& encoded) {
  if (!fd_ || closing_) return;
  std::string tagged;
  if (keys_) {
    std::string tag, err;
    std::string_view payload = std::string_view(encoded).substr(4);
    if (!Tag(keys_->send, sent_frames_++, payload, &tag, &err)) {
      deferred_.Post([this, err] { Fail("cannot authenticate a frame: " + err); });
      return;
    }
    tagged = EncodeFrame(std::string(payload) + tag);
  }
  const std::string& frame = keys_ ? tagged : encoded;
  out_.append(frame);
  counters_.bytes_out += frame.size();
  counters_.messages_out += 1;
  std::string reason;
  if (!WriteQueued(&reason)) {
    // Report the failure from the loop, not from inside the caller's Send().
    deferred_.Post([this, reason] { Fail(reason); });
    return;
  }
  UpdateInterest();
}

void RendezvousConnection::Send(std::string_view type, nlohmann::json body) {
  SendFrame(EncodeMessage(type, std::move(body)));
}

void RendezvousConnection::CloseAfterFlush() {
  if (!fd_) return;
  closing_ = true;
  if (flushed()) {
    deferred_.Post([this] { Fail("closed"); });
    return;
  }
  UpdateInterest();
}

void RendezvousConnection::OnEvents(uint32_t events) {
  std::string reason;
  if (events & EPOLLOUT) {
    if (!WriteQueued(&reason)) return Fail(reason);
    if (closing_ && flushed()) return Fail("closed");
    UpdateInterest();
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    if (!ReadAvailable(&reason)) {
      if (fd_) Fail(reason);
      return;
    }
  }
}

bool RendezvousConnection::ReadAvailable(std::string* reason) {
  char buf[65536];
  while (true) {
    ssize_t n = recv(fd_.get(), buf, sizeof(buf), 0);
    if (n == 0) return *reason = "connection closed by peer", false;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      return *reason = fmt::format("read: {}", std::strerror(errno)), false;
    }
    counters_.bytes_in += static_cast<uint64_t>(n);
    if (closing_) continue;  // draining: nothing more is processed
    reader_.Feed(std::string_view(buf, static_cast<size_t>(n)));
    std::string payload, err;
    while (true) {
      auto r = reader_.Next(&payload, &err);
      if (r == FrameReader::Result::kNeedMore) break;
      if (r == FrameReader::Result::kError) return *reason = "protocol error: " + err, false;
      if (keys_ && !CheckTag(&payload, &err)) return *reason = "protocol error: " + err, false;
      Message msg;
      if (!DecodeMessage(payload, &msg, &err)) return *reason = "protocol error: " + err, false;
      counters_.messages_in += 1;
      auto on_message = callbacks_.on_message;  // the callback may replace callbacks_
      if (on_message) on_message(msg);          // but never destroys *this (connection.h)
      if (!fd_ || closing_) return true;
    }
    // A short read drained the socket: skip the recv that would only say EAGAIN
    // (epoll is level-triggered and reports anything that arrives later).
    if (static_cast<size_t>(n) < sizeof(buf)) return true;
  }
}

bool RendezvousConnection::WriteQueued(std::string* reason) {
  while (out_pos_ < out_.size()) {
    ssize_t n = send(fd_.get(), out_.data() + out_pos_, out_.size() - out_pos_, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      return *reason = fmt::format("write: {}", std::strerror(errno)), false;
    }
    out_pos_ += static_cast<size_t>(n);
  }
  out_.clear();
  out_pos_ = 0;
  return true;
}

void RendezvousConnection::UpdateInterest() {
  bool want = !flushed();
  if (want == want_write_ || !fd_) return;
  want_write_ = want;
  loop_.Modify(fd_.get(), EPOLLIN | (want ? EPOLLOUT : 0u), nullptr);
}

void RendezvousConnection::Fail(const std::string& reason) {
  if (!fd_) return;
  loop_.Remove(fd_.get());
  fd_.Reset();
  auto cb = std::move(callbacks_.on_close);
  callbacks_ = {};
  if (cb) cb(reason);
}

}  // namespace elastic
