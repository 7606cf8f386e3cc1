// Log hygiene for servers that face the network: bytes a peer chose are
// escaped and bounded before they reach a log line, and a warning an attacker
// can trigger at will is rate-limited with a count of what was dropped, so a
// flood of bad clients costs a few lines per second, not megabytes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/log_escape.h"

namespace elastic {

// Network bytes in a log line: EscapeForLog (common/log_escape.h).

// At most `burst` lines per `window` for one kind of message. Pure: the
// caller passes the time (tests use a fake clock).
class LogRateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogRateLimiter(size_t burst = 5, std::chrono::milliseconds window = std::chrono::seconds(1))
      : burst_(burst), window_(window) {}

  // True: log this line now, and *dropped (if set) is how many lines were
  // held back since the last one logged (say "... and K more"). False: count
  // it and stay quiet.
  bool Allow(Clock::time_point now, uint64_t* dropped = nullptr);
  uint64_t dropped() const { return dropped_; }

 private:
  size_t burst_;
  std::chrono::milliseconds window_;
  Clock::time_point window_start_{};
  size_t in_window_ = 0;
  uint64_t dropped_ = 0;
};

// " (and K more like it)" for K > 0, else "".
std::string MoreLikeIt(uint64_t dropped);

}  // namespace elastic
