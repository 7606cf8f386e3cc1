#include "common/log_limit.h"

#include <fmt/format.h>

namespace elastic {

bool LogRateLimiter::Allow(Clock::time_point now, uint64_t* dropped) {
  if (in_window_ == 0 || now - window_start_ >= window_) {
    window_start_ = now;
    in_window_ = 0;
  }
  if (in_window_ >= burst_) {
    ++dropped_;
    return false;
  }
  ++in_window_;
  if (dropped) *dropped = dropped_;
  dropped_ = 0;
  return true;
}

std::string MoreLikeIt(uint64_t dropped) {
  return dropped == 0 ? std::string() : fmt::format(" (and {} more like it)", dropped);
}

}  // namespace elastic
