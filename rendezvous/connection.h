// RendezvousConnection: one framed rendezvous connection on the EventLoop. Owns its fd,
// buffers writes (EPOLLOUT only while something is queued) and hands decoded
// messages to its owner. on_close fires at most once: peer closed, I/O error,
// protocol error, or CloseAfterFlush() finished; after it the connection is inert.
// on_close may destroy the RendezvousConnection; on_message may not (it may
// Send, CloseAfterFlush, or post the destruction: the owners do, through
// their Posted handle), so reading stops only when the connection closes.
// Failures found inside a caller's Send() are reported from a later turn
// of the loop (through a Posted handle: they never outlive the connection).
//
// Frame authentication (docs/security.md): once AuthenticateFrames() was called
// (by both sides, right after the handshake), every frame's payload ends in a
// tag, HMAC-SHA256(key of that direction, 8-byte big-endian frame number ||
// payload) in hex; frames are numbered from 0 per direction. A frame whose tag
// does not match (altered, injected, replayed, reordered or dropped before it)
// closes the connection with a protocol error. Message content is not looked
// at: the layer above may change its messages freely.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/event_loop.h"
#include "common/unique_fd.h"
#include "rendezvous/frame.h"
#include "rendezvous/messages.h"

namespace elastic {

struct TrafficCounters {
  uint64_t bytes_in = 0, bytes_out = 0, messages_in = 0, messages_out = 0;
};

class RendezvousConnection {
 public:
  struct Callbacks {
    std::function<void(const Message&)> on_message;
    std::function<void(const std::string& reason)> on_close;
  };

  RendezvousConnection(EventLoop& loop, UniqueFd fd, uint32_t max_frame_bytes, Callbacks callbacks);
  ~RendezvousConnection();
  RendezvousConnection(const RendezvousConnection&) = delete;
  RendezvousConnection& operator=(const RendezvousConnection&) = delete;

  bool Start(std::string* err);
  void Send(std::string_view type, nlohmann::json body = nlohmann::json::object());
  void SendFrame(const std::string& frame);
  // Frames whose header has not arrived yet are held to this limit.
  void SetMaxFrameBytes(uint32_t max_frame_bytes) { reader_.set_max_frame_bytes(max_frame_bytes); }
  // From now on frames are sent with a tag under keys.send and must arrive
  // with one under keys.receive (hex keys from SessionKey(), auth.h).
  struct FrameKeys {
    std::string send, receive;
  };
  void AuthenticateFrames(FrameKeys keys);
  // Stops reading and closes once the queue is written.
  void CloseAfterFlush();
  bool open() const { return fd_.valid(); }
  bool flushed() const { return out_.size() == out_pos_; }
  int fd() const { return fd_.get(); }
  const TrafficCounters& counters() const { return counters_; }

 private:
  void OnEvents(uint32_t events);
  bool ReadAvailable(std::string* reason);
  bool WriteQueued(std::string* reason);
  void UpdateInterest();
  void Fail(const std::string& reason);
  bool CheckTag(std::string* payload, std::string* err);

  std::optional<FrameKeys> keys_;
  uint64_t sent_frames_ = 0, received_frames_ = 0;  // numbered once keys_ are set

  EventLoop& loop_;
  UniqueFd fd_;
  FrameReader reader_;
  Callbacks callbacks_;
  std::string out_;
  size_t out_pos_ = 0;
  bool closing_ = false;
  bool want_write_ = false;
  TrafficCounters counters_;
  Posted deferred_;  // failures reported from the loop, dropped with the connection
};

}  // namespace elastic
