// A node count as users write it (--nnodes, --elastic=..., PET_NNODES), parsed
// once into a type: "N" (exactly N nodes) or "MIN:MAX", 1 <= MIN <= MAX <=
// kMaxNodes.
#pragma once

#include <string>
#include <string_view>

namespace elastic {

inline constexpr int kMaxNodes = 100000;

struct NodeRange {
  int min = 1;
  int max = 1;
  bool operator==(const NodeRange&) const = default;
};

// Parses `text`, the value of `what` (named in the error with the value).
bool ParseNodeRange(std::string_view what, std::string_view text, NodeRange* out, std::string* err);

// --node-multiple K (--elastic-node-multiple, PET_NODE_MULTIPLE): an integer
// 1..MAX such that MIN..MAX holds a multiple of K (rounds form only with a
// multiple of K nodes). The error names the option, K and the range.
bool ParseNodeMultiple(std::string_view what, std::string_view text, const NodeRange& nodes,
                       int* out, std::string* err);
bool CheckNodeMultiple(std::string_view what, int multiple, const NodeRange& nodes,
                       std::string* err);

// "MIN:MAX" (also for MIN == MAX): the text ParseNodeRange reads back.
std::string FormatNodeRange(const NodeRange& range);

}  // namespace elastic
