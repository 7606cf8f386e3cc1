#include "rendezvous/frame.h"

#include <fmt/format.h>

namespace elastic {

std::string EncodeFrame(std::string_view payload) {
  uint32_t n = static_cast<uint32_t>(payload.size());
  std::string out;
  out.reserve(4 + payload.size());
  out.push_back(static_cast<char>(n >> 24));
  out.push_back(static_cast<char>(n >> 16));
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n));
  out.append(payload);
  return out;
}

FrameReader::Result FrameReader::Next(std::string* payload, std::string* err) {
  if (failed_) {
    if (err) *err = "stream already failed";
    return Result::kError;
  }
  if (buffered() < 4) return Result::kNeedMore;
  const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + consumed_);
  uint32_t n = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
  if (n > max_) {
    failed_ = true;
    if (err) *err = fmt::format("frame of {} bytes exceeds the limit of {}", n, max_);
    return Result::kError;
  }
  if (buffered() < 4 + size_t{n}) return Result::kNeedMore;
  payload->assign(buffer_, consumed_ + 4, n);
  consumed_ += 4 + size_t{n};
  if (consumed_ > 4096 && consumed_ * 2 > buffer_.size()) {  // compact now and then
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  return Result::kFrame;
}

}  // namespace elastic
