#include "common/log_limit.h"

#include <fmt/format.h>

namespace elastic {

std::string EscapeForLog(std::string_view s, size_t max_bytes) {
  std::string out;
  size_t n = std::min(s.size(), max_bytes);
  out.reserve(n + 16);
  for (size_t i = 0; i < n; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (n < s.size()) out += fmt::format("...({} bytes)", s.size());
  return out;
}

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
