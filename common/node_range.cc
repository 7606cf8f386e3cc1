#include "common/node_range.h"

#include <fmt/format.h>

#include "common/parse.h"

namespace elastic {

bool ParseNodeRange(std::string_view what, std::string_view text, NodeRange* out, std::string* err) {
  long long lo = 0, hi = 0;
  size_t colon = text.find(':');
  bool ok = colon == std::string_view::npos
                ? ParseInt(text, 1, kMaxNodes, &lo) && (hi = lo, true)
                : ParseInt(text.substr(0, colon), 1, kMaxNodes, &lo) &&
                      ParseInt(text.substr(colon + 1), 1, kMaxNodes, &hi) && lo <= hi;
  if (!ok) {
    if (err) {
      *err = fmt::format("{}: '{}' is not N or MIN:MAX (node counts 1..{}, MIN <= MAX)", what, text,
                         kMaxNodes);
    }
    return false;
  }
  *out = NodeRange{static_cast<int>(lo), static_cast<int>(hi)};
  return true;
}

bool ParseNodeMultiple(std::string_view what, std::string_view text, const NodeRange& nodes,
                       int* out, std::string* err) {
  long long k = 0;
  if (!ParseIntNamed(what, text, 1, kMaxNodes, &k, err)) return false;
  if (!CheckNodeMultiple(what, static_cast<int>(k), nodes, err)) return false;
  *out = static_cast<int>(k);
  return true;
}

bool CheckNodeMultiple(std::string_view what, int multiple, const NodeRange& nodes,
                       std::string* err) {
  if (multiple < 1 || multiple > nodes.max) {
    if (err) *err = fmt::format("{}: {} is more than MAX of {}:{} nodes (1..{})", what, multiple,
                                nodes.min, nodes.max, nodes.max);
    return false;
  }
  if (nodes.max / multiple * multiple < nodes.min) {
    if (err) *err = fmt::format("{}: {}:{} nodes holds no multiple of {}", what, nodes.min,
                                nodes.max, multiple);
    return false;
  }
  return true;
}

std::string FormatNodeRange(const NodeRange& range) { return fmt::format("{}:{}", range.min, range.max); }

}  // namespace elastic
