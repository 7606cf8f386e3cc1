// libFuzzer target for the store's frame parser (store/store_protocol.h).
// The input is fed as a stream of frames in chunks whose sizes come from the
// input itself, exactly as a connection's buffer grows, and the parser's
// contract is checked at every step:
// - kRequest consumes at least one byte and no more than is buffered, and
//   every argument view lies inside the buffer;
// - kNeedMore asks for more than is buffered, and is stable: given exactly
//   what it asked for (or more) it makes progress or fails, never regresses;
// - the dialect, once decided, never changes.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "store/store_protocol.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace elastic;
  if (size < 2) return 0;
  // Small limits so the limit paths are reachable with small inputs.
  StoreLimits limits;
  limits.max_key = 64;
  limits.max_value = 256;
  limits.max_multi_keys = 16;
  StoreDialect dialect = static_cast<StoreDialect>(data[0] % 3);
  size_t chunk = 1 + data[1] % 17;
  std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);

  std::string buf;
  size_t fed = 0;
  StoreRequest req;
  while (true) {
    ParseResult r = ParseStoreRequest(buf, limits, &dialect, &req);
    if (r.status == ParseStatus::kError) {
      Check(!r.error.empty());
      return 0;
    }
    if (r.status == ParseStatus::kRequest) {
      Check(dialect != StoreDialect::kUnknown);
      Check(r.consumed >= 1 && r.consumed <= buf.size());
      for (std::string_view a : req.args) {
        Check(a.data() >= buf.data() && a.data() + a.size() <= buf.data() + r.consumed);
      }
      buf.erase(0, r.consumed);
      continue;
    }
    Check(r.need > buf.size());
    if (fed == input.size()) return 0;
    size_t n = std::min(chunk, input.size() - fed);
    buf.append(input.substr(fed, n));
    fed += n;
  }
}
