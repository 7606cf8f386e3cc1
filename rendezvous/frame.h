// Framing of the agent <-> host rendezvous protocol: uint32 big-endian payload
// length, then the payload (one JSON message). A reader that refuses frames over
// a limit as soon as their header arrives, so a peer cannot make us buffer more.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace elastic {

std::string EncodeFrame(std::string_view payload);

class FrameReader {
 public:
  enum class Result { kFrame, kNeedMore, kError };

  explicit FrameReader(uint32_t max_frame_bytes) : max_(max_frame_bytes) {}

  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  // The limit for frames whose header is not read yet (raised once a peer authenticated).
  void set_max_frame_bytes(uint32_t max_frame_bytes) { max_ = max_frame_bytes; }
  // Takes the next complete frame out of the buffer. kError is sticky.
  Result Next(std::string* payload, std::string* err);
  size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  uint32_t max_;
  std::string buffer_;
  size_t consumed_ = 0;
  bool failed_ = false;
};

}  // namespace elastic
