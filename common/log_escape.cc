#include "common/log_escape.h"

#include <fmt/format.h>

namespace elastic {
namespace {

std::string EscapeByte(unsigned char c) {
  if (c == '\\') return "\\\\";
  if (c >= 0x20 && c <= 0x7e) return std::string(1, static_cast<char>(c));
  return fmt::format("\\x{:02x}", c);
}

}  // namespace

std::string EscapeForLog(std::string_view bytes, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(bytes.size(), max_bytes) + 16);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string piece = EscapeByte(static_cast<unsigned char>(bytes[i]));
    if (out.size() + piece.size() > max_bytes) {
      out += fmt::format("...({} bytes)", bytes.size());
      return out;
    }
    out += piece;
  }
  return out;
}

bool CheckProtocolName(std::string_view what, std::string_view text, std::string* err) {
  if (text.empty() || text.size() > kMaxNameBytes) {
    if (err) *err = fmt::format("{} must hold 1 to {} bytes (got {})", what, kMaxNameBytes, text.size());
    return false;
  }
  for (unsigned char c : text) {
    if (c < 0x20 || c > 0x7e) {
      if (err) *err = fmt::format("{} = '{}' holds a non-printable byte", what, EscapeForLog(text));
      return false;
    }
  }
  return true;
}

}  // namespace elastic
