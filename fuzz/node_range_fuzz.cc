// The one node-count parser (common/node_range.h). Invariants: it never
// crashes; an accepted range has 1 <= min <= max <= kMaxNodes and printed back
// parses to the same range; an error names the option and quotes the value
// (fuzz/fuzz_parser.h).
#include <cstdlib>
#include <string>

#include "common/node_range.h"
#include "fuzz/fuzz_parser.h"

using namespace elastic;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto range = fuzz::CheckParser<NodeRange>(text, ParseNodeRange, FormatNodeRange);
  if (range && (range->min < 1 || range->min > range->max || range->max > kMaxNodes)) std::abort();
  return 0;
}
