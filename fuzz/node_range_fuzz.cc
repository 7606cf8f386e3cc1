// The one node-count parser (common/node_range.h). Invariants: it never
// crashes; an accepted range has 1 <= min <= max <= kMaxNodes and printed back
// parses to the same range; an error names the option and quotes the value.
#include <cstdlib>
#include <string>

#include "common/node_range.h"

using namespace elastic;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  NodeRange range;
  std::string err;
  if (!ParseNodeRange("OPT", text, &range, &err)) {
    if (err.rfind("OPT: '" + text + "'", 0) != 0) std::abort();
    return 0;
  }
  if (range.min < 1 || range.min > range.max || range.max > kMaxNodes) std::abort();
  NodeRange again;
  if (!ParseNodeRange("OPT", FormatNodeRange(range), &again, &err) || !(again == range)) std::abort();
  return 0;
}
