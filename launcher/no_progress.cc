#include "launcher/no_progress.h"

#include <charconv>

namespace elastic {

std::optional<int64_t> ParseProgress(std::string_view text) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  if (text.empty() || text.size() > 19) return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

bool NoteRoundProgress(int limit, std::optional<int64_t> now, NoProgressState* state) {
  if (now && (!state->best || *now > *state->best)) {
    state->best = now;
    state->stalled = 0;
    return false;
  }
  ++state->stalled;
  return limit > 0 && state->stalled >= limit;
}

}  // namespace elastic
